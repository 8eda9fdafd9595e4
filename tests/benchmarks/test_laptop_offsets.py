"""benchmarks/laptop_offsets.py: an offset that only a sentence's laptop score applies
(class_offsets.mean_f1 with a per-row scale)."""

from __future__ import annotations

import numpy as np

from benchmarks.class_offsets import GRID, best_offset, mean_f1


def test_the_offset_moves_laptop_sentences_only() -> None:
    """Two sources; the model puts class 2 below class 1 in both. The offset scaled by the
    laptop score fixes the laptop source (score 1) and leaves the other (score 0) as it is."""
    gold = np.tile([0, 1, 2], 100)
    probs = np.where(gold[:, None] == np.arange(3), 0.8, 0.1)
    probs[gold == 2] = [0.2, 0.42, 0.38]
    groups = np.repeat(["lap", "rest"], 150)
    lap = (groups == "lap").astype(float)
    rest = groups == "rest"
    none = mean_f1(probs, gold, groups, np.zeros(3), lap)
    rest_only = mean_f1(probs[rest], gold[rest], groups[rest], np.zeros(3))
    lifted = mean_f1(probs, gold, groups, np.array([0.0, 0.0, 0.2]), lap)
    assert lifted > none
    assert lifted == (100.0 + rest_only) / 2  # the laptop part fixed, the other untouched
    offset, f1 = best_offset(probs, gold, groups, 1, GRID, scale=lap)
    assert offset[2] - offset[1] > np.log(0.42 / 0.38) and f1 == lifted
