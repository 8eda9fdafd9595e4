"""Resumable training (training/checkpoint.py): a run stopped after any epoch and resumed
ends where the run that never stopped ends; a checkpoint of another run is refused."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from _pytest.logging import LogCaptureFixture

from absa.cli import main
from absa.model.text import WordPipeline
from absa.training import checkpoint, train
from absa.training.checkpoint import CHECKPOINT, CheckpointError
from absa.training.presets import Preset
from absa.training.rundir import WEIGHTS
from absa.training.train import fit
from tests.helpers import (
    main_after,
    sigint_as_ctrl_c,
    sigterm_after_block,
    sigterm_around,
    synthetic_examples,
    tiny_config,
    tiny_preset,
    until_file,
    write_jsonl,
)

TRAIN, DEV = synthetic_examples(12, seed=0), synthetic_examples(4, seed=5)


def preset(glove: Path, **train: object) -> Preset:
    """Dropout, a warm-up schedule and a weight average: every state a resume must restore."""
    p = tiny_preset("atae-lstm", glove, dropout=0.3)
    return replace(p, train=replace(p.train, **{"epochs": 4, "warmup": 0.2, "ema": 0.9, **train}))


def rows(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]


def test_stopped_and_resumed_is_the_run_that_never_stopped(
    small_glove: Path, tmp_path: Path
) -> None:
    whole = fit(TRAIN, DEV, preset(small_glove), tmp_path / "whole", progress=False)
    assert not whole.stopped and not (tmp_path / "whole" / CHECKPOINT).exists()
    run = tmp_path / "parts"
    first = fit(TRAIN, DEV, preset(small_glove), run, progress=False, stop_after=0)
    assert first.stopped and len(first.history) == 1
    assert (run / CHECKPOINT).is_file() and not (run / "run.json").exists()
    second = fit(TRAIN, DEV, preset(small_glove), run, progress=False, resume=True, stop_after=0)
    assert second.stopped and len(second.history) == 2
    last = fit(TRAIN, DEV, preset(small_glove), run, progress=False, resume=True)
    assert not last.stopped and not (run / CHECKPOINT).exists()
    assert rows(last.history) == rows(whole.history)
    assert (run / WEIGHTS).read_bytes() == (tmp_path / "whole" / WEIGHTS).read_bytes()
    assert last.best_epoch == whole.best_epoch
    info = json.loads((run / "run.json").read_text())
    assert info["train_seconds"] >= sum(h["seconds"] for h in last.history)
    assert info["code_versions"] == [info["code_version"]]  # one code, three sessions


def test_every_sessions_code_is_recorded_and_a_failed_write_can_resume(
    small_glove: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run resumed on other code lists both versions; and the checkpoint goes only once
    the run is written (it went first, so a failed write left nothing to resume)."""
    run = tmp_path / "parts"
    monkeypatch.setattr(train, "code_version", lambda: "aaa")
    fit(TRAIN, DEV, preset(small_glove), run, progress=False, stop_after=0)
    monkeypatch.setattr(train, "code_version", lambda: "bbb+dirty")

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    real = train.save_run
    monkeypatch.setattr(train, "save_run", fail)
    with pytest.raises(OSError, match="disk full"):
        fit(TRAIN, DEV, preset(small_glove), run, progress=False, resume=True)
    assert (run / CHECKPOINT).is_file()  # still there: the same command goes on
    monkeypatch.setattr(train, "save_run", real)
    fit(TRAIN, DEV, preset(small_glove), run, progress=False, resume=True)
    info = json.loads((run / "run.json").read_text())
    assert info["code_versions"] == ["aaa", "bbb+dirty"] and info["code_version"] == "bbb+dirty"


