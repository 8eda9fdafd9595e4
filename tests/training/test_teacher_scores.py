"""A teacher's scores carried without the teacher (training/teacher_scores.py): exported by
benchmarks/teacher_score.py --export, they stand in for the teacher's run wherever only its
probabilities on those aspects are asked for."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from absa.training.distill import teacher_targets
from absa.training.evaluate import evaluate
from absa.training.records import DataError
from absa.training.rundir import WEIGHTS, read_info, write_examples
from absa.training.teacher_cache import file_sha256, read_shards, teacher_key
from absa.training.teacher_scores import export_scores
from absa.training.train import fit
from benchmarks import teacher_score
from tests.helpers import (
    one_writer_killed,
    said_of,
    synthetic_examples,
    temporary_held_in,
    tiny_preset,
)

LABELS = ("negative", "neutral", "positive")
EXAMPLES = synthetic_examples(12, seed=0)


@pytest.fixture
def scores(tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tiny_run's scores of EXAMPLES, exported through the script; the cache off after."""
    data = tmp_path / "fold.jsonl"
    write_examples(data, EXAMPLES)
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(tmp_path / "cache"))
    argv = ["teacher_score", "--teacher", str(tiny_run), "--data", str(data)]
    monkeypatch.setattr(sys, "argv", [*argv, "--export", str(tmp_path / "teacher-scores")])
    assert teacher_score.main() == 0
    monkeypatch.setenv("ABSA_TEACHER_CACHE", "off")  # nothing below may read the cache
    return tmp_path / "teacher-scores"


def test_the_scores_answer_as_the_teacher_did(tiny_run: Path, scores: Path) -> None:
    assert not (scores / WEIGHTS).exists() and read_info(scores) == read_info(tiny_run)
    np.testing.assert_array_equal(
        teacher_targets(scores, EXAMPLES[::-1], LABELS),
        teacher_targets(tiny_run, EXAMPLES[::-1], LABELS),
    )


def test_scoring_what_the_scores_hold_is_a_no_op(
    scores: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """benchmarks/oof_teachers.sh scores each fold again: with the scores in place of the
    teacher, that reads them and runs nothing."""
    argv = ["teacher_score", "--teacher", str(scores), "--data", str(tmp_path / "fold.jsonl")]
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(tmp_path / "cache-2"))
    monkeypatch.setattr(sys, "argv", argv)
    assert teacher_score.main() == 0
    assert not (tmp_path / "cache-2").exists()


def test_an_aspect_the_scores_lack_is_an_error_naming_them(scores: Path) -> None:
    other = synthetic_examples(3, seed=9)
    with pytest.raises(DataError, match=f"{scores} holds a teacher's scores.*lacks 6 of the 6"):
        teacher_targets(scores, other, LABELS)


def test_a_student_learns_its_fold_from_the_scores(
    liar: Path, tiny_run: Path, scores: Path, small_glove: Path, tmp_path: Path
) -> None:
    """As test_teacher_folds' student, the truthful fold teacher carried as its scores: the
    student learns the truth, and its run names the weights the scores came from."""
    fold = tmp_path / "fold.jsonl"
    preset = tiny_preset("atae-lstm", small_glove)
    tcfg = replace(
        preset.train, teacher=str(liar), distill=1.0, teacher_folds=((str(fold), str(scores)),)
    )
    fit(EXAMPLES, EXAMPLES, replace(preset, train=tcfg), tmp_path / "s", progress=False)
    assert evaluate(tmp_path / "s", EXAMPLES)["accuracy"] >= 0.9  # the liar alone: <= 0.5
    (fold_info,) = read_info(tmp_path / "s")["teacher_folds"]
    teacher = fold_info["teacher"]
    assert (teacher["kind"], teacher["sha256"]) == ("scores", file_sha256(tiny_run / WEIGHTS))
    assert teacher["dev_leak"] == 0 and fold_info["items"] == len(EXAMPLES)


