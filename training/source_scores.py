"""Dev accuracy per training file, and their mean: a dev split held out of a union of data
sets is mostly its largest set (MAMS is half of it), while the targets weigh each test set
alike. ``TrainConfig.select_on = "source_mean"`` keeps the epoch whose mean over the files
is best; every run records the per-file accuracies of each epoch in its history."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from absa.training.provenance import portable
from absa.training.records import Labelled
from absa.training.substitute import source_file


def source_names(examples: Sequence[Labelled]) -> list[str]:
    """Each example's source file (``path:line`` less the line, as records name paths:
    ``portable``; ``other`` with no source)."""
    files = [source_file(e.source)[0] for e in examples]
    named = {f: portable(f) if f else "other" for f in set(files)}
    return [named[f] for f in files]


def portable_names(scores: dict[str, float]) -> dict[str, float]:
    """Per-source scores keyed as records name paths (runs of ca3b96a keyed them by the
    paths as read, absolute where the data was given so)."""
    return {portable(k) if k != "other" else k: v for k, v in scores.items()}


def by_source(gold: Sequence[int], pred: Sequence[int], names: Sequence[str]) -> dict[str, float]:
    """Accuracy per source name, in name order."""
    right = np.asarray(gold) == np.asarray(pred)
    where = np.asarray(names)
    return {n: float(right[where == n].mean()) for n in sorted(set(names))}


def source_mean(scores: dict[str, float]) -> float:
    """The plain mean of the per-source accuracies: each source weighs alike."""
    return float(np.mean(list(scores.values()))) if scores else 0.0