def test_every_sessions_threads_and_device_are_recorded_and_a_change_warned_of(
    small_glove: Path, tmp_path: Path, caplog: LogCaptureFixture
) -> None:
    """A run begun on 1 thread and resumed on 2 recorded "threads": 2 and a reproduce
    command of 2 threads: a run whose weights it is not (the thread count changes the last
    digits). Each session's threads and device are kept, and a change is said."""
    run = tmp_path / "parts"
    fit(TRAIN, DEV, preset(small_glove, threads=1), run, progress=False, stop_after=0)
    with caplog.at_level(logging.WARNING, logger="absa.training.train"):
        fit(TRAIN, DEV, preset(small_glove, threads=2), run, progress=False, resume=True,
            reproduce="absa train --threads 2")  # fmt: skip
    assert "1 thread(s) on cpu, this session on 2 thread(s) on cpu" in caplog.text
    info = json.loads((run / "run.json").read_text())
    assert info["reproduce"] == (  # the command names the last session's threads: said so
        "absa train --threads 2\n# not bit for bit: the run's sessions ran on 1 thread(s) on "
        "cpu and 2 thread(s) on cpu (run.json's sessions); its weights differ from this "
        "command's in the last digits"
    )
    assert [(s["from_epoch"], s["threads"], s["device"]) for s in info["sessions"]] == [
        (1, 1, "cpu"),
        (2, 2, "cpu"),
    ]
    assert info["sessions"][0]["code_version"] == info["code_version"]
    caplog.clear()
    same = tmp_path / "same"
    fit(TRAIN, DEV, preset(small_glove), same, progress=False, stop_after=0)
    with caplog.at_level(logging.WARNING, logger="absa.training.train"):
        fit(TRAIN, DEV, preset(small_glove), same, progress=False, resume=True, reproduce="x")
    assert "this session" not in caplog.text
    assert json.loads((same / "run.json").read_text())["reproduce"] == "x"
    assert len(json.loads((same / "run.json").read_text())["sessions"]) == 2


class Killed(Exception):
    """The session ending just after a checkpoint was written."""


@pytest.mark.parametrize("epoch", [1, 2])
def test_a_run_killed_within_an_epoch_goes_on_from_where_it_was(
    small_glove: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, epoch: int
) -> None:
    p = preset(small_glove, batch_size=2)  # several batches an epoch
    whole = fit(TRAIN, DEV, p, tmp_path / "whole", progress=False)
    monkeypatch.setattr(train, "CHECKPOINT_SECONDS", 0.0)  # after every batch but the last
    real, written = checkpoint.save, []

    def save_then_die(run_dir: Path, state: dict) -> None:
        real(run_dir, state)
        written.append(state.get("within"))
        if written[-1] and written.count(None) == epoch - 1 and written[-1]["batches"] == 2:
            raise Killed  # in ``epoch``, after its second batch

    monkeypatch.setattr(checkpoint, "save", save_then_die)
    run = tmp_path / "parts"
    with pytest.raises(Killed):
        fit(TRAIN, DEV, p, run, progress=False)
    monkeypatch.setattr(checkpoint, "save", real)
    last = fit(TRAIN, DEV, p, run, progress=False, resume=True)
    assert last.resumed_after == epoch - 1  # the epochs that were whole
    assert rows(last.history) == rows(whole.history)
    assert (run / WEIGHTS).read_bytes() == (tmp_path / "whole" / WEIGHTS).read_bytes()


