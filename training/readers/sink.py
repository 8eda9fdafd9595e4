"""What the readers of one file collect: its examples, and its bad records (raised, or kept
as ``Invalid`` with ``skip_invalid``), with the counts its closing log lines give."""

from __future__ import annotations

import logging
from typing import Any

from absa.errors import InputError
from absa.model.aspects import check_unicode
from absa.model.text import TextError, check_span
from absa.training.readers.labels import CONFLICT, parse_label
from absa.training.records import DataError, Example, Invalid, ReadResult

logger = logging.getLogger(__name__)


class Sink:
    """Collects the examples of one file; a bad record raises or is recorded as ``Invalid``."""

    def __init__(self, path: str, skip_invalid: bool, *, keep_conflict: bool = False) -> None:
        self.path = path
        self.skip_invalid = skip_invalid
        self.keep_conflict = keep_conflict  # label() gives "conflict" rather than a drop
        self.result = ReadResult()
        self.conflicts = 0
        self.relocated = 0  # XML aspects whose from/to were wrong, found in the text instead
        self.repeated = 0  # 3-line sentences whose $T$ occurs more than once
        self.first_of_several = 0  # aspects without offsets that occur more than once
        self.first_several_where = ""  # the first of them
        self.labels: dict[
            tuple[str, int, int], tuple[str, str]
        ] = {}  # span -> first (label, where)
        self.disagree = 0  # spans labelled twice, differently
        self.first_disagree = ""  # where the first of them is, and what it disagrees with
        self.repeats = 0  # spans given again with the same label (kept, as the file has them)
        self.untargeted = 0  # SemEval-2015/2016 opinions with target NULL: categories alone

    def bad(self, where: str, reason: str, text: str | None = None) -> None:
        """``where``: the file and line (or sentence) at fault, which the error names and the
        ``Invalid`` skipped names too (a 3-line record's label line, not its first line);
        ``text``: the record's sentence, where it has one (kept with the ``Invalid``)."""
        if not self.skip_invalid:
            raise DataError(f"{where}: {reason}")
        logger.debug("skipping %s: %s", where, reason)
        self.result.skipped.append(Invalid(where, reason, text))

    def add(self, text: str, start: int, end: int, label: str, source: str, where: str) -> None:
        try:
            check_span(text, start, end)
        except TextError as e:
            self.bad(where, str(e), text)
            return
        try:  # a JSON "\ud800" escape: no file can hold it as UTF-8, nor can a run's
            check_unicode(text, "the text")
        except InputError as e:
            self.bad(where, str(e), text)
            return
        key = (text, start, end)
        if key not in self.labels:
            self.labels[key] = (label, where)
        else:
            first, first_where = self.labels[key]
            self.repeats += first == label
            if first != label and not self.disagree:
                self.first_disagree = f"{where} ({label}) against {first_where} ({first})"
            self.disagree += first != label
        self.result.examples.append(Example(text, start, end, label, source))

    def label(self, value: Any, where: str, text: str | None = None) -> str | None:
        """The normalised label, or None when the record is dropped (conflict) or bad
        (``text``: its sentence, as ``bad`` takes it)."""
        if isinstance(value, str) and value.strip().lower() == CONFLICT:
            if self.keep_conflict:
                return CONFLICT
            self.conflicts += 1
            return None
        try:
            return parse_label(value)
        except ValueError as e:
            self.bad(where, str(e), text)
            return None

    def finish(self, fmt: str) -> ReadResult:
        res = self.result
        if self.conflicts:
            logger.info("%s: dropped %d 'conflict' aspect(s)", self.path, self.conflicts)
        if self.relocated:
            logger.info(
                "%s: %d aspect(s) whose from/to did not mark the term, found where it occurs "
                "once in the text",
                self.path,
                self.relocated,
            )
        if self.first_of_several:
            logger.warning(
                "%s: %d aspect(s) without start/end occur more than once in their sentence "
                "(the first at %s): each labels its first occurrence; give start and end "
                "to label another",
                self.path,
                self.first_of_several,
                self.first_several_where,
            )
        if self.repeated:
            logger.info(
                "%s: %d sentence(s) with more than one $T$: each is the term, the first the one "
                "labelled",
                self.path,
                self.repeated,
            )
        if self.repeats:
            logger.info(
                "%s: %d record(s) repeat an earlier record exactly: kept",
                self.path,
                self.repeats,
            )
        if self.disagree:
            logger.warning(
                "%s: %d aspect span(s) given again with another label: both kept; first %s",
                self.path,
                self.disagree,
                self.first_disagree,
            )
        if self.untargeted:
            logger.info(
                "%s: %d opinion(s) without a target (NULL): aspect categories, no term (read "
                "with --task category)",
                self.path,
                self.untargeted,
            )
        if not res.examples and not res.skipped:
            extra = f" ({self.conflicts} 'conflict' aspect(s) dropped)" if self.conflicts else ""
            if self.untargeted:
                extra += (
                    f" ({self.untargeted} opinion(s) without a target: aspect categories, "
                    "no terms; train on them with --task category)"
                )
            raise DataError(f"{self.path}: no examples{extra}")
        if res.skipped:
            logger.warning(
                "%s: skipped %d invalid record(s), first: %s: %s",
                self.path,
                len(res.skipped),
                res.skipped[0].source,
                res.skipped[0].reason,
            )
        logger.info("%s: read %d example(s) (%s)", self.path, len(res.examples), fmt)
        return res
