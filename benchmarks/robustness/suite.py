"""Build the robustness suite from a test set and score predictions on it.

A ``Unit`` is one test example (the original) plus its variants, each an ``Example`` with
the label a model that reads the ASKED aspect must predict:

- ``revtgt``: the target's opinion reversed, label flipped;
- ``revnon``: the other clauses' opinions reversed, label unchanged;
- ``adddiff``: a clause about another aspect with the opposite opinion appended, label
  unchanged.

The rules live in ``training.augment`` (one implementation for the suite and for training
augmentation); the suite uses the ``suite`` part of the lexicon, augmentation the disjoint
``augment`` part.

ARS (aspect robustness score, Xing et al. 2020): the fraction of units whose original AND
every variant are predicted correctly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from absa.training.augment import KINDS, Lexicon, group_by_text, variants
from absa.training.records import Example

__all__ = ["KINDS", "Unit", "build_suite", "flatten", "score", "write_jsonl"]

ORIGINAL = "original"


@dataclass(frozen=True)
class Unit:
    original: Example
    variants: dict[str, Example] = field(default_factory=dict)  # kind -> variant


def build_suite(
    examples: Sequence[Example], lexicon: Lexicon, domain: str, seed: int = 0
) -> list[Unit]:
    """One unit per example that at least one rule applies to, in the input order.

    ``domain`` picks the generic aspects ADDDIFF may add ("restaurant" or "laptop");
    examples sharing a text are one sentence, whose other aspect terms ADDDIFF prefers.
    The same examples, lexicon and seed always give the same suite."""
    by_text = group_by_text(examples)
    units = []
    for ex in examples:
        found = variants(
            ex, lexicon, use="suite", domain=domain, seed=seed, siblings=by_text[ex.text]
        )
        if found:
            units.append(Unit(ex, found))
    return units


def flatten(units: Sequence[Unit]) -> list[tuple[int, str, Example]]:
    """Every example of the suite as (unit index, kind, example): the original, then its
    variants in ``KINDS`` order. Predictions passed to ``score`` follow this order."""
    out = []
    for i, u in enumerate(units):
        out.append((i, ORIGINAL, u.original))
        out.extend((i, k, u.variants[k]) for k in KINDS if k in u.variants)
    return out


def score(units: Sequence[Unit], predicted: Sequence[str]) -> dict:
    """Accuracy on the originals and on each variant kind, and ARS.

    ``predicted``: one label per example of ``flatten(units)``, in that order.
    ``ars_by_kind[k]``: the fraction of units with a ``k`` variant whose original and
    ``k`` variant are both right. Accuracies over no examples are ``None``."""
    rows = flatten(units)
    if len(predicted) != len(rows):
        raise ValueError(f"{len(predicted)} predictions for {len(rows)} suite examples")
    kinds = (ORIGINAL, *KINDS)
    right: dict[str, int] = dict.fromkeys(kinds, 0)
    count: dict[str, int] = dict.fromkeys(kinds, 0)
    unit_ok = [True] * len(units)
    per_unit: list[dict[str, bool]] = [{} for _ in units]
    for (i, kind, ex), label in zip(rows, predicted, strict=True):
        ok = label == ex.label
        count[kind] += 1
        right[kind] += ok
        unit_ok[i] &= ok
        per_unit[i][kind] = ok
    ars_by_kind = {}
    for k in KINDS:
        have = [p for p in per_unit if k in p]
        ars_by_kind[k] = _ratio(sum(p[ORIGINAL] and p[k] for p in have), len(have))
    return {
        "n_units": len(units),
        "counts": count,
        "accuracy": {k: _ratio(right[k], count[k]) for k in kinds},
        "ars": _ratio(sum(unit_ok), len(units)),
        "ars_by_kind": ars_by_kind,
    }


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def write_jsonl(path: Path, units: Sequence[Unit], predicted: Sequence[str] | None = None) -> None:
    """The suite, one example a line (unit, kind, text, aspect, start, end, label, source,
    and the predicted label when given)."""
    rows = flatten(units)
    with Path(path).open("w", encoding="utf-8") as f:
        for n, (i, kind, ex) in enumerate(rows):
            row = {
                "unit": i,
                "kind": kind,
                "text": ex.text,
                "aspect": ex.term,
                "start": ex.start,
                "end": ex.end,
                "label": ex.label,
                "source": ex.source,
            }
            if predicted is not None:
                row["predicted"] = predicted[n]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
