"""The audit of an extractor's spurious spans (benchmarks/extraction_audit.py): which spans
are spurious, and what the judgements of a sample say the scores would be."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.extraction_audit import spurious, summary
from tests.helpers import extraction_sentences


def test_spurious_spans_are_the_predictions_that_touch_no_gold_span(
    extractor_artifact: Path,
) -> None:
    sentences = [s for s in extraction_sentences() if s.spans]
    # the extractor finds every training span: drop each sentence's second gold span, so
    # the spans found there become spurious and the first ones stay right
    cut = [replace(s, spans=s.spans[:1]) for s in sentences]
    spans, scores = spurious(extractor_artifact, cut)
    assert scores["true_positives"] == len(cut)
    assert len(spans) == scores["predicted"] - scores["true_positives"] > 0
    for s in spans:
        sent = next(x for x in cut if x.text == s["text"])
        gold = sent.spans[0]
        assert s["span"] == s["text"][s["start"] : s["start"] + len(s["span"])]
        assert s["start"] + len(s["span"]) <= gold.start or s["start"] >= gold.end
        assert s["gold"] == [sent.text[gold.start : gold.end]] and s["judgement"] is None


def audit(judgements: list[str | None]) -> dict:
    sample = [{"judgement": j} for j in judgements]
    scores = {"precision": 60.0, "recall": 75.0, "f1": 66.67, "true_positives": 60,
              "predicted": 100, "gold": 80}  # fmt: skip
    return {"scores": scores, "spurious": 30, "sample": sample}


def test_summary_extrapolates_the_judged_share_of_aspects() -> None:
    rep = summary(audit(["aspect-opinion", "aspect-mention", "not-aspect", "not-aspect"]))
    assert rep["counts"] == {"aspect-opinion": 1, "aspect-mention": 1, "not-aspect": 2}
    assert rep["aspect_share"] == 0.5
    # 15 of the 30 spurious spans become right: P 75/100, R 75/95
    assert rep["if_marked"]["precision"] == pytest.approx(75.0)
    assert rep["if_marked"]["recall"] == pytest.approx(100 * 75 / 95)
    assert summary(audit(["not-aspect"]))["if_marked"]["precision"] == pytest.approx(60.0)


def test_summary_refuses_an_unjudged_or_unknown_judgement() -> None:
    with pytest.raises(ValueError, match="not-aspect"):
        summary(audit(["aspect-opinion", None]))
    with pytest.raises(ValueError, match="'maybe'"):
        summary(audit(["maybe", None]))


def test_the_extraction_report_skips_the_audit_and_threshold_files() -> None:
    from benchmarks.extraction import OUT, report

    setups = [f for f in OUT.glob("*.json") if "__s" in f.name]
    assert len(list(OUT.glob("*.json"))) > len(setups) > 0  # audit / threshold files there
    table = report().split("\n\n")[0].splitlines()
    assert len(table) == 2 + len(setups)
