"""What the CLI's commands share: the user-facing error and the model a command opens."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

EX_TEMPFAIL = 75  # sysexits.h: a temporary failure, worth running again (or resuming)


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


#: the signal (SIGTERM, SIGHUP) that asked the running command to stop, once one has (``main``
#: notes it): an error raised as it unwound may be what the stop became (``Stopped`` raised
#: inside a C extension's callback comes out of torch as another error)
STOP_SIGNAL: list[int] = []


class Stopped(KeyboardInterrupt):  # noqa: N818 (KeyboardInterrupt's kin, named as it is)
    """A command stopped by a signal (SIGTERM, SIGHUP): it unwinds as on Ctrl-C, and
    ``except KeyboardInterrupt`` catches it. Not KeyboardInterrupt itself: that one, raised
    in code that ``exec`` runs from source text (a dataclass being made, as torch's lazy
    imports make them), marks the interpreter, which then kills itself with SIGINT at exit
    whatever status the command returned (CPython's ``_Py_UnhandledKeyboardInterrupt``,
    under ``python -m``): a stopped ``absa train`` ended with -2, not 143, about one run in
    six."""


@contextmanager
def on_sigterm(
    handler: Callable[[int, FrameType | None], None], hangup: bool = False
) -> Iterator[None]:
    """``handler`` answers SIGTERM while the block runs, and SIGHUP too with ``hangup`` unless
    it is ignored (a closed terminal or SSH session ended the command on the spot; ``nohup``
    sets it ignored, and ignored it stays); the handlers before them are back once the block
    is left (a program that calls ``main()`` keeps its own). Only in the main thread, where
    Python lets a handler be set: elsewhere the block runs as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = [signal.SIGTERM]
    # ignored (nohup) stays ignored; one set outside Python (None) cannot be put back: kept
    if hangup and signal.getsignal(signal.SIGHUP) not in (signal.SIG_IGN, None):
        signals.append(signal.SIGHUP)
    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield
    finally:
        for signum, before in previous.items():
            if before is not None:  # None: a handler not set from Python, none to put back
                signal.signal(signum, before)


#: the standard streams that were a terminal when the command started (remember_terminals):
#: once the terminal has hung up, isatty() on them says False (its ioctl fails with EIO)
TERMINALS: list[Any] = []


def remember_terminals() -> None:
    """Note which of standard output and error are a terminal, for ``after_hangup``."""
    import sys

    TERMINALS.clear()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                TERMINALS.append(stream)
        except (OSError, ValueError):  # closed, or no descriptor
            pass


def after_hangup(signum: int) -> None:
    """After SIGHUP the terminal is gone and a write to it fails (EIO): a progress bar or a
    log line would then end the command's clean-up, or a training run before its checkpoint.
    The standard streams that were a terminal (``TERMINALS``) go to /dev/null from here on
    (redirected to a file, they are left alone)."""
    import signal

    if signum != signal.SIGHUP:
        return
    for stream in TERMINALS:
        try:
            to_devnull(stream)
        except (OSError, ValueError):  # closed, or no descriptor
            pass