def test_a_run_asked_to_stop_writes_a_checkpoint_after_the_batch_and_goes_on_from_it(
    small_glove: Path, tmp_path: Path
) -> None:
    """checkpoint.STOP (SIGTERM under absa train) ends a run after the batch in progress,
    with a checkpoint within the epoch: resumed, it ends as the run that never stopped."""
    p = preset(small_glove, batch_size=2)  # several batches an epoch
    whole = fit(TRAIN, DEV, p, tmp_path / "whole", progress=False)
    checkpoint.STOP.set()
    try:
        stopped = fit(TRAIN, DEV, p, tmp_path / "r", progress=False)
    finally:
        checkpoint.STOP.clear()
    assert stopped.stopped and stopped.history == []
    saved = torch.load(tmp_path / "r" / CHECKPOINT, weights_only=False)
    assert saved["within"]["batches"] == 1  # after the first batch of epoch 1
    last = fit(TRAIN, DEV, p, tmp_path / "r", progress=False, resume=True)
    assert rows(last.history) == rows(whole.history)
    assert (tmp_path / "r" / WEIGHTS).read_bytes() == (tmp_path / "whole" / WEIGHTS).read_bytes()


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_stops_absa_train_with_a_checkpoint_and_75(
    small_glove: Path, tmp_path: Path, signame: str
) -> None:
    """A real process: SIGTERM while it trains, exit 75 and a checkpoint; --resume ends it.
    SIGHUP too, twice (a closed terminal sends two), with the run's output on that terminal,
    where every write fails once it is gone: SIGHUP ended the run on the spot, and the
    message after the checkpoint, written to the gone terminal, ended it with another
    status."""
    import os
    import pty
    import signal
    import subprocess
    import sys

    train = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    # the signal comes once epoch 1's checkpoint is written: 24 epochs are left (0.3 s each)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=25, batch_size=2, patience=25)
    argv = [sys.executable, "-m", "absa.cli", "train", "--train", str(train), "--config"]
    argv += [str(cfg), "--out", str(tmp_path / "r"), "--quiet"]
    log = tmp_path / "log"
    master, terminal = pty.openpty()
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv,
            stdout=terminal if signame == "SIGHUP" else out,
            stderr=out,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
        )
    os.close(terminal)
    until_file(proc, tmp_path / "r" / CHECKPOINT, "epoch trained", log)
    for _ in range(1 + (signame == "SIGHUP")):
        proc.send_signal(getattr(signal, signame))
    os.close(master)  # the terminal is gone: the message after the checkpoint goes nowhere
    assert proc.wait(timeout=120) == 75, log.read_text()
    text = log.read_text()
    assert f"{signame}: stopping after this batch" in text
    assert "absa train: error" not in text  # (it was "[Errno 5] Input/output error")
    if signame == "SIGTERM":  # its standard output is the log
        assert "(SIGTERM)" in text and "--resume goes on" in text
    assert (tmp_path / "r" / CHECKPOINT).is_file()
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    history = json.loads((tmp_path / "r" / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, 26))


def test_a_second_sigterm_stops_absa_train_at_once_with_143(
    small_glove: Path, tmp_path: Path
) -> None:
    """As SIGTERM stops any other command (it ended with 130, Ctrl-C's status)."""
    import signal
    import subprocess
    import sys

    train = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1000, batch_size=2, patience=1000)
    argv = [sys.executable, "-m", "absa.cli", "train", "--train", str(train), "--config"]
    argv += [str(cfg), "--out", str(tmp_path / "r"), "--quiet"]
    log = tmp_path / "log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while "training on" not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "training did not start in 120 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    while "stopping after this batch" not in log.read_text():
        assert proc.poll() is None, log.read_text()
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)  # 75 if the run stopped in between; -2 one run in six
    # before absa.cli.common.Stopped (the second signal met inside a dataclass being made)
    assert code in (143, 75), log.read_text()  # (130 before)


