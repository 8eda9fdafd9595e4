"""benchmarks/ensemble.py: the scores of averaged probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.ensemble import scores

LABELS = ["negative", "neutral", "positive"]


def test_averaging_can_right_what_each_member_gets_wrong() -> None:
    gold = ["positive", "negative"]
    a = np.array([[0.0, 0.2, 0.8], [0.3, 0.6, 0.1]])  # right (sure), wrong (unsure)
    b = np.array([[0.1, 0.6, 0.3], [0.7, 0.2, 0.1]])  # wrong (unsure), right (sure)
    assert scores(a, gold, LABELS)["accuracy"] == 50.0
    assert scores(b, gold, LABELS)["accuracy"] == 50.0
    mean = scores((a + b) / 2, gold, LABELS)  # [.05, .4, .55], [.5, .4, .1]
    assert mean["accuracy"] == 100.0
    assert mean["macro_f1"] == pytest.approx(200 / 3)  # neutral: no support, F1 0
