"""benchmarks/laptop_offsets.py: an offset that only a sentence's laptop score applies."""

from __future__ import annotations

import numpy as np

from benchmarks import laptop_offsets


def test_the_offset_moves_laptop_sentences_only() -> None:
    """Two sources; the model puts class 2 below class 1 in both. The offset scaled by the
    laptop score fixes the laptop source (score 1) and leaves the other (score 0) as it is."""
    gold = np.tile([0, 1, 2], 100)
    probs = np.where(gold[:, None] == np.arange(3), 0.8, 0.1)
    probs[gold == 2] = [0.2, 0.42, 0.38]
    groups = np.repeat(["lap", "rest"], 150)
    lap = (groups == "lap").astype(float)
    none = laptop_offsets.source_mean_f1(probs, gold, lap, groups, np.zeros(3))
    lifted = laptop_offsets.source_mean_f1(probs, gold, lap, groups, np.array([0.0, 0.0, 0.2]))
    rest_only = laptop_offsets.source_mean_f1(
        probs[groups == "rest"], gold[groups == "rest"], lap[groups == "rest"],
        groups[groups == "rest"], np.array([0.0, 0.0, 0.2]),
    )  # fmt: skip
    assert lifted > none
    assert rest_only == laptop_offsets.source_mean_f1(
        probs[groups == "rest"], gold[groups == "rest"], lap[groups == "rest"],
        groups[groups == "rest"], np.zeros(3),
    )  # fmt: skip
    assert lifted == (100.0 + rest_only) / 2