def test_no_scores_to_export_is_an_error(tiny_run: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="holds no scores"):
        export_scores(tiny_run, tmp_path / "empty-cache", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_failed_export_leaves_nothing_behind(
    scores: Path, tiny_run: Path, tmp_path: Path
) -> None:
    """A file where the directory goes: refused, that file kept, no half-written copy."""
    (tmp_path / "in-the-way").write_text("mine")
    with pytest.raises(OSError):
        export_scores(tiny_run, tmp_path / "cache", tmp_path / "in-the-way")
    assert (tmp_path / "in-the-way").read_text() == "mine"
    assert not list(tmp_path.glob(".in-the-way.*"))


def test_an_export_never_replaces_a_directory_that_is_not_one(
    scores: Path,
    tiny_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--export pointed at a directory of other things (the teacher run itself, say) removed
    it whole before renaming the export there. Refused, naming it, and nothing removed; an
    earlier export there is replaced, and none is left aside."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    for taken in (mine, tiny_run):
        before = sorted(p.name for p in taken.iterdir())
        with pytest.raises(FileExistsError, match=str(taken)):
            export_scores(tiny_run, tmp_path / "cache", taken)
        assert sorted(p.name for p in taken.iterdir()) == before
    assert (mine / "notes.txt").read_text() == "mine"
    argv = ["teacher_score", "--teacher", str(tiny_run), "--data", str(tmp_path / "fold.jsonl")]
    monkeypatch.setenv("ABSA_TEACHER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", [*argv, "--export", str(tiny_run)])
    with pytest.raises(SystemExit) as refused:  # the script: before any scoring
        teacher_score.main()
    assert refused.value.code == 2 and f"--export {tiny_run}: exists" in capsys.readouterr().err
    again = export_scores(tiny_run, tmp_path / "cache", scores)  # an export there: replaced
    assert read_shards(scores / "scores")[1] == list(LABELS) and again["aspects"] > 0
    assert sorted(p.name for p in scores.parent.iterdir() if scores.name in p.name) == [scores.name]


def test_a_torn_cache_shard_does_not_travel(scores: Path, tiny_run: Path, tmp_path: Path) -> None:
    """The export is one readable shard of what the cache's readable shards hold."""
    entry = tmp_path / "cache" / teacher_key(tiny_run)
    (entry / "torn.npz").write_bytes(b"PK\x03\x04 cut short")
    out = tmp_path / "again"
    record = export_scores(tiny_run, tmp_path / "cache", out)
    assert [p.name for p in (out / "scores").iterdir()] == list(
        os.listdir(scores / "scores")
    )  # the same one shard as before the torn one came
    known, labels = read_shards(out / "scores")
    assert record["aspects"] == len(known) == len(EXAMPLES) and labels == list(LABELS)


def test_a_killed_exports_temporary_directory_is_removed_by_the_next_one(
    tiny_run: Path, scores: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An export of scores killed by SIGKILL left its .<out>.* directory beside ``out`` for
    good. The next one into the same folder removes those no process holds, says which,
    and leaves a running one's alone (and another output's: .<out>.v2.*)."""
    import signal

    other, theirs = temporary_held_in(tmp_path, ".again.v2.")
    other.send_signal(signal.SIGKILL)
    other.wait(timeout=60)
    writers = temporary_held_in(tmp_path, ".again."), temporary_held_in(tmp_path, ".again.")
    with one_writer_killed(*writers) as (stale, live):
        with caplog.at_level("INFO", logger="absa"):
            export_scores(tiny_run, tmp_path / "cache", tmp_path / "again")
        assert not stale.exists() and (live / "model.onnx").is_file() and theirs.is_dir()
        assert read_shards(tmp_path / "again" / "scores")[1] == list(LABELS)
        assert said_of(caplog, stale) == [
            f"removed {stale}: the temporary directory of a scores export that did not end"
        ]
