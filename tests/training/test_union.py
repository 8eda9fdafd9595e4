"""Combining training files: test sentences out (counted once), each sentence from one file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from absa.training.readers import read_examples
from absa.training.union import combine


def _read(tmp_path: Path, name: str, records: list[tuple[str, str, str]]) -> list:
    path = tmp_path / name
    path.write_text("".join(f"{s}\n{t}\n{lab}\n" for s, t, lab in records), encoding="utf-8")
    return read_examples(path).examples


@pytest.fixture
def files(tmp_path: Path) -> dict[str, list]:
    return {
        # an original set, as the XML-derived files write it ("didn't")
        "rest": _read(
            tmp_path,
            "rest.seg",
            [
                ("The $T$ didn't arrive .", "soup", "-1"),
                ("Great $T$ here .", "sushi", "1"),
                ("Great $T$ here .", "sushi", "1"),  # an exact duplicate in one file: kept
                ("The $T$ was in the test .", "pasta", "1"),
            ],
        ),
        # a new set: the same sentences in another tokenisation and label spelling
        "new": _read(
            tmp_path,
            "new.raw",
            [
                ("the $T$ did n't arrive .", "soup", "Negative"),  # same example
                ("the soup did n't $T$ .", "arrive", "Neutral"),  # same sentence, new aspect
                ("great $T$ here .", "sushi", "Neutral"),  # same aspect, another label
                ("the $T$ was in the test .", "pasta", "Positive"),  # a test sentence
                ("A $T$ nobody else wrote .", "tv", "Positive"),
            ],
        ),
        "test": _read(
            tmp_path,
            "test.seg",
            [("The $T$ was in the test .", "pasta", "1"), ("Fresh $T$ .", "bread", "1")],
        ),
        "test2": _read(tmp_path, "test2.seg", [("the pasta was in the $T$ .", "test", "0")]),
    }


def test_test_sentences_dropped_and_counted_once(files: dict[str, list]) -> None:
    tests = {"test": files["test"], "test2": files["test2"]}
    kept, reports = combine([("rest", files["rest"])], tests)
    assert [e.term for e in kept] == ["soup", "sushi", "sushi"]
    (r,) = reports
    # the pasta sentence is in both test sets: dropped once, listed under each
    assert (r.read, r.test_overlap, r.kept) == (4, 1, 3)
    assert r.test_hits == {"test": 1, "test2": 1}


def test_fresh_file_gives_no_sentence_twice(
    files: dict[str, list], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="absa.training.union")
    order = [("rest", files["rest"]), ("new", files["new"])]
    kept, (rest, new) = combine(order, {"test": files["test"]}, fresh=frozenset({"new"}))
    assert [e.term for e in kept] == ["soup", "sushi", "sushi", "tv"]
    assert rest.kept == 3
    assert (new.read, new.test_overlap, new.seen_before) == (5, 1, 3)
    assert (new.same_example, new.other_label, new.kept) == (1, 1, 1)
    assert "new: 5 read, 1 dropped" in caplog.text


def test_files_not_fresh_keep_shared_sentences(files: dict[str, list]) -> None:
    # the original sets share sentences too (MAMS and Rest14): they stay as shipped
    order = [("rest", files["rest"]), ("new", files["new"])]
    kept, (_, new) = combine(order, {"test": files["test"]})
    assert (new.seen_before, new.kept) == (0, 4)
    assert len(kept) == 7


def test_only_later_files_lose_a_shared_sentence(files: dict[str, list]) -> None:
    # the order decides: with the new set first, it keeps the sentences and rest loses them
    order = [("new", files["new"]), ("rest", files["rest"])]
    kept, (new, rest) = combine(order, {}, fresh=frozenset({"new", "rest"}))
    assert new.kept == 5 and new.seen_before == 0
    assert (rest.seen_before, rest.same_example, rest.other_label, rest.kept) == (4, 2, 2, 0)
    assert len(kept) == 5
