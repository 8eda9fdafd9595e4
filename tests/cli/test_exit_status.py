"""The CLI's exit statuses: 2 for what the same command would fail on again, 75 (EX_TEMPFAIL)
for an I/O error a retry may not meet (a stale NFS handle, an I/O error of the volume), so a
supervisor (a Kubernetes Job's podFailurePolicy, deploy/k8s/base/cronjob.yaml) retries only
those."""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path

import pytest

from absa.cli import EX_TEMPFAIL, _run, main


def failing(err: int) -> argparse.Namespace:
    def func(args: argparse.Namespace) -> int:
        raise OSError(err, os.strerror(err), "/models/versions/v2")

    return argparse.Namespace(command="retrain", func=func)


@pytest.mark.parametrize("err", [errno.ESTALE, errno.EIO, errno.ETIMEDOUT, errno.EAGAIN])
def test_a_transient_io_error_exits_75(err: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(failing(err), []) == EX_TEMPFAIL == 75
    line = capsys.readouterr().err
    assert line.startswith("absa retrain: error: ") and "/models/versions/v2" in line
    assert "may succeed if run again" in line


@pytest.mark.parametrize("err", [errno.ENOENT, errno.EACCES, errno.ENOSPC, errno.EISDIR])
def test_an_io_error_a_retry_would_meet_again_exits_2(
    err: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(failing(err), []) == 2
    assert "run again" not in capsys.readouterr().err


def test_a_real_missing_file_exits_2(tmp_path: pytest.TempPathFactory) -> None:

    assert main(["retrain", "--config", str(tmp_path / "absent.toml")]) == 2


@pytest.mark.parametrize("minutes", ["nan", "inf", "-1"])
def test_stop_after_is_a_finite_number_of_minutes(
    tmp_path: Path, minutes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--stop-after nan compared false with every time and never stopped the run."""

    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "the food", "aspect": "food", "label": "positive"}\n')
    code = main(["train", "--train", str(train), "--out", str(tmp_path / "run"),
                 "--stop-after", minutes])  # fmt: skip
    assert code == 2
    assert "--stop-after is a number of minutes, >= 0" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_with_json_logs_the_error_line_is_a_json_object_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ABSA_LOG_FORMAT=json (the retraining CronJob sets it): every log line was one JSON
    object but the command's own error line, "absa retrain: error: ...", the one line a
    collector most needed."""
    from tests.helpers import main_with_json_logs

    argv = ["retrain", "--config", str(tmp_path / "missing.toml")]
    code, records = main_with_json_logs(argv, monkeypatch, capsys)  # every line JSON
    assert code == 2
    assert records[-1]["level"] == "ERROR" and records[-1]["message"] == (
        f"absa retrain: error: --config {tmp_path / 'missing.toml'}: no such file"
    )


@pytest.mark.parametrize(("level", "info_lines"), [("warning", False), ("INFO", True)])
def test_every_command_logs_at_absa_log_level(
    level: str,
    info_lines: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ABSA_LOG_LEVEL is every command's level, not only the server's: a retraining job set
    to warning logs no info lines (which file it read, which model it loaded)."""
    from tests.helpers import main_with_json_logs

    data = tmp_path / "one.raw"
    data.write_text("The fries were soggy but the $T$ was great\nburger\n1\n")
    monkeypatch.setenv("ABSA_LOG_LEVEL", level)
    code, records = main_with_json_logs(["evaluate", "--data", str(data)], monkeypatch, capsys)
    assert code == 0
    assert any(r["level"] == "INFO" for r in records) is info_lines