def to_devnull(stream: Any) -> None:
    """``stream``'s descriptor onto /dev/null: what it still buffers goes nowhere, at exit
    too, instead of failing again there ("Exception ignored ... BrokenPipeError")."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def to_stdout(text: str = "", flush: bool = False) -> None:
    """``text`` to standard output (and flushed, with ``flush``). Where that fails (a full
    disk, ``> /dev/full``) the error names it: it said "[Errno 28] No space left on device",
    as of an output file. Its descriptor goes to /dev/null then, or what it still buffers
    fails again at exit (status 120). A gone reader's BrokenPipeError is main's to answer."""
    from absa.errors import cannot_write

    try:
        if text:
            sys.stdout.write(text)
        if flush:
            sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        with contextlib.suppress(OSError, ValueError):  # no descriptor (a caller's stream)
            to_devnull(sys.stdout)
        raise cannot_write("standard output", e) from e


#: whether the command's own lines go out as JSON objects (ABSA_LOG_FORMAT=json, set by main)
JSON_LINES = [False]


def say(line: str, level: int = 40) -> None:
    """One line of the command's own on stderr (an error, 40, or a warning, 30): as it is, or,
    where ABSA_LOG_FORMAT=json, as one JSON object through the log (a collector that reads
    every line as JSON met a plain "absa retrain: error: ..." at the one line it needed)."""
    if JSON_LINES[0]:
        import logging

        logging.getLogger("absa.cli").log(level, line)
    else:
        sys.stderr.write(line + "\n")


def check_writable(out: Path) -> None:
    """CLIError naming ``out`` (a folder) where a file cannot be made in it (a read-only file
    system, no permission): before a command's work, not after an epoch or an hour of
    encoding. A folder made here for the look is removed again; the command makes it."""
    import tempfile

    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise CLIError(f"cannot write {out}: {e.strerror or e}") from None
    finally:
        if made:
            with contextlib.suppress(OSError):
                out.rmdir()


@contextmanager
def claim_out(out: Path, command: str, hint: str) -> Iterator[None]:
    """``out``, a directory, claimed for the block: an exclusive ``flock`` on the directory
    itself, so a second ``command`` into it is refused at once (CLIError, with ``hint``:
    what to do instead) rather than both
    writing there and the last one's files winning. No file is made for it, and the OS ends
    the claim with the process (SIGKILL too). ``out`` (and its parents) are made for the
    claim; where the block leaves them empty (a command refused before its work) they are
    removed again. On a file system without ``flock`` the block runs unclaimed, warned of."""
    import errno
    import fcntl
    import logging
    import os

    made = [p for p in (out, *out.parents) if not p.exists()][::-1]  # outermost first
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise CLIError(f"cannot write {out}: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                logging.getLogger("absa").warning(
                    "cannot lock %s (%s): another %s into it would not be refused",
                    out,
                    e.strerror or e,
                    command,
                )
            else:
                raise CLIError(f"{out}: another {command} is writing into it; {hint}") from None
        yield
    finally:
        for folder in reversed(made):  # innermost first; before the claim ends
            try:
                folder.rmdir()
            except OSError:
                break  # not empty: the command's work (or another writer's)
        os.close(fd)


def check_config(path: str | None) -> None:
    """A --config that is missing or a folder, as one line naming the flag (the reader said
    "[Errno 2] No such file or directory: 'c.json'", naming none)."""
    if path is not None and not Path(path).is_file():
        what = "is a directory, not a config file" if Path(path).is_dir() else "no such file"
        raise CLIError(f"--config {path}: {what}")


def given(value: str) -> str:
    """An argparse ``type`` for a path flag: an empty value (``--model "$RUN"`` with RUN
    unset) is refused; it read as no flag at all, and the command went on with the default."""
    import argparse

    if not value.strip():
        raise argparse.ArgumentTypeError("empty: name a path (is a shell variable unset?)")
    return value


def given_name(value: str) -> str:
    """An argparse ``type`` for a name flag (``--version``, ``--name``): an empty value is
    refused, as ``given`` refuses an empty path; it read as no flag, and the default (a
    timestamp, the preset's name) was used."""
    import argparse

    if not value.strip():
        raise argparse.ArgumentTypeError("empty: give a name (is a shell variable unset?)")
    return value


def model_dir(model: str | None) -> Path:
    """``--model`` if given (a registry: its current version, as ``absa.load`` takes it),
    else what the settings point at (``ABSA_REGISTRY``'s current version,
    ``ABSA_MODEL_DIR``), else the shipped model."""
    if model:
        from absa.model.registry import Registry

        if Registry.looks_like(model):
            path = Registry(model).current_path()
            logging.getLogger("absa.cli").info(
                "%s: the registry's current version, %s", model, path.name
            )
            return path
        return Path(model)
    from absa.settings import ModelSettings

    return ModelSettings().model_path()


def servable(path: Path, kind: str | None = None, task: str | None = None, named: str = "") -> Path:
    """``path`` checked to be an exported model artifact (of ``kind``: default a sentiment
    model; of ``task``, terms or category, where given) before a server starts on it, so a
    wrong directory is one line here, not a traceback from inside the server. ``named``: the
    setting and flag that gave it, said first ("ABSA_EXTRACTOR / --extractor")."""
    from absa.errors import ArtifactError
    from absa.model import artifact

    kind = kind or artifact.KIND
    path = Path(path)
    said = f"{named}: " if named else ""
    if path.exists() and not path.is_dir():  # model.onnx or a data file given for its folder
        raise CLIError(f"{said}{path}: is a file; a model is the directory `absa export` writes")
    if not path.is_dir():
        raise CLIError(f"{said}{path}: no such model directory")
    from absa.model.registry import Registry

    if Registry.looks_like(path):  # served as a registry, its promotions are followed
        raise CLIError(f"{said}{path}: a model registry; serve it with --registry (ABSA_REGISTRY)")
    try:
        # a graph cut short passes its (recorded again) sha256: check_serves opens it
        artifact.check_serves(artifact.load(path, kind=kind), task)
    except ArtifactError as e:  # a training run's message says how to export it already
        told = artifact.is_artifact(path) or (path / "run.json").is_file()
        hint = "" if told else " (make one with `absa export`)"
        raise CLIError(f"{said}{e}{hint}") from None
    return path


#: where --model points when it is not given (evaluate, predict)
MODEL_DEFAULT = (
    "default: the current version of $ABSA_REGISTRY, else $ABSA_MODEL_DIR, else the shipped model"
)


def setting_help(name: str, text: str | None = None, default: str | None = None) -> str:
    """Help for a flag that sets the ``Settings`` field ``name``: what it does, its default
    and its ``ABSA_*`` variable."""
    from absa.settings import Settings

    info = Settings.model_fields[name]
    shown = default if default is not None else info.default
    about = (text or info.description or "").replace("%", "%%")
    return f"{about} (default: {shown}; env ABSA_{name.upper()})".lstrip()


def check_new_out(out: Path, hint: str, source: Path | None = None) -> None:
    """An --out that exists, or lies under a file, refused before the work: the write at
    the end would fail (naming a temporary path), or replace what the user had there. One
    inside ``source`` (the run an export reads) too: the two would share a directory."""
    if out.exists() or out.is_symlink():
        raise CLIError(f"{out} exists; {hint}")
    if source is not None and out.resolve().is_relative_to(source.resolve()):
        raise CLIError(f"{out} is inside the run {source}; {hint} outside it")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CLIError(f"{parent} is not a directory; cannot write {out}")
            return


#: the exit status of a run stopped by --stop-after or SIGTERM, to be resumed
STOPPED = EX_TEMPFAIL


@contextmanager
def checkpoint_on_sigterm() -> Iterator[list[str]]:
    """While a run trains, SIGTERM (a node drained, a pod evicted) or SIGHUP (the terminal or
    SSH session closed; not under nohup) asks it to stop after the batch in progress, with a
    checkpoint (training/checkpoint.STOP): the same command with --resume goes on from
    there. A second SIGTERM stops at once, as SIGTERM does elsewhere (absa.cli); a second
    SIGHUP does not (a closed terminal sends two). Yields a list that holds, once the block
    is left, the name of the signal that asked for a stop, if one did."""
    import signal
    import threading

    from absa.training import checkpoint

    asked: list[str] = []
    checkpoint.STOP.clear()
    outer = signal.getsignal(signal.SIGTERM)  # the CLI's: unwinds, exit 143

    def ask(signum: int, frame: FrameType | None) -> None:
        if checkpoint.STOP.is_set():
            if signum == signal.SIGHUP:
                return
            if callable(outer):
                outer(signum, frame)
            raise Stopped
        checkpoint.STOP.set()
        after_hangup(signum)
        asked.append(signal.Signals(signum).name)
        logging.getLogger("absa").warning(
            "%s: stopping after this batch with a checkpoint (SIGTERM: at once)", asked[0]
        )

    try:
        with on_sigterm(ask, hangup=True):
            yield asked
    finally:
        checkpoint.STOP.clear()  # a later run in this process starts unasked
        if asked == ["SIGHUP"] and threading.current_thread() is threading.main_thread():
            # the hangup's second SIGHUP may come after the block: the command ends as
            # asked (its checkpoint written, exit 75), not stopped by it; main() puts the
            # handler before it back
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