class SlowStart(logging.Handler):
    """Work before the first epoch that takes ``seconds`` (a teacher scoring train, a frozen
    encoder's features cached): a pause at the log line ``build_network`` writes."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("training on"):
            time.sleep(self.seconds)


def test_stop_after_counts_the_time_before_the_first_epoch(
    small_glove: Path, tmp_path: Path
) -> None:
    """--stop-after is the session's time: what ran before the first epoch counts. It was
    counted from the first epoch, so a session that spent its time reading and scoring
    trained on past its end."""
    logger = logging.getLogger("absa.training.train")
    slow = SlowStart(3.0)
    logger.addHandler(slow)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        run = fit(TRAIN, DEV, preset(small_glove, epochs=3), tmp_path, progress=False,
                  stop_after=1.5)  # fmt: skip
    finally:
        logger.removeHandler(slow)
        logger.setLevel(level)
    assert run.stopped and len(run.history) == 1


def test_a_checkpoint_file_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    """A torch file of something else (a tensor, a list) under the checkpoint's name is
    refused as foreign; it failed with AttributeError ('Tensor' has no 'get')."""
    for other in (torch.zeros(3), [1, 2]):
        torch.save(other, tmp_path / CHECKPOINT)
        with pytest.raises(CheckpointError, match="not a checkpoint"):
            checkpoint.load(tmp_path, "key")


def test_a_finished_run_keeps_no_half_written_checkpoint(small_glove: Path, tmp_path: Path) -> None:
    """A run killed while it wrote the checkpoint after its last epoch but one leaves the
    half-written file beside the whole one; resumed, the last epoch writes none, and that
    file (as big as a checkpoint: 1.16 GB for an mpnet teacher) stayed in the finished run."""
    p = preset(small_glove, epochs=2)
    fit(TRAIN, DEV, p, tmp_path, progress=False, stop_after=0)
    (tmp_path / CHECKPOINT).with_suffix(".part").write_bytes(b"torn")
    fit(TRAIN, DEV, p, tmp_path, progress=False, resume=True)
    assert sorted(f.name for f in tmp_path.iterdir() if "checkpoint" in f.name) == []


def test_without_resume_a_run_starts_again(small_glove: Path, tmp_path: Path) -> None:
    fit(TRAIN, DEV, preset(small_glove), tmp_path / "a", progress=False, stop_after=0)
    again = fit(TRAIN, DEV, preset(small_glove, epochs=1), tmp_path / "a", progress=False)
    assert len(again.history) == 1 and not (tmp_path / "a" / CHECKPOINT).exists()
    fresh = fit(TRAIN, DEV, preset(small_glove), tmp_path / "b", progress=False, resume=True)
    assert len(fresh.history) == 4  # nothing to resume: from epoch 1


def test_a_checkpoint_of_another_run_is_refused(small_glove: Path, tmp_path: Path) -> None:
    fit(TRAIN, DEV, preset(small_glove), tmp_path, progress=False, stop_after=0)
    with pytest.raises(CheckpointError, match="another configuration or data"):
        fit(TRAIN, DEV, preset(small_glove, lr=0.01), tmp_path, progress=False, resume=True)
    with pytest.raises(CheckpointError, match="another configuration or data"):
        fit(TRAIN[:-1], DEV, preset(small_glove), tmp_path, progress=False, resume=True)
    # threads may differ: the machine that resumes is not the one that stopped
    done = fit(TRAIN, DEV, preset(small_glove, threads=2), tmp_path, progress=False, resume=True)
    assert len(done.history) == 4
    fit(TRAIN, DEV, preset(small_glove), tmp_path, progress=False, stop_after=0)
    (tmp_path / CHECKPOINT).write_bytes(b"torn")
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        fit(TRAIN, DEV, preset(small_glove), tmp_path, progress=False, resume=True)


def test_a_checkpoint_whose_texts_were_read_otherwise_is_refused(
    small_glove: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped by code whose words were those of tokenizer 1, a run is not resumed by code
    that reads tokenizer 2's: the same data and configs, other rows."""

    class Version1(WordPipeline):
        def __init__(self, words: list[str], max_len: int = 128) -> None:
            super().__init__(words, max_len, tokenizer=1)

    with monkeypatch.context() as m:
        m.setattr(train, "WordPipeline", Version1)
        fit(TRAIN, DEV, preset(small_glove), tmp_path, progress=False, stop_after=0)
    with pytest.raises(CheckpointError, match="another configuration or data"):
        fit(TRAIN, DEV, preset(small_glove), tmp_path, progress=False, resume=True)


