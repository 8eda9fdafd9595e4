"""Out-of-fold targets (train.teacher_folds): the items a fold file holds learn from the
fold's teacher, every other item from ``teacher``."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from absa.training.distill import fold_targets, teacher_info, teacher_targets
from absa.training.evaluate import evaluate
from absa.training.exporting import export_run
from absa.training.presets import TrainConfig
from absa.training.records import DataError
from absa.training.rundir import RUN_INFO, read_info, write_examples
from absa.training.teacher_cache import file_sha256
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_preset

LABELS = ("negative", "neutral", "positive")


def test_fold_rows_take_the_fold_teachers_targets(
    liar: Path, tiny_run: Path, tmp_path: Path
) -> None:
    examples = synthetic_examples(12, seed=0)
    fold = tmp_path / "fold.jsonl"
    write_examples(fold, examples[::2])  # every other item: 12 of 24
    lies = teacher_targets(liar, examples, LABELS)
    truth = teacher_targets(tiny_run, examples, LABELS)
    assert not np.allclose(lies, truth, atol=0.1)
    out, about = fold_targets(lies, examples, [(str(fold), str(tiny_run))], LABELS)
    np.testing.assert_allclose(out[::2], truth[::2], rtol=1e-6)
    np.testing.assert_allclose(out[1::2], lies[1::2])
    np.testing.assert_allclose(lies, teacher_targets(liar, examples, LABELS))  # not in place
    assert about == [
        {
            "file": str(fold),
            "sha256": file_sha256(fold),
            "teacher": str(tiny_run),
            "items": 12,
            "weight": 1.0,
        }
    ]


def first_half_fold(liar: Path, tiny_run: Path, tmp_path: Path) -> tuple:
    """The synthetic items, a fold file of the first 6, and both teachers' targets."""
    examples = synthetic_examples(12, seed=0)
    fold = tmp_path / "fold.jsonl"
    write_examples(fold, examples[:6])
    return (
        examples,
        fold,
        teacher_targets(liar, examples, LABELS),
        teacher_targets(tiny_run, examples, LABELS),
    )


def test_a_fold_named_twice_takes_its_teachers_mean(
    liar: Path, tiny_run: Path, tmp_path: Path
) -> None:
    examples, fold, lies, truth = first_half_fold(liar, tiny_run, tmp_path)
    soft = np.full_like(lies, 1 / 3)
    pairs = [(str(fold), str(tiny_run)), (str(fold), str(liar))]
    out, about = fold_targets(soft, examples, pairs, LABELS)
    np.testing.assert_allclose(out[:6], (truth[:6] + lies[:6]) / 2, rtol=1e-6)
    np.testing.assert_allclose(out[6:], soft[6:])
    assert [(a["teacher"], a["items"]) for a in about] == [(str(tiny_run), 6), (str(liar), 6)]
    alone, _ = fold_targets(soft, examples, pairs[:1], LABELS)  # one teacher: its own
    np.testing.assert_allclose(alone[:6], truth[:6], rtol=1e-6)


def test_a_blend_weighs_the_fold_teacher_against_the_teacher(
    liar: Path, tiny_run: Path, tmp_path: Path
) -> None:
    examples, fold, lies, truth = first_half_fold(liar, tiny_run, tmp_path)
    out, about = fold_targets(lies, examples, [(str(fold), str(tiny_run))], LABELS, 0.25)
    np.testing.assert_allclose(out[:6], 0.25 * truth[:6] + 0.75 * lies[:6], rtol=1e-6)
    np.testing.assert_allclose(out[:6].sum(1), 1.0, rtol=1e-5)  # still distributions
    np.testing.assert_allclose(out[6:], lies[6:])
    assert about[0]["weight"] == 0.25 and about[0]["items"] == 6


def test_a_teacher_that_trained_on_its_fold_is_refused(tiny_run: Path, tmp_path: Path) -> None:
    examples = synthetic_examples(12, seed=0)
    fold = tmp_path / "fold.jsonl"
    write_examples(fold, examples[:4])
    teacher = tmp_path / "teacher"
    shutil.copytree(tiny_run, teacher)
    info = read_info(teacher)
    info["data"] = {"train": [{"path": "elsewhere/fold.jsonl", "sha256": file_sha256(fold)}]}
    (teacher / RUN_INFO).write_text(json.dumps(info))
    soft = np.full((12, 3), 1 / 3, np.float32)
    with pytest.raises(DataError, match="trained on .*fold.jsonl: not out of fold"):
        fold_targets(soft, examples, [(str(fold), str(teacher))], LABELS)


def test_a_student_learns_each_fold_from_its_teacher(
    liar: Path, tiny_run: Path, small_glove: Path, tmp_path: Path
) -> None:
    """Full distillation from the liar, but every item in a fold the truthful teacher
    scores: the student learns the truth, and its run records the fold."""
    examples = synthetic_examples(12, seed=0)
    fold = tmp_path / "fold.jsonl"
    write_examples(fold, examples)
    preset = tiny_preset("atae-lstm", small_glove)
    tcfg = replace(
        preset.train, teacher=str(liar), distill=1.0, teacher_folds=((str(fold), str(tiny_run)),)
    )
    fit(examples, examples, replace(preset, train=tcfg), tmp_path / "s", progress=False)
    assert evaluate(tmp_path / "s", examples)["accuracy"] >= 0.9  # the liar alone: <= 0.5
    folds = read_info(tmp_path / "s")["teacher_folds"]
    assert [(f["file"], f["teacher"]["path"], f["items"]) for f in folds] == [
        (str(fold), str(tiny_run), 24)
    ]
    assert folds[0]["teacher"]["sha256"] == teacher_info(tiny_run, examples)["sha256"]
    assert folds[0]["teacher"]["dev_leak"] == 0
    meta = export_run(tmp_path / "s", tmp_path / "art", calibrate=False)
    assert meta["train"]["teacher_folds"] == folds  # the artifact keeps its provenance


def test_teacher_folds_config() -> None:
    with pytest.raises(ValueError, match="needs a teacher"):
        TrainConfig(teacher_folds=(("a.jsonl", "runs/b"),))
    for bad in ("a.jsonl", [["a.jsonl"]], [["a.jsonl", "runs/b", "x"]], ["ab"], [["a", 1]]):
        with pytest.raises(ValueError, match="pairs"):
            TrainConfig(teacher="t", teacher_folds=bad)  # type: ignore[arg-type]
    cfg = TrainConfig(teacher="t", teacher_folds=[["a.jsonl", "runs/b"]])  # type: ignore[arg-type]
    assert cfg.teacher_folds == (("a.jsonl", "runs/b"),)
    assert cfg.to_dict()["teacher_folds"] == [["a.jsonl", "runs/b"]]  # as JSON holds it
    assert TrainConfig(**json.loads(json.dumps(cfg.to_dict()))) == cfg
    for w in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="teacher_folds_weight"):
            TrainConfig(teacher="t", teacher_folds=cfg.teacher_folds, teacher_folds_weight=w)
