"""absa answers: the labelled lines of answer samples (ABSA_SAMPLE_PATH) into one training
file, each answer once, and how often the models that answered were right."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from absa.cli.common import CLIError, check_new_out, given, to_stdout

log = logging.getLogger("absa")


def cmd_answers(args: argparse.Namespace) -> int:
    from absa.model.atomic import atomic_write_text
    from absa.training.answers import SHOWN, format_report, read_answers

    paths = [Path(p) for p in args.files]
    out = Path(args.out)
    for p in paths:
        if not p.is_file():
            raise CLIError(f"{p}: {'not a file' if p.exists() else 'no such file'}")
        if p.resolve() == out.resolve():
            raise CLIError(f"--out {out} is one of the sample files: name a new file")
    check_new_out(out, "name a new file (a batch's training file is written once)")
    if not out.parent.is_dir():
        raise CLIError(f"--out {out}: no such directory as {out.parent}")
    read = read_answers(paths, skip_invalid=args.skip_invalid)
    for what, found in (("invalid line(s) skipped", read.invalid), (
        "answer(s) whose lines' labels disagree, left out", read.conflicts)):  # fmt: skip
        if found:
            log.warning("%d %s:", len(found), what)
            for place in found[:SHOWN]:
                log.warning("  %s", place)
            if len(found) > SHOWN:
                log.warning("  ... and %d more", len(found) - SHOWN)
    if not read.kept and read.conflicts:
        raise CLIError(
            f"every labelled answer in {', '.join(args.files)} has lines whose labels "
            f"disagree ({len(read.conflicts)}, listed above): settle them, then run it again"
        )
    if not read.kept:
        raise CLIError(
            f"no labelled answer in {', '.join(args.files)} ({read.unlabelled} line(s) without "
            'a label): add "label" to the lines a person checked'
        )
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in read.kept)
    atomic_write_text(out, body)
    rep = {**read.report(), "files": args.files, "out": str(out)}
    to_stdout((json.dumps(rep) if args.json else format_report(rep)) + "\n")
    return 0


def register(sub: Any) -> None:
    a = sub.add_parser(
        "answers",
        help="labelled answer samples (ABSA_SAMPLE_PATH) into one training file, each answer "
        "once, and how often the models were right",
    )
    a.add_argument(
        "files", nargs="+", type=given, metavar="FILE",
        help="sample files (answers.jsonl as the service wrote it, moved aside, with "
        '"label" added to the lines a person checked; a pod\'s each)',
    )  # fmt: skip
    a.add_argument(
        "--out", required=True, type=given,
        help="the training file to write (JSONL, a new file): list it under [data] new",
    )  # fmt: skip
    a.add_argument(
        "--skip-invalid", action="store_true",
        help="pass over lines that are no sample line (one a full disk cut short), listed "
        "(default: stop at the first, naming its file and line)",
    )  # fmt: skip
    a.add_argument("--json", action="store_true", help="one JSON object (default: lines)")
    a.set_defaults(func=cmd_answers)
