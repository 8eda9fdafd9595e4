"""The negation / contrast slice: well-formed, and scored per kind."""

from __future__ import annotations

import json
from pathlib import Path

from absa.training.records import Example
from benchmarks.robustness.negation import NEGATION, negation_slice

KINDS = {
    "negated_negative": {"positive"},
    "negated_positive": {"negative"},
    "negation_neutral": {"neutral"},
    "contrast": {"negative", "positive"},
    "contrast_negation": {"negative", "positive"},
}


def test_the_slice_is_well_formed() -> None:
    rows = [json.loads(line) for line in NEGATION.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 60
    for r in rows:
        assert r["text"][r["start"] : r["end"]] == r["aspect"], r
        assert r["label"] in KINDS[r["kind"]], r
    # every contrast sentence asks for both of its aspects, with opposite labels
    for kind in ("contrast", "contrast_negation"):
        by_text: dict[str, set[str]] = {}
        for r in rows:
            if r["kind"] == kind:
                by_text.setdefault(r["text"], set()).add(r["label"])
        assert all(labels == {"negative", "positive"} for labels in by_text.values())


def test_scored_per_kind() -> None:
    def always_negative(model_dir: Path, examples: list[Example]) -> list[str]:
        return ["negative"] * len(examples)

    r = negation_slice(Path("unused"), always_negative)
    by_kind = {k: v["accuracy"] for k, v in r["by_kind"].items()}
    assert by_kind["negated_positive"] == 1.0
    assert by_kind["negated_negative"] == 0.0
    assert by_kind["contrast"] == 0.5
    assert len(r["wrong"]) == round(r["n"] * (1 - r["accuracy"]))
    assert {w["gold"] for w in r["wrong"]} == {"positive", "neutral"}
