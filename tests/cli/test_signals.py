"""SIGTERM's handlers under the CLI: installed for a command, the caller's back after it."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from absa.cli import main
from absa.cli.common import on_sigterm


@pytest.fixture
def own_handler() -> Iterator[list[int]]:
    """A program's own SIGTERM handler, as a program that calls ``main()`` would have."""
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    yield seen
    signal.signal(signal.SIGTERM, previous)


def test_the_handler_answers_inside_the_block_and_the_old_one_after(
    own_handler: list[int],
) -> None:
    inside: list[int] = []
    old = signal.getsignal(signal.SIGTERM)
    with on_sigterm(lambda signum, frame: inside.append(signum)):
        os.kill(os.getpid(), signal.SIGTERM)
        assert inside == [signal.SIGTERM] and own_handler == []
    assert signal.getsignal(signal.SIGTERM) is old
    os.kill(os.getpid(), signal.SIGTERM)
    assert own_handler == [signal.SIGTERM] and inside == [signal.SIGTERM]


def test_the_old_handler_is_back_when_the_block_raises(own_handler: list[int]) -> None:
    old = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError), on_sigterm(lambda signum, frame: None):
        raise RuntimeError("the command failed")
    assert signal.getsignal(signal.SIGTERM) is old


def test_off_the_main_thread_the_block_runs_and_nothing_is_set() -> None:
    old = signal.getsignal(signal.SIGTERM)
    ran: list[bool] = []

    def work() -> None:
        with on_sigterm(lambda signum, frame: None):  # signal.signal would raise here
            ran.append(signal.getsignal(signal.SIGTERM) is old)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert ran == [True]


def test_main_gives_a_program_its_own_handler_back(
    own_handler: list[int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old = signal.getsignal(signal.SIGTERM)
    missing = tmp_path / "no-registry"
    assert main(["models", "--registry", str(missing), "list"]) == 2  # fails, in-process
    assert f"{missing} does not exist" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is old


def _outer_hangup(signum: int, frame: object) -> None:
    """The CLI's own handler, set before absa train's block (or a program's)."""


@pytest.mark.parametrize("before", [signal.SIG_DFL, signal.SIG_IGN, _outer_hangup])
def test_a_hangup_is_answered_unless_ignored_as_under_nohup(before: object) -> None:
    def handler(signum: int, frame: object) -> None:
        pass

    outer = signal.signal(signal.SIGHUP, before)  # type: ignore[arg-type]
    try:
        with on_sigterm(handler, hangup=True):
            assert signal.getsignal(signal.SIGHUP) is (
                before if before is signal.SIG_IGN else handler
            )
            assert signal.getsignal(signal.SIGTERM) is handler
        assert signal.getsignal(signal.SIGHUP) is before
        with on_sigterm(handler):  # without hangup: left as it is
            assert signal.getsignal(signal.SIGHUP) is before
    finally:
        signal.signal(signal.SIGHUP, outer)


# A signal's handler that runs inside code `exec` runs from source text (a dataclass being
# made, as torch's lazy imports make them while a run starts): the command's stop, though
# caught, must leave the process its own status, not a death by SIGINT (-2) at exit. Run as
# `python -m` runs the CLI (a script's sys.exit passes by that check).
STOPPED_IN_EXEC = """
import os, signal, sys
from absa.cli import _stopper
from absa.cli.common import on_sigterm
terminated = []
with on_sigterm(_stopper(terminated)):
    try:
        {inside}
    except KeyboardInterrupt:
        sys.exit(128 + terminated[0])
sys.exit(1)
"""
KILL_IN_EXEC = 'exec("import os, signal; os.kill(os.getpid(), signal.SIGTERM)")'


def _run_module(code: str, where: Path) -> int:
    import subprocess
    import sys

    (where / "stopped_in_exec.py").write_text(code)
    argv = [sys.executable, "-m", "stopped_in_exec"]
    return subprocess.run(argv, cwd=where, timeout=120).returncode


def test_a_sigterm_met_inside_exec_still_exits_143(tmp_path: Path) -> None:
    assert _run_module(STOPPED_IN_EXEC.format(inside=KILL_IN_EXEC), tmp_path) == 143  # -2 before


def test_absa_trains_second_sigterm_inside_exec_still_exits_143(tmp_path: Path) -> None:
    """``absa train``'s own handler: the first SIGTERM asks for a checkpoint, the second
    stops at once, here inside ``exec``."""
    inside = "\n        ".join(
        [
            "from absa.cli.common import checkpoint_on_sigterm",
            "with checkpoint_on_sigterm():",
            "    os.kill(os.getpid(), signal.SIGTERM)",
            f"    {KILL_IN_EXEC}",
        ]
    )
    assert _run_module(STOPPED_IN_EXEC.format(inside=inside), tmp_path) == 143  # -2 before
