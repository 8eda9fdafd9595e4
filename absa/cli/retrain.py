"""absa retrain: the batch retraining job (train, evaluate against the champion, promote if
it passes)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from absa.cli.common import STOPPED, check_config, checkpoint_on_sigterm, given_name, say, to_stdout


def cmd_retrain(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from absa.training.retrain import JobStopped, RetrainConfig, retrain
    from absa.training.retrain_report import summary

    check_config(args.config)
    cfg = RetrainConfig.load(Path(args.config))
    if args.skip_invalid:
        cfg = replace(cfg, skip_invalid=True)
    report = None  # the job's, once it has returned: done whatever comes after
    try:  # SIGTERM (a pod evicted): training stops after the batch, as absa train's does
        with checkpoint_on_sigterm() as asked:
            report = retrain(cfg, version=args.version, progress=not args.quiet)
    except KeyboardInterrupt:
        # Ctrl-C, a second SIGTERM: stopped at once, not at a batch's end; a SIGTERM once the
        # job returned (train's handler given back, absa's stops the command): the job is done
        # and its report said, not "interrupted ... the same command goes on" (a new job)
        if report is None:
            say(_retrain_left(cfg.registry))
        else:
            to_stdout(summary(report) + "\n")
        raise
    except JobStopped as e:
        by = asked[0] if asked else "asked"
        to_stdout(
            f"stopped after epoch {e.args[0]} ({by}): no version added; the checkpoint is kept "
            f"in {cfg.registry}: the same command goes on from it\n"
        )
        return STOPPED
    to_stdout(summary(report) + "\n")
    # held (promote = false): the gate passed and the job did what its config asks
    return 0 if report["promoted"] or report.get("held") else 3


def _retrain_left(registry: Path) -> str:
    """What an interrupted retraining job says it left (it printed nothing, exit 130)."""
    from absa.model.registry import Registry
    from absa.training.checkpoint import CHECKPOINT

    kept = (Registry(registry).resumable_dir / "run" / CHECKPOINT).is_file()
    return (
        f"absa retrain: interrupted: {'its' if kept else 'no'} checkpoint is kept in "
        f"{registry}; the same command goes on from what it left (a version it added is "
        "promoted if it passed its gate and its champion still serves, and reported)"
    )


def register(sub: Any) -> None:
    r = sub.add_parser(
        "retrain",
        help="retrain, evaluate against the champion, promote if it passes (needs absa[train])",
    )
    r.add_argument("--config", required=True, help="a TOML retraining config (required)")
    r.add_argument("--version", type=given_name, help="version name (default: a UTC timestamp)")
    r.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip bad records and report them (default: the config's skip_invalid)",
    )
    r.add_argument(
        "--quiet", action="store_true", help="no progress bar (default: a bar, on a terminal only)"
    )
    r.set_defaults(func=cmd_retrain)
