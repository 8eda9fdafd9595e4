"""benchmarks/teacher_score.py: a teacher's scores put in the cache ahead of its students."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from absa.training.distill import teacher_targets
from benchmarks import teacher_score
from tests.helpers import synthetic_examples, write_3line


def test_labelled_files_are_scored_into_the_cache(
    tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(cache))
    examples = synthetic_examples(6, seed=4)
    data = write_3line(tmp_path / "train.raw", examples)
    monkeypatch.setattr(
        sys, "argv", ["teacher_score", "--teacher", str(tiny_run), "--data", str(data)]
    )
    assert teacher_score.main() == 0
    shards = sorted(cache.glob("*/*.npz"))
    assert len(shards) == 1
    labels = ("negative", "neutral", "positive")
    with np.load(shards[0]) as z:  # plant other numbers: a student must read these, not score
        planted = z["probs"][:, ::-1].copy()
        np.savez(shards[0], spans=z["spans"], probs=planted, labels=z["labels"])
    got = teacher_targets(tiny_run, examples, labels)
    names = [str(x) for x in np.load(shards[0])["labels"]]
    np.testing.assert_allclose(got, planted[:, [names.index(lab) for lab in labels]], atol=1e-6)
    assert sorted(cache.glob("*/*.npz")) == shards


def test_nothing_to_score_is_refused(
    tiny_run: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["teacher_score", "--teacher", str(tiny_run)])
    with pytest.raises(SystemExit) as e:
        teacher_score.main()
    assert e.value.code == 2
