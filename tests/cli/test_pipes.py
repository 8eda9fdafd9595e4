"""The CLI's output read by a pipe that closes early (`absa presets | head -1`): the
command stops quietly with 141 (128 + SIGPIPE, as a shell reports a tool the pipe ended),
with no error line or "Exception ignored ... BrokenPipeError" on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = "import sys; from absa.cli import main; sys.exit(main())"


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize(
    "argv",
    [["presets"], ["predict", "--text", "The fries were soggy", "--aspect", "fries"]],
    ids=["presets", "predict"],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(
    argv: list[str], unbuffered: bool
) -> None:
    """Buffered, the write failed at exit ("Exception ignored in: <_io.TextIOWrapper
    name='<stdout>'> BrokenPipeError", status 120); unbuffered (PYTHONUNBUFFERED, as in
    many containers), inside the command ("absa presets: error: [Errno 32] Broken pipe",
    status 2)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = _absa(argv, env)
    proc.stdout.close()  # the reader is gone before the command writes its first line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, err
    assert "Broken pipe" not in err and "BrokenPipeError" not in err, err
    assert "Traceback" not in err and "error:" not in err, err


def test_a_reader_of_the_logs_that_stops_early_leaves_the_status_as_it_was() -> None:
    """`absa ... 2>&1 | head`: the logs' reader gone, the command still did its work and
    exits with its own status, not 120 (a failed flush of stderr at exit, which Python
    reports by that status alone: where it says so is the pipe that is gone)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    argv = ["predict", "--text", "The fries were soggy", "--aspect", "fries"]
    proc = _absa(argv, env)
    proc.stderr.close()  # the log lines have nowhere to go
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0
    assert '"label"' in out


def _absa(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """``absa ARGV`` with its stdout and stderr on pipes of their own, for the test to close."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE, *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    return proc


@pytest.mark.parametrize("closed", ["2>&-", ">&-"], ids=["stderr", "stdout"])
def test_a_command_run_with_a_standard_stream_closed_still_does_its_work(
    tmp_path: Path, closed: str
) -> None:
    """`absa predict ... 2>&-` (a cron line, a supervisor that closes stderr): Python gives
    sys.stderr None, and the progress bar and the log wrote to it: no output written, exit 1
    (the status that means bad rows). With stdout closed the output was written, then the
    summary line failed with a traceback, exit 1. Both go to /dev/null now."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "The pizza was great", "aspect": "pizza"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = f"predict --input {src} --output {out}"
    shell = f'"{sys.executable}" -c "{CODE}" {args} {closed}'
    done = subprocess.run(shell, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"pred_label": "positive"' in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_full_standard_output_is_named_as_such(unbuffered: bool) -> None:
    """`absa presets > /dev/full`: the error line said "[Errno 28] No space left on device",
    naming nothing (the user's output files were fine), and buffered, Python's flush at exit
    met the same error again."""
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full here")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    with full.open("w") as out:
        argv = [sys.executable, "-c", CODE, "presets"]
        done = subprocess.run(
            argv, stdout=out, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=60
        )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == ["absa presets: error: cannot write standard output: the disk is full "
                     "(No space left on device)"], done.stderr  # fmt: skip


def test_predict_prints_the_texts_own_letters_where_stdout_takes_them(tmp_path: Path) -> None:
    """`absa predict --text` printed "caf\\u00e9" for "café" (and a Chinese aspect as
    escapes alone), where its answer files and the HTTP API write the letters; still escaped
    where stdout cannot write them, never an encoding error."""
    import json

    argv = [sys.executable, "-m", "absa.cli", "predict", "--text", "Le café était bon"]
    argv += ["--aspect", "café"]
    for encoding, shown in (("utf-8", '"term": "café"'), ("ascii", '"term": "caf\\u00e9"')):
        env = {**os.environ, "PYTHONIOENCODING": encoding, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(argv, capture_output=True, env=env, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        out = done.stdout.decode(encoding)
        assert shown in out, out
        assert json.loads(out)["results"][0]["term"] == "café"
