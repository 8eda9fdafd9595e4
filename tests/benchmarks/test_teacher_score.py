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


def test_the_onnx_engine_fills_the_cache_with_torchs_probabilities(
    tiny_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """--engine onnx: the run exported and scored by onnxruntime, under the run's own key,
    with the numbers torch gives; nothing of the export is left beside the cache."""
    import logging

    caplog.set_level(logging.INFO)
    from absa.training.evaluate import predict_examples
    from absa.training.teacher_cache import read_shards, span_key, teacher_key

    examples = synthetic_examples(8, seed=5)
    data = write_3line(tmp_path / "train.raw", examples)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(cache))
    argv = ["teacher_score", "--teacher", str(tiny_run), "--data", str(data), "--engine", "onnx"]
    monkeypatch.setattr(sys, "argv", argv)
    assert teacher_score.main() == 0
    scored = [
        r.getMessage() for r in caplog.records if "examples in the cache, scoring" in r.getMessage()
    ]
    assert len(scored) == 1  # once, by onnxruntime: torch then found every aspect cached
    assert any(r.name == "absa.training.onnx_teacher" for r in caplog.records)
    assert [p.name for p in cache.iterdir()] == [teacher_key(tiny_run)]  # no export left
    known, labels = read_shards(cache / teacher_key(tiny_run))
    want, want_labels = predict_examples(tiny_run, examples, device="cpu")
    assert labels == want_labels
    got = np.stack([known[span_key(e)] for e in examples])
    np.testing.assert_allclose(got, want, atol=1e-5)
    caplog.clear()
    assert teacher_score.main() == 0  # all cached: no export this time
    assert not any(r.name == "absa.training.onnx_teacher" for r in caplog.records)
