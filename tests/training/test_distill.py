"""Tests for knowledge distillation: the teacher's probabilities really steer the student."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from absa.training.distill import ensemble_targets, teacher_info, teacher_targets, teachers_info
from absa.training.evaluate import evaluate, predict_examples
from absa.training.exporting import export_run
from absa.training.presets import TrainConfig
from absa.training.records import DataError, Example
from absa.training.rundir import WEIGHTS, read_info
from absa.training.teacher_cache import cached_scores
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_preset


def student(teacher: Path, distill: float, glove: Path, out: Path) -> float:
    """Accuracy on the true labels of a student trained on them with this teacher."""
    examples = synthetic_examples(12, seed=0)
    preset = tiny_preset("atae-lstm", glove)
    preset = replace(preset, train=replace(preset.train, teacher=str(teacher), distill=distill))
    fit(examples, examples, preset, out, progress=False)
    return evaluate(out, examples)["accuracy"]


def test_full_distillation_follows_the_teacher(
    liar: Path, small_glove: Path, tmp_path: Path
) -> None:
    assert student(liar, 1.0, small_glove, tmp_path / "follows") <= 0.5  # learns the lies
    assert student(liar, 0.0, small_glove, tmp_path / "ignores") >= 0.9  # labels only


def test_run_records_the_teacher(liar: Path, small_glove: Path, tmp_path: Path) -> None:
    student(liar, 0.5, small_glove, tmp_path / "s")
    info = read_info(tmp_path / "s")
    assert info["teacher"]["path"] == str(liar)
    assert info["teacher"]["kind"] == "run"
    assert len(info["teacher"]["sha256"]) == 64
    assert info["teacher"]["dev_leak"] == 0  # the same examples were both runs' dev set


def test_a_teacher_that_trained_on_the_students_dev_is_reported(
    liar: Path, small_glove: Path, tmp_path: Path
) -> None:
    examples = synthetic_examples(12, seed=0)
    preset = tiny_preset("atae-lstm", small_glove)
    preset = replace(preset, train=replace(preset.train, teacher=str(liar), epochs=1))
    other_dev = synthetic_examples(4, seed=8)  # sentences the liar never held out
    fit(examples, other_dev, preset, tmp_path, progress=False)
    info = read_info(tmp_path)
    assert info["teacher"]["dev_leak"] == len({e.text for e in other_dev})


def test_teachers_are_averaged(liar: Path, tiny_run: Path) -> None:
    examples = synthetic_examples(6, seed=3)
    labels = ("negative", "neutral", "positive")
    lies, truth = (
        teacher_targets(liar, examples, labels),
        teacher_targets(tiny_run, examples, labels),
    )
    assert not np.allclose(lies, truth, atol=0.1)  # two teachers that disagree
    np.testing.assert_allclose(
        ensemble_targets([liar, tiny_run], examples, labels), (lies + truth) / 2
    )
    np.testing.assert_allclose(ensemble_targets([liar], examples, labels), lies)
    with pytest.raises(ValueError, match="no teacher"):
        ensemble_targets([], examples, labels)


def test_a_run_records_every_teacher(
    liar: Path, tiny_run: Path, small_glove: Path, tmp_path: Path
) -> None:
    examples = synthetic_examples(12, seed=0)
    preset = tiny_preset("atae-lstm", small_glove)
    tcfg = replace(preset.train, teacher=str(liar), teachers_more=(str(tiny_run),), epochs=1)
    fit(examples, examples, replace(preset, train=tcfg), tmp_path / "a", progress=False)
    info = read_info(tmp_path / "a")["teacher"]
    assert info["path"] == str(liar) and [t["path"] for t in info["more"]] == [str(tiny_run)]
    assert info["more"][0]["sha256"] == teacher_info(tiny_run, examples)["sha256"]
    assert info["dev_leak"] == 0
    other_dev = synthetic_examples(4, seed=8)  # neither teacher held these out
    fit(examples, other_dev, replace(preset, train=tcfg), tmp_path / "b", progress=False)
    leak = len({e.text for e in other_dev})
    assert read_info(tmp_path / "b")["teacher"]["dev_leak"] == leak
    export_run(tiny_run, tmp_path / "art")  # an exported teacher cannot tell what it saw
    assert teachers_info([liar, tmp_path / "art"], examples)["dev_leak"] is None


def test_more_teachers_need_a_teacher_and_a_list() -> None:
    with pytest.raises(ValueError, match="needs a teacher"):
        TrainConfig(teachers_more=("runs/t2",))
    with pytest.raises(ValueError, match="teachers_more is a list"):
        TrainConfig(teacher="runs/t1", teachers_more="runs/t2")  # type: ignore[arg-type]
    assert TrainConfig(teacher="t1", teachers_more=["t2"]).teachers_more == ("t2",)  # type: ignore[arg-type]


def test_an_exported_teacher_gives_the_same_targets(liar: Path, tmp_path: Path) -> None:
    """Exported without a temperature; with one, the targets are the calibrated ones."""
    export_run(liar, tmp_path / "artifact", calibrate=False)
    examples = synthetic_examples(5, seed=9)
    labels = ("negative", "neutral", "positive")  # a different order from the teacher's
    from_run = teacher_targets(liar, examples, labels)
    from_onnx = teacher_targets(tmp_path / "artifact", examples, labels)
    np.testing.assert_allclose(from_run, from_onnx, atol=1e-4)
    probs, names = predict_examples(liar, examples)
    np.testing.assert_allclose(from_run[:, 0], probs[:, names.index("negative")], atol=1e-6)
    np.testing.assert_allclose(from_run.sum(1), 1.0, atol=1e-5)


def test_teacher_info_of_a_run_and_of_an_artifact(liar: Path, tmp_path: Path) -> None:
    dev = synthetic_examples(12, seed=0)
    run = teacher_info(liar, dev)
    assert run == {
        "path": str(liar),
        "kind": "run",
        "sha256": hashlib.sha256((liar / WEIGHTS).read_bytes()).hexdigest(),
        "code_version": read_info(liar)["code_version"],
        "dev_leak": 0,
    }
    export_run(liar, tmp_path / "artifact")
    art = teacher_info(tmp_path / "artifact", dev)
    onnx = (tmp_path / "artifact" / "model.onnx").read_bytes()
    assert art["kind"] == "artifact" and art["sha256"] == hashlib.sha256(onnx).hexdigest()
    assert art["code_version"] == run["code_version"]  # the artifact keeps the run's
    assert art["dev_leak"] is None  # an artifact's dev set is unknown


def test_teacher_errors_are_data_errors(liar: Path, tmp_path: Path) -> None:
    examples = [Example("the food was good", 4, 8, "positive", "x:1")]
    with pytest.raises(DataError, match="no-such-dir"):
        teacher_targets(tmp_path / "no-such-dir", examples, ("negative", "neutral", "positive"))
    with pytest.raises(DataError, match="labels"):
        teacher_targets(liar, examples, ("bad", "good"))


def test_a_category_teacher_for_an_aspect_term_student_is_refused_in_words(
    pair_category_run: Path,
) -> None:
    """It said "a category model needs category_ids", naming neither the teacher nor why."""
    examples = [Example("the food was good", 4, 8, "positive", "x:1")]
    with pytest.raises(DataError, match=r"is an aspect-category model: a student of aspect terms"):
        teacher_targets(pair_category_run, examples, ("negative", "neutral", "positive"))


def _shards(cache: Path) -> list[Path]:
    return sorted(cache.glob("*/*.npz"))


def test_the_teacher_cache_is_read_by_teacher_and_examples(
    liar: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(cache))
    labels = ("negative", "neutral", "positive")
    examples = synthetic_examples(5, seed=9)
    first = teacher_targets(liar, examples, labels)
    (saved,) = _shards(cache)
    # the shard is what a second student reads: planted probabilities come back
    with np.load(saved) as z:
        spans, raw, names = z["spans"], z["probs"], [str(x) for x in z["labels"]]
    np.savez(saved, spans=spans, probs=raw[:, ::-1].copy(), labels=np.array(names))
    again = teacher_targets(liar, examples, labels)
    order = [names.index(lab) for lab in labels]
    np.testing.assert_allclose(again, raw[:, ::-1][:, order], atol=1e-6)
    assert not np.allclose(again, first)
    # a copy of the teacher elsewhere is the same teacher; a subset, reordered, is read
    # from the same shard, nothing scored
    shutil.copytree(liar, tmp_path / "moved")
    np.testing.assert_allclose(teacher_targets(tmp_path / "moved", examples, labels), again)
    np.testing.assert_allclose(
        teacher_targets(liar, examples[3:0:-1], labels), again[3:0:-1], atol=1e-6
    )
    assert _shards(cache) == [saved]
    # another teacher (the artifact, with its temperature) is another entry, and a torn
    # shard is scored again rather than trusted
    export_run(liar, tmp_path / "artifact")
    teacher_targets(tmp_path / "artifact", examples, labels)
    assert len(list(cache.iterdir())) == 2
    saved.write_bytes(b"torn")
    np.testing.assert_allclose(teacher_targets(liar, examples, labels), first, atol=1e-6)
    monkeypatch.setenv("ABSA_TEACHER_CACHE", "off")
    shutil.rmtree(cache)
    teacher_targets(liar, examples, labels)
    assert not cache.exists()


def test_the_teacher_cache_scores_only_new_examples_chunk_by_chunk(
    liar: Path, tmp_path: Path
) -> None:
    examples = synthetic_examples(7, seed=3, paired=False)
    asked: list[int] = []

    def score(part: list[Example]) -> tuple[np.ndarray, list[str]]:
        asked.append(len(part))
        if len(asked) == 2:
            raise KeyboardInterrupt  # a run killed while scoring its second chunk
        return predict_examples(liar, part)

    truth, names = predict_examples(liar, examples)
    with pytest.raises(KeyboardInterrupt):
        cached_scores(tmp_path, liar, examples, score, chunk=3)
    assert asked == [3, 3] and len(_shards(tmp_path)) == 1  # the first chunk is kept
    # the next run scores only the other four, and writes them as it goes
    probs, got = cached_scores(tmp_path, liar, examples, score, chunk=3)
    assert asked == [3, 3, 3, 1] and len(_shards(tmp_path)) == 3 and got == names
    np.testing.assert_allclose(probs, truth, atol=1e-6)
    # repeated and reordered examples come from the shards
    asked.clear()
    probs, _ = cached_scores(tmp_path, liar, examples[::-1] + examples[:2], score, chunk=3)
    assert asked == []
    np.testing.assert_allclose(probs, np.concatenate([truth[::-1], truth[:2]]), atol=1e-6)
    more = synthetic_examples(9, seed=4, paired=False)[7:]
    cached_scores(tmp_path, liar, examples + more, score, chunk=3)
    assert asked == [len(more)] and len(_shards(tmp_path)) == 4
    probs, got = cached_scores(tmp_path, liar, [], score, chunk=3)  # nothing asked
    assert probs.shape == (0, len(names)) and got == names and asked == [len(more)]


def test_a_resume_after_the_teacher_changed_is_refused(
    liar: Path, tiny_run: Path, small_glove: Path, tmp_path: Path
) -> None:
    """The checkpoint's fingerprint covers the configs and the items, not the teacher's
    probabilities: a teacher retrained (or replaced) at the same path between two sessions
    would have steered the rest of the run with other targets, unseen."""
    from absa.training.checkpoint import CheckpointError

    teacher = tmp_path / "teacher"
    shutil.copytree(liar, teacher)
    examples = synthetic_examples(12, seed=0)
    preset = tiny_preset("atae-lstm", small_glove)
    preset = replace(preset, train=replace(preset.train, teacher=str(teacher), epochs=2))
    run = tmp_path / "run"
    assert fit(examples, examples, preset, run, progress=False, stop_after=0).stopped
    shutil.rmtree(teacher)
    shutil.copytree(tiny_run, teacher)  # another teacher where the first one was
    with pytest.raises(CheckpointError, match="teacher's probabilities"):
        fit(examples, examples, preset, run, progress=False, resume=True)
    shutil.rmtree(teacher)
    shutil.copytree(liar, teacher)  # the same teacher again: the run goes on
    assert not fit(examples, examples, preset, run, progress=False, resume=True).stopped


def test_a_student_is_the_same_whether_the_teacher_cache_is_cold_or_warm(
    liar: Path, small_glove: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache miss built the teacher's network, which drew from torch's generator before
    the student's were drawn: the same command and seed gave other weights (dev accuracy
    6.67 then 53.33) as the cache was cold or warm."""
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(tmp_path / "cache"))
    student(liar, 0.5, small_glove, tmp_path / "cold")
    student(liar, 0.5, small_glove, tmp_path / "warm")
    monkeypatch.setenv("ABSA_TEACHER_CACHE", "off")  # a miss every time
    student(liar, 0.5, small_glove, tmp_path / "off")
    weights = {(tmp_path / r / WEIGHTS).read_bytes() for r in ("cold", "warm", "off")}
    assert len(weights) == 1