def test_the_cli_stops_with_75_and_resumes(
    small_glove: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=2)
    argv = [
        "train",
        "--train",
        str(train),
        "--config",
        str(cfg),
        "--out",
        str(tmp_path / "r"),
        "--quiet",
    ]
    assert main([*argv, "--stop-after", "0"]) == 75
    assert "the same command with --resume goes on" in capsys.readouterr().out
    assert main([*argv, "--resume"]) == 0
    assert "run written to" in capsys.readouterr().out
    assert len(json.loads((tmp_path / "r" / "history.json").read_text())) == 2
    assert main([*argv, "--stop-after", "-1"]) == 2
    assert "--stop-after is a number of minutes" in capsys.readouterr().err
    assert main([*argv, "--task", "extract", "--resume"]) == 2
    assert "--resume and --stop-after are for" in capsys.readouterr().err


def test_a_quiet_epoch_says_how_far_it_has_come(
    small_glove: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: LogCaptureFixture
) -> None:
    monkeypatch.setattr(train, "HEARTBEAT_SECONDS", 0.0)  # a line after every batch but the last
    p = preset(small_glove, epochs=1, batch_size=4)
    with caplog.at_level(logging.INFO, logger="absa.training.train"):
        fit(TRAIN, DEV, p, tmp_path / "quiet", progress=False)
    beats = [r.getMessage() for r in caplog.records if " items, " in r.getMessage()]
    counts = [
        tuple(map(int, re.match(r"epoch 1: (\d+) of (\d+) items", b).groups())) for b in beats
    ]
    items = counts[0][1]  # every aspect of TRAIN
    assert [seen for seen, _ in counts] == list(range(4, items, 4))  # batches of 4; not the last
    assert {n for _, n in counts} == {items} and all("s left" in b for b in beats)
    caplog.clear()
    monkeypatch.setattr(train, "HEARTBEAT_SECONDS", 600.0)  # a short epoch: no line
    with caplog.at_level(logging.INFO, logger="absa.training.train"):
        fit(TRAIN, DEV, p, tmp_path / "short", progress=False)
    assert not [r for r in caplog.records if " items, " in r.getMessage()]


def test_a_checkpoint_that_fills_the_disk_is_one_line_naming_it_and_leaves_no_part(
    tmp_path: Path,
) -> None:
    """A full disk mid-checkpoint came out as "[Errno 28] No space left on device" naming no
    file (or torch's "[enforce fail at inline_container.cc:672] ... unexpected pos"), and
    the half-written checkpoint.part stayed: as large as a whole one, on a full disk."""
    import errno

    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("no /dev/full here")
    (tmp_path / CHECKPOINT).write_bytes(b"the previous one")
    part = (tmp_path / CHECKPOINT).with_suffix(".part")
    part.symlink_to(full)  # its writes fail as on a full disk: ENOSPC from the kernel
    with pytest.raises(OSError) as raised:
        checkpoint.save(tmp_path, {"w": torch.zeros(100_000)})
    assert raised.value.errno == errno.ENOSPC
    assert str(raised.value).startswith(f"cannot write {tmp_path / CHECKPOINT}: the disk is full")
    assert not part.is_symlink() and not part.exists()
    assert (tmp_path / CHECKPOINT).read_bytes() == b"the previous one"


def test_a_run_whose_files_fill_the_disk_says_where_and_how_to_go_on(
    small_glove: Path, tmp_path: Path
) -> None:
    """The run's own files written at the end onto a full disk: "[Errno 28] No space left on
    device", naming no file and not saying that the checkpoint is kept."""
    import errno

    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("no /dev/full here")
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.png").symlink_to(full)  # the plot is written first: onto a "full disk"
    with pytest.raises(OSError) as raised:
        fit(TRAIN, DEV, preset(small_glove), run, progress=False)
    said = str(raised.value)
    assert raised.value.errno == errno.ENOSPC and said.startswith(f"cannot write {run}: the disk")
    assert "the same command with --resume writes the run" in said
    assert (run / CHECKPOINT).is_file() and not (run / "run.json").exists()
    (run / "history.png").unlink()
    fit(TRAIN, DEV, preset(small_glove), run, progress=False, resume=True)
    assert (run / "run.json").is_file() and not (run / CHECKPOINT).exists()


