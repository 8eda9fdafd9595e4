"""absa evaluate: a model's scores on labelled files (an extractor's too)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from absa.cli.common import MODEL_DEFAULT, CLIError, given, model_dir, to_stdout
from absa.cli.data import data_info, of_categories, read_data


def cmd_evaluate(args: argparse.Namespace) -> int:
    from absa.cli.extract import cmd_evaluate_extract, is_extraction_model
    from absa.training.evaluate import evaluate, model_identity
    from absa.training.metrics import format_report

    model = model_dir(args.model)
    if is_extraction_model(model):
        if args.skip_invalid:  # the sentence readers stop at the first bad record
            raise CLIError("--skip-invalid is for sentiment models, not an extractor")
        return cmd_evaluate_extract(args, model)
    from absa.training.evaluate import model_categories, model_task

    task = model_task(model)
    read = read_data(args.data, args.skip_invalid, task)
    if task == "category":  # the model's categories: the readers know none
        skipped_as = "records of a category the model has not"
        of_categories(read, model_categories(model), args.skip_invalid, skipped_as)
    if not read.examples:  # every record skipped: a report of n = 0 would read as a result
        raise CLIError(f"no valid examples in --data ({len(read.skipped)} invalid, skipped)")
    examples = read.examples
    from absa.training.provenance import code_version

    rep = evaluate(model, examples, _files_of(examples, args.data))
    rep["model"] = str(model)
    rep["model_identity"] = model_identity(model)  # which model: the path serves another later
    rep["data"] = list(args.data)
    rep["files"] = data_info(args.data)  # path and sha256 of each file measured
    rep["skipped_invalid"] = len(read.skipped)
    rep["code_version"] = code_version()
    if args.json:
        to_stdout(json.dumps(rep) + "\n")
    else:
        to_stdout(format_report(rep) + "\n")
    return 0


def _files_of(examples: Sequence[Any], data: Sequence[str]) -> list[str] | None:
    """The --data file each example came from (its ``source`` is "FILE:where"), for a
    score of each file beside the pooled one; None for one file, or where one is unknown."""
    if len(data) < 2:
        return None
    longest_first = sorted(data, key=len, reverse=True)  # "d:1" is a prefix of "d:1:2"
    files = []
    for e in examples:
        found = next((f for f in longest_first if e.source.startswith(f"{f}:")), None)
        if found is None:
            return None
        files.append(found)
    return files


def register(sub: Any) -> None:
    e = sub.add_parser(
        "evaluate",
        help="accuracy, macro-F1, per-class scores, confusion matrix; for an extractor: "
        "exact-span precision / recall / F1",
    )
    e.add_argument(
        "--model", type=given, help=f"a run directory or an exported artifact ({MODEL_DEFAULT})"
    )
    e.add_argument(
        "--data",
        type=given,
        action="extend",
        nargs="+",
        required=True,
        help="labelled files, any format (required)",
    )
    e.add_argument("--json", action="store_true", help="print one JSON object (default: a table)")
    e.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip bad records and report them (default: stop at the first)",
    )
    e.set_defaults(func=cmd_evaluate)
