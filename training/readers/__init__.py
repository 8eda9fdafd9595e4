"""Readers for labelled aspect data: SemEval-2014 XML (and MAMS), 3-line, JSONL and CSV.

Every reader yields ``Example`` records (``text[start:end]`` is the aspect term, the label is
one of ``model.text.LABELS``) collected in a ``ReadResult``. A bad record raises ``DataError``
naming the file and the line (or, for XML, the sentence id and the line), unless
``skip_invalid=True``: then it is recorded as an ``Invalid`` in ``ReadResult.skipped`` and
reading goes on. Problems with the file as a whole (missing, not UTF-8, malformed XML, no
examples at all) always raise ``DataError``.

Formats (``fmt``; ``None`` picks one from the file's extension, see ``detect_format``):

- ``"xml"``: SemEval-2014 Task 4 / MAMS: ``<sentence id><text>..</text><aspectTerms>
  <aspectTerm term polarity from to/></aspectTerms></sentence>``. ``from``/``to`` are
  character offsets into the text. Sentences without aspect terms are skipped. Aspect
  terms labelled ``conflict`` are dropped (the standard 3-class protocol) and counted
  in a log line. SemEval-2015/2016 XML (``<Opinions><Opinion target category polarity
  from to/>``, one opinion per target and category) is read in the same pass: each target
  once, a ``conflict`` where its opinions disagree; target ``NULL`` names no term.
- ``"3line"``: three lines per example: the sentence with the aspect replaced by ``$T$``,
  the aspect term, the polarity (``-1/0/1`` or ``negative/neutral/positive``, any case).
- ``"jsonl"``: one JSON object per line with ``text``, ``aspect`` (or ``term``), ``label``
  (or ``polarity``) and optional ``start``/``end``.
- ``"csv"``: a header row naming the same columns as JSONL, then one row per example.

A module a part: ``files`` (a file's bytes and text), ``labels``, ``sink`` (what the readers of
one file collect), one a format (``semeval_xml``, ``threeline``, ``tables``: JSONL and CSV);
the same sentence across sets (test sentences dropped from training) is ``absa.training.overlap``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from absa.training.readers.files import decode, read_bytes, suffix_hint
from absa.training.readers.labels import CONFLICT, label_counts, missing_labels, parse_label
from absa.training.readers.semeval_xml import read_xml
from absa.training.readers.sink import Sink
from absa.training.readers.tables import json_line, read_csv, read_jsonl
from absa.training.readers.threeline import PLACEHOLDER, read_3line
from absa.training.records import DataError, ReadResult

__all__ = [
    "CONFLICT",
    "FORMATS",
    "PLACEHOLDER",
    "detect_format",
    "json_line",
    "label_counts",
    "missing_labels",
    "parse_label",
    "read_examples",
    "read_many",
]

logger = logging.getLogger(__name__)

FORMATS: tuple[str, ...] = ("xml", "3line", "jsonl", "csv")
_EXTENSIONS = {".xml": "xml", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv"}


def detect_format(path: str | Path) -> str:
    """The format a file's extension implies: ``.xml`` -> xml, ``.jsonl``/``.json`` -> jsonl,
    ``.csv`` -> csv, anything else (``.seg``, ``.raw``, ``.txt``, ...) -> 3line."""
    return _EXTENSIONS.get(Path(path).suffix.lower(), "3line")


def read_examples(
    path: str | Path, fmt: str | None = None, *, skip_invalid: bool = False
) -> ReadResult:
    """Read one file of labelled aspects.

    ``fmt`` is one of ``FORMATS`` or ``None`` to detect it from the extension. Each example's
    ``source`` is ``"path:line"`` (XML: ``"path:sentence_id"``, or ``"path:line"`` for a
    sentence without an id, as in MAMS). Labels are normalised to ``LABELS``; ``conflict``
    aspects are dropped and counted in a log line.

    JSONL/CSV records without ``start``/``end`` locate the aspect with
    ``absa.model.aspects.find_all`` (case-insensitive, whole words preferred) and, when it occurs
    several times, use the FIRST occurrence. With ``start``/``end``, ``text[start:end]``
    must equal the aspect exactly.

    Raises ``DataError`` naming the file (and line) for a missing or unreadable file,
    non-UTF-8 bytes, malformed XML, a file with no examples at all, and, unless
    ``skip_invalid`` is set, for any bad record. Raises ``ValueError`` for an unknown ``fmt``.
    """
    return read_file(path, fmt, skip_invalid=skip_invalid)


def read_file(
    path: str | Path, fmt: str | None, *, skip_invalid: bool, keep_conflict: bool = False
) -> ReadResult:
    """``read_examples``; with ``keep_conflict`` a ``conflict`` aspect is an example labelled
    ``conflict`` (checked as any other) instead of a drop: for the sentence-level span readers
    (``absa.training.sentences``), never for training a classifier."""
    path_str = str(path)
    fmt = detect_format(path) if fmt is None else fmt.strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    data = read_bytes(path_str)
    sink = Sink(path_str, skip_invalid, keep_conflict=keep_conflict)
    try:
        if fmt == "xml":
            read_xml(data, sink)
        elif fmt == "3line":
            read_3line(decode(data, path_str), sink)
        elif fmt == "jsonl":
            read_jsonl(decode(data, path_str), sink)
        else:
            read_csv(decode(data, path_str), sink)
        result = sink.finish(fmt)
    except DataError as e:
        hint = suffix_hint(data, fmt)
        if hint is None:
            raise
        raise DataError(f"{e}; {hint}") from None
    if not result.examples and result.skipped and (hint := suffix_hint(data, fmt)):
        logger.warning("%s: every record was skipped; %s", path_str, hint)
    return result


def read_many(
    paths: Iterable[str | Path] | str | Path,
    fmt: str | None = None,
    *,
    skip_invalid: bool = False,
) -> ReadResult:
    """Read several files (each as ``read_examples`` would) and concatenate the results in order.

    ``fmt`` applies to every file; ``None`` detects each file's format on its own.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ValueError("read_many: no paths given")
    out = ReadResult()
    for p in paths:
        res = read_examples(p, fmt, skip_invalid=skip_invalid)
        out.examples.extend(res.examples)
        out.skipped.extend(res.skipped)
    return out
