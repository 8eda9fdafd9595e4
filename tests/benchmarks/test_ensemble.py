"""benchmarks/ensemble.py: the scores of averaged probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from absa.training.exporting import export_run
from benchmarks.ensemble import members, row, scores
from tests.helpers import synthetic_examples

LABELS = ["negative", "neutral", "positive"]


def test_averaging_can_right_what_each_member_gets_wrong() -> None:
    gold = ["positive", "negative"]
    a = np.array([[0.0, 0.2, 0.8], [0.3, 0.6, 0.1]])  # right (sure), wrong (unsure)
    b = np.array([[0.1, 0.6, 0.3], [0.7, 0.2, 0.1]])  # wrong (unsure), right (sure)
    assert scores(a, gold, LABELS)["accuracy"] == 50.0
    assert scores(b, gold, LABELS)["accuracy"] == 50.0
    mean = scores((a + b) / 2, gold, LABELS)  # [.05, .4, .55], [.5, .4, .1]
    assert mean["accuracy"] == 100.0
    assert mean["macro_f1"] == 100.0  # over the labels the gold holds: neutral has none


def test_runs_and_artifacts_are_members_alike(tiny_run: Path, tmp_path: Path) -> None:
    """A training run (a teacher) and its export answer alike; the mean of the two is theirs."""
    export_run(tiny_run, tmp_path / "art", calibrate=False)
    models, labels = members([tmp_path / "art"], [tiny_run])
    examples = synthetic_examples(6, seed=2)
    art, run = (m(examples) for m in models)
    np.testing.assert_allclose(art, run, atol=1e-4)
    truth = [labels.index(e.label) for e in examples]
    assert np.mean(run.argmax(1) == truth) >= 0.5  # columns in the labels' order
    got = row(models, examples, labels)
    assert got["mean"] == scores((art + run) / 2, [e.label for e in examples], labels)
    assert len(got["members"]) == 2
