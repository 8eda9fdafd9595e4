"""The negation / contrast slice: hand-written sentences (negation.jsonl beside this file)
whose gold labels were written down and committed before any model ran on them.

Kinds: ``negated_negative`` ("not bad at all" -> positive), ``negated_positive`` ("not
good" -> negative), ``negation_neutral`` (negated, but no opinion: "we did not order the
dessert"), ``contrast`` (two aspects, opposite opinions, each asked), ``contrast_negation``
(the same with a negation inside).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from absa.model.artifact import sha256_file
from absa.training.readers import read_examples
from absa.training.records import Example

NEGATION = Path(__file__).resolve().parent / "negation.jsonl"


def negation_slice(
    model_dir: Path, predict: Callable[[Path, list[Example]], list[str]], path: Path = NEGATION
) -> dict:
    """Accuracy on the negation / contrast slice, overall and per kind, and the misses."""
    examples = read_examples(path).examples
    kinds = [json.loads(line)["kind"] for line in path.read_text(encoding="utf-8").splitlines()]
    predicted = predict(model_dir, examples)
    right = [p == e.label for p, e in zip(predicted, examples, strict=True)]
    by_kind: dict[str, list[bool]] = {}
    for kind, ok in zip(kinds, right, strict=True):
        by_kind.setdefault(kind, []).append(ok)
    return {
        "file": path.name,
        "sha256": sha256_file(path),
        "n": len(examples),
        "accuracy": sum(right) / len(right),
        "by_kind": {k: {"n": len(v), "accuracy": sum(v) / len(v)} for k, v in by_kind.items()},
        "wrong": [
            {"kind": k, "text": e.text, "aspect": e.term, "gold": e.label, "predicted": p}
            for k, e, p, ok in zip(kinds, examples, predicted, right, strict=True)
            if not ok
        ],
    }
