"""The labelled files a command reads (train, evaluate): read by the reader of the task,
records passed over said, category records named as the model names them, files recorded by
path and sha256."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from absa.cli.common import CLIError

if TYPE_CHECKING:
    from absa.training.records import Invalid, ReadResult

log = logging.getLogger("absa")


def read_data(paths: Sequence[str], skip_invalid: bool, task: str = "terms") -> ReadResult:
    from absa.training.category_readers import read_many_categories
    from absa.training.provenance import refuse_twice
    from absa.training.readers import read_many

    try:
        refuse_twice(paths)
    except ValueError as e:
        raise CLIError(str(e)) from None
    reader = read_many_categories if task == "category" else read_many
    res = reader(paths, skip_invalid=skip_invalid)
    log_skipped(res.skipped, "invalid records")
    return res


def of_categories(
    read: ReadResult, categories: list[str], skip_invalid: bool, skipped_as: str
) -> None:
    """A file's category examples (``read``) named as ``categories`` name them ("Food" is
    "food", as predict and the API read it); one of another category is refused, naming
    file and line, or with --skip-invalid skipped, logged as ``skipped_as`` and counted in
    ``read.skipped``. Shared by evaluate (the model's categories) and train's --dev and
    --eval (the training data's: they failed after training, --skip-invalid or not)."""
    from absa.training.evaluate import known_categories
    from absa.training.records import category_examples

    kept, unknown = known_categories(category_examples(read.examples), categories)
    read.examples = list(kept)
    if unknown and not skip_invalid:
        raise CLIError(f"{unknown[0].source}: {unknown[0].reason}")
    log_skipped(unknown, skipped_as)
    read.skipped.extend(unknown)


def log_skipped(skipped: Sequence[Invalid], what: str) -> None:
    """One warning for the records passed over, then the first 20 of them, file and line."""
    if skipped:
        log.warning("skipped %d %s", len(skipped), what)
    for bad in skipped[:20]:
        log.warning("  %s: %s", bad.source, bad.reason)
    if len(skipped) > 20:
        log.warning("  ... and %d more", len(skipped) - 20)


def data_info(paths: Sequence[str]) -> list[dict]:
    from absa.training.provenance import file_info

    return file_info(paths)
