"""benchmarks/teacher_agreement.py: what a teacher's targets say beyond the label."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.teacher_agreement import agreement

LABELS = ["negative", "neutral", "positive"]


def test_agreement_probability_of_the_label_and_top_probability() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1], [0.2, 0.2, 0.6]])
    gold = np.array([0, 2, 1, 2])  # the third is wrong
    a = agreement(probs, gold, LABELS)
    assert a["agree_pct"] == 75.0
    assert a["p_gold"] == pytest.approx((0.7 + 0.6 + 0.4 + 0.6) / 4)
    assert a["p_max"] == pytest.approx((0.7 + 0.6 + 0.5 + 0.6) / 4)
    assert a["recall_pct"] == {"negative": 100.0, "neutral": 0.0, "positive": 100.0}
    assert a["label_share_pct"] == {"negative": 25.0, "neutral": 25.0, "positive": 50.0}
    assert a["called_share_pct"] == {"negative": 50.0, "neutral": 0.0, "positive": 50.0}


def test_recall_leaves_out_a_label_no_item_has() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1]])
    a = agreement(probs, np.array([0, 2]), LABELS)
    assert a["recall_pct"] == {"negative": 100.0, "positive": 0.0}
