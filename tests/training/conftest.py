"""Fixtures of the training tests: a teacher that lies."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from absa.training.evaluate import evaluate
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_preset

FLIP = {"positive": "negative", "negative": "positive", "neutral": "neutral"}


@pytest.fixture(scope="session")
def liar(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    """A teacher trained on flipped labels: it calls positive what is negative. Read-only."""
    examples = synthetic_examples(12, seed=0)
    flipped = [replace(e, label=FLIP[e.label]) for e in examples]
    run_dir = tmp_path_factory.mktemp("teacher") / "liar"
    fit(flipped, flipped, tiny_preset("atae-lstm", small_glove), run_dir, progress=False)
    assert evaluate(run_dir, flipped)["accuracy"] >= 0.9
    return run_dir