def test_sigterm_while_train_evaluates_says_the_run_is_written_and_how_to_evaluate(
    small_glove: Path, tmp_path: Path
) -> None:
    """SIGTERM after the run is written, while --eval's files are measured: it ended with
    143 and nothing said that the run was whole, nor how to get the report it lost (the same
    command with --resume refuses a finished run)."""
    import signal
    import subprocess
    import sys

    train = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    big = write_jsonl(tmp_path / "eval.jsonl", synthetic_examples(10_000, seed=9))
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, batch_size=2)
    argv = [sys.executable, "-m", "absa.cli", "train", "--train", str(train), "--config"]
    argv += [str(cfg), "--out", str(tmp_path / "r"), "--quiet", "--eval", str(big)]
    log = tmp_path / "log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    until_file(proc, tmp_path / "r" / "run.json", "run written", log, pause=0.01)  # --eval next
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143, log.read_text()
    text = log.read_text()
    assert "eval" not in json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert f"the run in {tmp_path / 'r'} is written" in text, text
    assert f"absa evaluate --model {tmp_path / 'r'} --data {big}" in text, text


def test_a_refused_resume_leaves_the_run_as_it_was(tiny_transformer: Path, tmp_path: Path) -> None:
    """--resume with another transformer is refused; the encoder's config.json of the
    refused one was written into the run first, over the one its checkpoint was made with."""
    import shutil

    from tests.helpers import tiny_pair_preset

    other = shutil.copytree(tiny_transformer, tmp_path / "other-bert")
    cfg = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**cfg, "hidden_dropout_prob": 0.3}))
    p = tiny_pair_preset(tiny_transformer, category_pair=False)
    p = replace(p, train=replace(p.train, epochs=3))
    run = tmp_path / "r"
    fit(TRAIN, DEV, p, run, progress=False, stop_after=0)

    def files() -> dict[str, bytes]:
        return {str(f.relative_to(run)): f.read_bytes() for f in run.rglob("*") if f.is_file()}

    before = files()
    moved = replace(p, train=replace(p.train, transformer=str(other)))
    with pytest.raises(CheckpointError, match="another configuration or data"):
        fit(TRAIN, DEV, moved, run, progress=False, resume=True)
    assert files() == before
    done = fit(TRAIN, DEV, p, run, progress=False, resume=True)
    assert len(done.history) == 3
    assert (run / "encoder" / "config.json").read_bytes() == (
        tiny_transformer / "config.json"
    ).read_bytes()


def test_ctrl_c_says_the_run_goes_on_with_resume(small_glove: Path, tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) ended absa train with 130 and no word, where SIGTERM says that the
    same command with --resume goes on from the checkpoint kept."""
    import signal
    import subprocess
    import sys

    train = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1000, batch_size=2, patience=1000)
    argv = [sys.executable, "-m", "absa.cli", "train", "--train", str(train), "--config"]
    argv += [str(cfg), "--out", str(tmp_path / "r"), "--quiet"]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_ctrl_c,  # Ctrl-C as a terminal sends it, in any test run
    )
    until_file(proc, tmp_path / "r" / CHECKPOINT, "epoch trained")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert (
        f"absa train: interrupted: the run in {tmp_path / 'r'} is not complete; its last "
        "checkpoint is kept: the same command with --resume goes on" in err
    ), err


def _one_epoch_argv(glove: Path, tmp_path: Path, with_eval: bool) -> list[str]:
    """``absa train`` arguments for one quiet epoch of TRAIN into ``tmp_path/r`` (for
    ``main_after``), with DEV as --eval when ``with_eval``."""
    train = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    cfg = tiny_config(tmp_path / "c.json", glove, epochs=1, batch_size=2)
    argv = ["train", "--train", str(train), "--config", str(cfg), "--out", str(tmp_path / "r")]
    if with_eval:
        argv += ["--eval", str(write_jsonl(tmp_path / "eval.jsonl", DEV))]
    return [*argv, "--quiet"]


def test_sigterm_as_the_run_is_written_before_eval_stops_train_with_its_report_command(
    small_glove: Path, tmp_path: Path
) -> None:
    """SIGTERM after the last batch, as the run was written (train's handler still in
    place): it asked for a checkpoint nobody wrote, and --eval then ran whole, exit 0 (the
    test above failed so one run in four on a busy machine). The signal comes from inside
    fit's return here, so it lands in that window every time."""
    argv = _one_epoch_argv(small_glove, tmp_path, with_eval=True)
    prelude = sigterm_around("absa.training.train", "fit")
    done = main_after(prelude, argv)
    assert done.returncode == 143, done.stderr
    assert f"the run in {tmp_path / 'r'} is written; --eval was cut short" in done.stderr
    assert "eval" not in json.loads((tmp_path / "r" / "metrics.json").read_text())


