"""The ``absa`` command line: train, evaluate, export, predict, serve, retrain, models.

Each command imports what it needs when it runs, so ``absa serve`` and ``absa predict``
work in an install without torch. A command fails with one line on stderr and exit 2
(``absa <command>: error: ...``); nothing else here knows about exit codes.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from absa.cli import models, serve, train
from absa.cli.common import CLIError
from absa.errors import AbsaError

__all__ = ["CLIError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="absa", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)
    train.register(sub)
    serve.register(sub)
    models.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (CLIError, AbsaError, ValueError, KeyError, RuntimeError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        sys.stderr.write(f"absa {args.command}: error: {msg}\n")
        return 2
