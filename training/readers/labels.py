"""Labels as the data files write them: ``negative/neutral/positive`` in any case, or
``-1/0/1``; ``conflict`` (SemEval's fourth polarity) is dropped by the readers, not a label."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from absa.model.aspects import whole_offset
from absa.model.text import LABELS
from absa.training.records import Example, Labelled

CONFLICT = "conflict"
_NUMERIC_LABELS = {"-1": "negative", "0": "neutral", "1": "positive", "+1": "positive"}


def parse_label(value: object) -> str:
    """Normalise a polarity to one of ``LABELS``.

    Accepts ``negative/neutral/positive`` in any case and ``-1/0/1`` as ints or strings.
    Raises ``ValueError`` for anything else, ``conflict`` included.
    """
    if isinstance(value, float) and value.is_integer():  # pandas' float column: 1.0
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"unknown label {value!r} (expected one of {'/'.join(LABELS)} or -1/0/1)")
    key = str(value).strip().lower()
    if key in LABELS:
        return key
    if key in _NUMERIC_LABELS:
        return _NUMERIC_LABELS[key]
    whole = whole_offset(key)  # "1.0", as pandas writes a float column to CSV
    if whole is not None and str(whole) in _NUMERIC_LABELS:
        return _NUMERIC_LABELS[str(whole)]
    if key == CONFLICT:
        raise ValueError(f"{CONFLICT!r} is not a supported label (only {'/'.join(LABELS)})")
    raise ValueError(f"unknown label {value!r} (expected one of {'/'.join(LABELS)} or -1/0/1)")


def label_counts(examples: Iterable[Example]) -> dict[str, int]:
    """How many examples carry each label, every label in ``LABELS`` order (zeros included)."""
    counts = dict.fromkeys(LABELS, 0)
    for ex in examples:
        counts[ex.label] += 1
    return counts


def missing_labels(
    examples: Iterable[Labelled], labels: Sequence[str]
) -> tuple[list[str], dict[str, int]]:
    """The model's ``labels`` that ``examples`` hold no example of, and how many each label
    has (``labels`` first, zeros included; any other label after them)."""
    counts = dict.fromkeys(labels, 0)
    for ex in examples:
        counts[ex.label] = counts.get(ex.label, 0) + 1
    return [lab for lab in labels if not counts[lab]], counts
