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
    with the numbers torch gives; the export is kept under .onnx, whole, and nothing else."""
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
    assert sorted(p.name for p in cache.iterdir()) == [".onnx", teacher_key(tiny_run)]
    assert [p.name for p in (cache / ".onnx").iterdir()] == [teacher_key(tiny_run)]  # no part
    assert (cache / ".onnx" / teacher_key(tiny_run) / "metadata.json").is_file()
    known, labels = read_shards(cache / teacher_key(tiny_run))
    want, want_labels = predict_examples(tiny_run, examples, device="cpu")
    assert labels == want_labels
    got = np.stack([known[span_key(e)] for e in examples])
    np.testing.assert_allclose(got, want, atol=1e-5)
    caplog.clear()
    assert teacher_score.main() == 0  # all cached: no export this time
    assert not any(r.name == "absa.training.onnx_teacher" for r in caplog.records)


def _exported(caplog: pytest.LogCaptureFixture) -> int:
    return sum("exported for onnxruntime" in r.getMessage() for r in caplog.records)


def test_the_onnx_export_is_kept_for_the_next_call_and_made_again_if_damaged(
    tiny_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A scoring cut off goes on without exporting the teacher again (13-18 minutes for an
    mpnet teacher here); a kept export whose files no longer match their sha256 is not
    trusted but made again, and the scores stay torch's."""
    import logging

    from absa.training.evaluate import predict_examples
    from absa.training.teacher_cache import read_shards, span_key, teacher_key

    caplog.set_level(logging.INFO)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(cache))
    batches = [synthetic_examples(6, seed=s) for s in (7, 8, 9)]

    def score(examples: list, name: str) -> None:
        data = write_3line(tmp_path / name, examples)
        argv = ["teacher_score", "--teacher", str(tiny_run), "--data", str(data)]
        monkeypatch.setattr(sys, "argv", [*argv, "--engine", "onnx"])
        assert teacher_score.main() == 0

    score(batches[0], "a.raw")
    assert _exported(caplog) == 1
    caplog.clear()
    score(batches[1], "b.raw")  # new aspects to score: the kept export serves them
    assert _exported(caplog) == 0
    assert any("export kept in" in r.getMessage() for r in caplog.records)
    kept = cache / ".onnx" / teacher_key(tiny_run) / "model.onnx"
    kept.write_bytes(kept.read_bytes()[:-8] + b"\0" * 8)  # damaged
    caplog.clear()
    score(batches[2], "c.raw")
    assert _exported(caplog) == 1
    assert any("fails its checks" in r.getMessage() for r in caplog.records)
    known, _ = read_shards(cache / teacher_key(tiny_run))
    every = [e for b in batches for e in b]
    want, _ = predict_examples(tiny_run, every, device="cpu")
    got = np.stack([known[span_key(e)] for e in every])
    np.testing.assert_allclose(got, want, atol=1e-5)
