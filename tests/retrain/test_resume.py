"""A retraining job killed while it trains leaves its checkpoint, and the next job with the
same configuration and data goes on from it, to the numbers of a job never killed; a job
with other data starts again; a job that fails (not killed) leaves nothing to go on from."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from absa.model.registry import Registry
from absa.training import checkpoint
from absa.training.retrain import RetrainConfig, retrain
from tests.helpers import write_jsonl
from tests.retrain.conftest import EXAMPLES, ConfigWriter, Killed


def kill_after_epoch(monkeypatch: pytest.MonkeyPatch, epoch: int) -> None:
    save = checkpoint.save

    def save_then_die(run_dir: Path, state: dict) -> None:
        save(run_dir, state)
        if state["epoch"] == epoch:
            raise Killed(f"after epoch {epoch}")

    monkeypatch.setattr(checkpoint, "save", save_then_die)


def test_a_killed_job_is_resumed_to_the_same_numbers(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(registry, twin)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    kill_after_epoch(monkeypatch, 3)
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    reg = Registry(registry)
    kept = reg.resumable_dir / "run" / checkpoint.CHECKPOINT
    assert kept.is_file() and "v2" not in reg.versions()

    report = retrain(cfg, version="v2")
    assert report["resumed_after_epoch"] == 3
    assert not reg.resumable_dir.exists()
    never_killed = retrain(dataclasses.replace(cfg, registry=twin), version="v2")
    assert "resumed_after_epoch" not in never_killed
    assert report["challenger_metrics"] == never_killed["challenger_metrics"]
    assert report["promoted"] == never_killed["promoted"]
    hist = [
        json.loads((r / "versions" / "v2" / "metadata.json").read_text()) for r in (registry, twin)
    ]
    assert hist[0]["metrics"] == hist[1]["metrics"]


def test_a_killed_jobs_checkpoint_is_not_resumed_with_other_data(
    registry: Path,
    make_config: ConfigWriter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    kill_after_epoch(monkeypatch, 2)
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    more = write_jsonl(tmp_path / "more.jsonl", EXAMPLES[:6])
    other = RetrainConfig.load(make_config(tmp_path / "o.toml", registry, new=[more]))
    assert (Registry(registry).resumable_dir / "run" / checkpoint.CHECKPOINT).is_file()
    report = retrain(other, version="v3")
    assert "resumed_after_epoch" not in report and report["finished"]
    assert "another configuration or data set" in caplog.text
    # retrain drops it itself: absa train's advice (--out, --resume) is no retrain user's
    assert "--resume" not in caplog.text and "--out" not in caplog.text, caplog.text
    assert not Registry(registry).resumable_dir.exists()


def test_a_failed_job_leaves_nothing_to_resume(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    save = checkpoint.save

    def save_then_fail(run_dir: Path, state: dict) -> None:
        save(run_dir, state)
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint, "save", save_then_fail)
    with pytest.raises(OSError, match="disk full"):
        retrain(cfg, version="v2")
    assert not Registry(registry).resumable_dir.exists()


def test_a_job_stopped_by_an_io_error_a_retry_may_not_meet_leaves_its_checkpoint(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stale NFS handle or the volume's I/O error exits 75 for a retry, and the job took
    its checkpoint with it: the retry trained from epoch 1 again."""
    import errno
    import os

    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    replace, saved = os.replace, []

    def flaky_volume(src: object, dst: object, *args: object, **kwargs: object) -> None:
        if Path(str(dst)).name == checkpoint.CHECKPOINT:
            saved.append(dst)
            if len(saved) == 3:  # the third epoch's checkpoint: the first two are kept
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
        replace(src, dst, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", flaky_volume)
    with pytest.raises(OSError, match="Input/output error"):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    assert (Registry(registry).resumable_dir / "run" / checkpoint.CHECKPOINT).is_file()
    assert retrain(cfg, version="v2")["resumed_after_epoch"] == 2


@pytest.mark.parametrize("where", ["checkpoint", "run"])
def test_a_job_that_ran_out_of_disk_keeps_its_checkpoint(
    registry: Path,
    make_config: ConfigWriter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    """A full disk as the third epoch's checkpoint or the finished run was written: the
    job dropped its checkpoint, though the error said it was kept ("the same command with
    --resume writes the run", and absa retrain has no --resume); the next job trained
    every epoch again. Now the next job, with room, goes on from it."""
    import errno
    import os

    from absa.errors import cannot_write
    from absa.training import train

    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if where == "checkpoint":
        save = checkpoint.save

        def third_fails(run_dir: Path, state: dict) -> None:
            if state["epoch"] == 3:
                raise cannot_write(Path(run_dir) / checkpoint.CHECKPOINT, full) from full
            save(run_dir, state)

        monkeypatch.setattr(checkpoint, "save", third_fails)
    else:

        def no_room(*args: object, **kwargs: object) -> None:
            raise full

        monkeypatch.setattr(train, "save_run", no_room)
    with pytest.raises(OSError) as err:
        retrain(cfg, version="v2")
    assert err.value.errno == errno.ENOSPC and "the disk is full" in str(err.value)
    assert "--resume" not in str(err.value)
    monkeypatch.undo()
    assert (Registry(registry).resumable_dir / "run" / checkpoint.CHECKPOINT).is_file()
    assert retrain(cfg, version="v2")["resumed_after_epoch"] == (2 if where == "checkpoint" else 9)


def test_a_job_killed_after_training_goes_on_from_its_last_checkpoint(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed while it exported (or evaluated), the job had dropped its checkpoint with the
    run written: the next job trained every epoch again. It now trains the last one alone,
    to the numbers of a job never killed."""
    from absa.training import retrain as job

    twin = tmp_path / "twin"
    shutil.copytree(registry, twin)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))

    def killed(*args: object, **kwargs: object) -> dict:
        raise Killed("while exporting")

    monkeypatch.setattr(job, "export_challenger", killed)
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    report = retrain(cfg, version="v2")
    assert report["resumed_after_epoch"] == 9  # of 10 (tests/retrain/conftest.py)
    text = (registry / "reports" / "v2.txt").read_text()
    assert "resumed a killed job's training after epoch 9" in text
    assert not Registry(registry).resumable_dir.exists()
    never_killed = retrain(dataclasses.replace(cfg, registry=twin), version="v2")
    assert report["challenger_metrics"] == never_killed["challenger_metrics"]


def _stopped_job(
    registry: Path, cfg: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Registry, str]:
    """``absa retrain`` of ``cfg`` run to its stop (exit 75): no version added, CURRENT as
    it was, the checkpoint kept, and the same command said to go on; the config, the
    registry and what it printed."""
    from absa.cli import main

    before = Registry(registry).pointer()
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 75
    out = capsys.readouterr().out
    assert "the same command goes on" in out, out
    reg = Registry(registry)
    assert (reg.resumable_dir / "run" / checkpoint.CHECKPOINT).is_file()
    assert "v2" not in reg.versions() and reg.pointer() == before
    return cfg, reg, out


def test_a_job_asked_to_stop_keeps_its_checkpoint_and_exits_75(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """SIGTERM (``checkpoint.STOP``, as absa/cli/train's handler sets it) stops the job's
    training after the batch with its checkpoint, as absa train stops (exit 75, the same
    command goes on): the job exited 143 at once and lost the epoch in progress."""

    save = checkpoint.save

    def save_then_ask(run_dir: Path, state: dict) -> None:
        save(run_dir, state)
        if state["epoch"] == 2:
            checkpoint.STOP.set()  # what SIGTERM does while the job trains

    monkeypatch.setattr(checkpoint, "save", save_then_ask)
    cfg, _, out = _stopped_job(registry, make_config(tmp_path / "r.toml", registry), capsys)
    assert "stopped after epoch 2" in out
    assert not checkpoint.STOP.is_set()
    monkeypatch.undo()
    report = retrain(RetrainConfig.load(cfg), version="v2")
    assert report["resumed_after_epoch"] == 2


@pytest.mark.parametrize("stage", ["export_challenger", "evaluate_on"])
def test_a_job_asked_to_stop_after_training_stops_before_it_adds_a_version(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], stage: str,
) -> None:  # fmt: skip
    """SIGTERM after the last batch (as the challenger is exported or measured): the stop
    asked for a checkpoint at the next batch, none came, and the job went on to gate, add
    and promote a version (exit 0) while its pod was going away. It stops at the next step
    now, before any version is added (exit 75: the same command goes on from the
    checkpoint kept with the finished run)."""
    from absa.training import retrain as job

    step = getattr(job, stage)

    def step_then_ask(*args: object, **kwargs: object) -> object:
        out = step(*args, **kwargs)
        checkpoint.STOP.set()  # what SIGTERM does now
        return out

    monkeypatch.setattr(job, stage, step_then_ask)
    cfg, reg, out = _stopped_job(registry, make_config(tmp_path / "r.toml", registry), capsys)
    assert "no version added" in out
    monkeypatch.undo()
    report = retrain(RetrainConfig.load(cfg), version="v2")
    assert "v2" in reg.versions() and "resumed_after_epoch" in report