@pytest.mark.parametrize("with_eval", [True, False], ids=["eval", "no-eval"])
def test_sigterm_as_train_leaves_its_handler_says_the_run_is_written(
    small_glove: Path, tmp_path: Path, with_eval: bool
) -> None:
    """SIGTERM once fit had returned and train's own handler was put back, before --eval's
    loop: absa's handler stopped the command there, 143 and not a word of the run written
    nor of the report lost (session 93's CI, a loaded machine). Sent as the block that held
    train's handler ends, so it lands in that window every time."""
    argv = _one_epoch_argv(small_glove, tmp_path, with_eval)
    done = main_after(sigterm_after_block("train"), argv)
    assert done.returncode == 143, done.stderr
    said = f"absa train: the run in {tmp_path / 'r'} is written"
    said += "; --eval was cut short" if with_eval else "\n"
    assert said in done.stderr, done.stderr
    assert "eval" not in json.loads((tmp_path / "r" / "metrics.json").read_text())


@pytest.mark.parametrize("when", ["before", "after"])
def test_sigterm_as_train_records_its_eval_says_what_is_written(
    small_glove: Path, tmp_path: Path, when: str
) -> None:
    """SIGTERM as --eval's reports are recorded in the run (``add_eval``), or once they are,
    before the summary: it ended the command 143 with not a word, though the run was whole
    (and its reports too, after). It says which now: the report command where they are not
    in metrics.json."""
    argv = _one_epoch_argv(small_glove, tmp_path, with_eval=True)
    prelude = sigterm_around("absa.training.rundir", "add_eval", after=when == "after")
    done = main_after(prelude, argv)
    assert done.returncode == 143, done.stderr
    run = tmp_path / "r"
    recorded = "eval" in json.loads((run / "metrics.json").read_text())
    if when == "after":
        assert recorded
        assert f"absa train: the run in {run} is written\n" in done.stderr, done.stderr
    else:
        assert not recorded
        assert f"the run in {run} is written; --eval was cut short" in done.stderr, done.stderr


class _CtrlC:
    """Pickled into a checkpoint: sends this process SIGINT in the middle of torch.save."""

    def __reduce__(self) -> tuple:
        os.kill(os.getpid(), signal.SIGINT)
        return (int, (7,))


def test_ctrl_c_during_the_write_waits_for_a_whole_checkpoint(tmp_path: Path) -> None:
    """Ctrl-C inside torch.save came out of it as a RuntimeError ("unexpected pos"): absa
    said "cannot write ... checkpoint.pt (may succeed if run again)", 75, not interrupted.
    SIGINT as in a terminal's foreground: a test run started in a shell's background
    (``pytest &``) has it ignored, and nothing was interrupted (the test failed there)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):  # after the save, not inside it
            checkpoint.save(tmp_path, {"weights": torch.zeros(50_000), "ctrl_c": _CtrlC()})
    finally:
        signal.signal(signal.SIGINT, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT]  # no .part left
    state = torch.load(tmp_path / CHECKPOINT, weights_only=False)
    assert state["ctrl_c"] == 7 and state["weights"].shape == (50_000,)
