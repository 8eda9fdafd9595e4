"""benchmarks/extraction.py --errors: a sentence's span errors by kind."""

from __future__ import annotations

from benchmarks.extraction import span_errors


def test_each_wrong_span_is_counted_once_by_kind() -> None:
    gold = {(0, 9), (20, 25), (40, 45), (60, 64), (80, 84)}
    pred = {
        (4, 9),  # inside gold (0, 9): shorter
        (18, 25),  # holds gold (20, 25): longer
        (43, 50),  # crosses gold (40, 45)
        (60, 64),  # right
        (70, 74),  # overlaps nothing: spurious
    }
    kinds = span_errors(gold, pred)
    assert kinds["fp_boundary"] == 3
    assert (kinds["fp_boundary_shorter"], kinds["fp_boundary_longer"]) == (1, 1)
    assert kinds["fp_boundary_crossing"] == 1
    assert kinds["fp_spurious"] == 1
    assert kinds["fn_boundary"] == 3  # the three gold spans met with other boundaries
    assert kinds["fn_missed"] == 1  # (80, 84)


def test_a_right_sentence_has_no_errors() -> None:
    spans = {(0, 4), (10, 15)}
    assert sum(span_errors(spans, set(spans)).values()) == 0
