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
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar
from xml.etree import ElementTree as ET
from xml.parsers import expat

from absa.errors import InputError
from absa.model.aspects import check_unicode, occurrences, pinned, shown_value, whole_offset
from absa.model.csvio import ROW_INSIDE, any_field_length, row_inside
from absa.model.jsonio import DuplicateKey, unique_keys
from absa.model.text import LABELS, TextError, check_span
from absa.training.records import DataError, Example, Invalid, Labelled, ReadResult

__all__ = [
    "FORMATS",
    "detect_format",
    "label_counts",
    "parse_label",
    "read_examples",
    "read_many",
]

logger = logging.getLogger(__name__)

FORMATS: tuple[str, ...] = ("xml", "3line", "jsonl", "csv")
PLACEHOLDER = "$T$"
CONFLICT = "conflict"
#: SemEval-2015/2016's target of an opinion the sentence names no term for (a category alone)
NULL_TARGET = "NULL"

_EXTENSIONS = {".xml": "xml", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv"}
_NUMERIC_LABELS = {"-1": "negative", "0": "neutral", "1": "positive", "+1": "positive"}
_TEXT_KEYS = ("text",)
_ASPECT_KEYS = ("aspect", "term")
_LABEL_KEYS = ("label", "polarity")
#: a span's offsets, by their names here and SemEval's ("from"/"to" were ignored, and the
#: first occurrence taken)
_START_KEYS = ("start", "from")
_END_KEYS = ("end", "to")
_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)  # FF FE 00 00 starts as UTF-16 LE's
_XML_ENCODING_RE = re.compile(rb"""^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def parse_label(value: object) -> str:
    """Normalise a polarity to one of ``LABELS``.

    Accepts ``negative/neutral/positive`` in any case and ``-1/0/1`` as ints or strings.
    Raises ``ValueError`` for anything else, ``conflict`` included.
    """
    if isinstance(value, float) and value.is_integer():  # pandas' float column: 1.0
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"unknown label {value!r} (expected one of {'/'.join(LABELS)} or -1/0/1)")
    key = str(value).strip().lower()
    if key in LABELS:
        return key
    if key in _NUMERIC_LABELS:
        return _NUMERIC_LABELS[key]
    whole = whole_offset(key)  # "1.0", as pandas writes a float column to CSV
    if whole is not None and str(whole) in _NUMERIC_LABELS:
        return _NUMERIC_LABELS[str(whole)]
    if key == CONFLICT:
        raise ValueError(f"{CONFLICT!r} is not a supported label (only {'/'.join(LABELS)})")
    raise ValueError(f"unknown label {value!r} (expected one of {'/'.join(LABELS)} or -1/0/1)")


def label_counts(examples: Iterable[Example]) -> dict[str, int]:
    """How many examples carry each label, every label in ``LABELS`` order (zeros included)."""
    counts = dict.fromkeys(LABELS, 0)
    for ex in examples:
        counts[ex.label] += 1
    return counts


def missing_labels(
    examples: Iterable[Labelled], labels: Sequence[str]
) -> tuple[list[str], dict[str, int]]:
    """The model's ``labels`` that ``examples`` hold no example of, and how many each label
    has (``labels`` first, zeros included; any other label after them)."""
    counts = dict.fromkeys(labels, 0)
    for ex in examples:
        counts[ex.label] = counts.get(ex.label, 0) + 1
    return [lab for lab in labels if not counts[lab]], counts


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
    return _read_file(path, fmt, skip_invalid=skip_invalid)


def _read_file(
    path: str | Path, fmt: str | None, *, skip_invalid: bool, keep_conflict: bool = False
) -> ReadResult:
    """``read_examples``; with ``keep_conflict`` a ``conflict`` aspect is an example labelled
    ``conflict`` (checked as any other) instead of a drop: for the sentence-level span readers
    (``absa.training.sentences``), never for training a classifier."""
    path_str = str(path)
    fmt = detect_format(path) if fmt is None else fmt.strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    data = _read_bytes(path_str)
    sink = _Sink(path_str, skip_invalid, keep_conflict=keep_conflict)
    try:
        if fmt == "xml":
            _read_xml(data, sink)
        elif fmt == "3line":
            _read_3line(_decode(data, path_str), sink)
        elif fmt == "jsonl":
            _read_jsonl(_decode(data, path_str), sink)
        else:
            _read_csv(_decode(data, path_str), sink)
        result = sink.finish(fmt)
    except DataError as e:
        hint = _suffix_hint(data, fmt)
        if hint is None:
            raise
        raise DataError(f"{e}; {hint}") from None
    if not result.examples and result.skipped and (hint := _suffix_hint(data, fmt)):
        logger.warning("%s: every record was skipped; %s", path_str, hint)
    return result


def _suffix_hint(data: bytes, fmt: str) -> str | None:
    """Where a file read as ``fmt`` (its suffix's format) reads as another one by its first
    character, which suffix to give it (or, UTF-16 but no XML, which encoding)."""
    if data.startswith(_GZIP_MAGIC) or _wide(data):  # said already
        return None
    if data.startswith(_UTF16_BOMS) and fmt != "xml":  # expat reads UTF-16; no other does
        opening = data[:64].decode("utf-16", errors="replace").lstrip(" \t\r\n")
        if opening[:1] != "<":
            return "it is UTF-16: save it as UTF-8"
        return "it looks like XML: name it .xml"
    if data.startswith(_UTF16_BOMS):
        return None
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:2]
    head = start[:1]
    # a tag, a declaration or a comment; a sentence may open with "<3", or "[Update]"
    if re.match(rb"<[?!A-Za-z_]", start):
        return None if fmt == "xml" else "it looks like XML: name it .xml"
    if fmt == "xml":
        return (
            "it does not look like XML (the format follows the suffix): 3-line files are "
            "named .raw, .seg or .txt, JSON lines .jsonl, CSV .csv"
        )
    if (head == b"{" or re.match(rb"\[[\s{\[\"0-9tfn-]", start)) and fmt != "jsonl":
        return "it looks like JSON: name it .jsonl"
    if fmt == "3line":  # a table's header on the first line: named .txt or .tsv, say
        first = data.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].lower()
        cells = {c.strip(b' "') for c in re.split(rb"[,\t;]", first)}
        if b"text" in cells and cells & {b"aspect", b"term"}:
            if b"," in first:
                return "its first line looks like a CSV header: name it .csv"
            return "its first line looks like a table's header: save it as CSV named .csv"
    return None


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


# --------------------------------------------------------------------------- internals


class _Sink:
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


def _read_bytes(path: str) -> bytes:
    p = Path(path)
    try:
        special = p.exists() and not (p.is_file() or p.is_dir())
    except OSError:  # a folder on the way that cannot be searched: read_bytes names it
        special = False
    if special:
        # runs record each file's sha256, read again later: a pipe is empty by then (and one
        # with no writer would be waited on), so the record would name no bytes read
        raise DataError(
            f"{path}: not a regular file (a named pipe or a device): write it to a file first"
        )
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, not a data file") from None
    except OSError as e:  # its cause kept: the CLI exits 75 on a stale handle or EIO
        raise DataError(f"{path}: cannot read: {e.strerror or e}") from e
    if data.startswith(_PARQUET_MAGIC):  # read as text, "truncated record" or "not UTF-8"
        raise DataError(
            f"{path}: a Parquet file: training and evaluation read SemEval XML, 3-line, JSONL "
            "or CSV (absa predict reads Parquet); write it as JSONL"
        )
    return data


def _wide(data: bytes) -> str | None:
    """What a file in 2 or 4 bytes a character is where no reader here reads it: "UTF-32"
    (with or without its byte-order mark; expat reads no UTF-32 either), "UTF-16 without a
    byte-order mark" (NUL bytes between the characters of a mostly ASCII text); None for
    anything else (UTF-16 with its mark: expat reads it, and the hints say the rest)."""
    if data.startswith(_UTF32_BOMS):
        return "UTF-32"
    if data.startswith(_UTF16_BOMS):
        return None
    head = data[:400]
    nuls = head.count(0)
    if not head or nuls * 4 < len(head):
        return None
    # ASCII text: 3 of 4 bytes NUL in UTF-32, 1 of 2 in UTF-16
    wide = "UTF-32" if nuls * 3 >= len(head) * 2 else "UTF-16"
    return f"{wide} without a byte-order mark"


def _refuse_wide(data: bytes, path: str) -> None:
    """UTF-32 and BOM-less UTF-16 named as such: read as UTF-8 their NUL bytes made "bad
    JSON" at column 2 or "no $T$ placeholder" (and UTF-32's mark read as UTF-16's)."""
    wide = _wide(data)
    if wide is not None:
        raise DataError(f"{path}:1: it is {wide}: save it as UTF-8")


def _refuse_compressed(data: bytes, path: str) -> None:
    """A gzip file read as text fails on its second byte: say what the file is instead."""
    if data.startswith(_GZIP_MAGIC):
        raise DataError(f"{path}: gzip-compressed; decompress it first")


def _decode(data: bytes, path: str) -> str:
    """UTF-8 text (a leading BOM is dropped, and one at the start of a later line, as files
    joined with ``cat`` leave, with a warning); bad bytes raise a DataError with the line, a
    gzip file says so, UTF-32 and UTF-16 without a byte-order mark too."""
    _refuse_compressed(data, path)
    _refuse_wide(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})"
        ) from None
    text = text.removeprefix("\ufeff")
    if "\n\ufeff" in text:
        line = text.count("\n", 0, text.index("\n\ufeff")) + 2
        n = text.count("\n\ufeff")
        logger.warning(
            "%s:%d: a byte-order mark starts the line (files joined?): dropped there and at "
            "the start of %d other line(s)", path, line, n - 1,
        )  # fmt: skip
        text = text.replace("\n\ufeff", "\n")
    return text


def _refuse_bare_cr(text: str, path: str) -> None:
    """A file whose line breaks are CR alone (classic Mac OS) is one line when split on
    ``\\n``: say so, rather than "truncated record: 1 line(s)" or "bad JSON: Extra data"."""
    body = text.rstrip()
    if "\r" in body and "\n" not in body:
        raise DataError(
            f"{path}:1: the line breaks are CR alone (old Mac style), not LF or CRLF: "
            "convert them (e.g. mac2unix) and read it again"
        )


def _physical_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (so numbering matches editors), trailing whitespace removed."""
    return [line.rstrip() for line in text.split("\n")]


# --------------------------------------------------------------------------- 3-line


_THREE_LINES = "(sentence with $T$, aspect term, polarity)"


def _read_3line(text: str, sink: _Sink) -> None:
    path = sink.path
    _refuse_bare_cr(text, path)
    lines = _physical_lines(text)
    while lines and not lines[-1]:
        lines.pop()
    i = 0
    while i < len(lines):
        if not lines[i].strip():  # a blank line between records (a sentence is never blank)
            i += 1
            continue
        if len(lines) - i < 3:
            have = sum(1 for line in lines[i:] if line.strip())
            why = f"truncated record: {have} line(s) where 3 are expected"
            sink.bad(f"{path}:{i + 1}", f"{why} {_THREE_LINES}")
            break
        first = i + 1  # 1-based line of the record's sentence
        source = f"{path}:{first}"
        sentence, term, polarity = lines[i], lines[i + 1].strip(), lines[i + 2]
        # a record short of a line: the next sentence comes in its place, and the reader goes
        # on from there (three lines at a time, every record after it was read lines off)
        ahead = next((k for k in (1, 2) if PLACEHOLDER in lines[i + k]), None)
        start = sentence.find(PLACEHOLDER)
        if start < 0:  # the line is a whole sentence
            i += ahead or 3
            why = f"no {PLACEHOLDER} placeholder in the sentence"
            sink.bad(f"{path}:{first}", why, sentence)
            continue
        if ahead is not None:
            i += ahead
            missing = "aspect term and polarity lines" if ahead == 1 else "term or polarity line"
            why = f"its {missing} missing: line {first + ahead} is the next sentence"
            sink.bad(f"{path}:{first + 1}", why, sentence)
            continue
        i += 3
        if not term:
            sink.bad(f"{path}:{first + 1}", "empty aspect term")
            continue
        full_text = sentence.replace(PLACEHOLDER, term)
        label = sink.label(polarity, f"{path}:{first + 2}", full_text)
        if label is None:
            continue
        sink.repeated += sentence.count(PLACEHOLDER) > 1
        sink.add(full_text, start, start + len(term), label, source, f"{path}:{first}")


# --------------------------------------------------------------------------- JSONL / CSV


def _pick(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:  # an empty cell falls through to the next name, as a null does
        value = record.get(key)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            return value
    return None


def _offset_names(record: dict[str, Any]) -> str:
    """The names ``record`` gives its offsets under ("'from' and 'to'"): each the first of
    its names with a value; one given alone is named with its partner ('from' with 'to')."""
    start = [i for i, k in enumerate(_START_KEYS) if _pick(record, (k,)) is not None]
    end = [i for i, k in enumerate(_END_KEYS) if _pick(record, (k,)) is not None]
    i, j = (start or end or [0])[0], (end or start or [0])[0]
    return f"{_START_KEYS[i]!r} and {_END_KEYS[j]!r}"


def _as_offsets(names: str) -> str:
    """What ``names`` are read as, where they are the SemEval ones ('from', 'to'), which a
    file may hold for something else (a guest's country, a date)."""
    if names == "'start' and 'end'":
        return ""
    return " (read as the aspect's start and end offsets: rename a column that means another thing)"


def _disagreeing(record: dict[str, Any]) -> str | None:
    """Two names of one field given other values ("aspect": "food", "term": "staff"), said;
    the first was taken, without a word. None where each field has one value."""
    for keys in (_ASPECT_KEYS, _LABEL_KEYS, _START_KEYS, _END_KEYS):
        given = [k for k in keys if _pick(record, (k,)) is not None]
        values = {json.dumps(record[k]).strip('" ') for k in given}
        if len(values) > 1:
            shown = ", ".join(shown_value(record[k]) for k in given)
            return f"{given[0]!r} and {given[1]!r} disagree ({shown}): give one"
    return None


def _as_offset(value: Any) -> int:
    """``whole_offset``, as predict reads an offset; ValueError for what is none."""
    offset = whole_offset(value)
    if offset is None:
        raise ValueError
    return offset


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


#: turns one JSONL object into an example (or a drop, or a bad record) in the sink
RecordHandler = Callable[[dict[str, Any], "_Sink", str, str], None]


def _add_record(record: dict[str, Any], sink: _Sink, source: str, where: str) -> None:
    """One JSONL object or CSV row (both as dicts) -> an example, a drop, or a bad record."""
    text = _pick(record, _TEXT_KEYS)
    aspect = _pick(record, _ASPECT_KEYS)
    raw_label = _pick(record, _LABEL_KEYS)
    disagree = _disagreeing(record)
    if disagree is not None:
        sink.bad(where, disagree, _str_or_none(text))
        return
    for name, value in (("text", text), ("aspect", aspect)):
        if value is not None and not isinstance(value, str):
            got = json.dumps(value)[:40]
            sink.bad(where, f"{name!r} is not a string: {got}", _str_or_none(text))
            return
    if not isinstance(text, str) or not text.strip():
        sink.bad(where, "missing or empty 'text'")
        return
    if not isinstance(aspect, str) or not aspect.strip():
        sink.bad(where, "missing or empty 'aspect' (or 'term')", text)
        return
    if raw_label is None or raw_label == "":
        sink.bad(where, "missing 'label' (or 'polarity')", text)
        return
    label = sink.label(raw_label, where, text)
    if label is None:
        return
    aspect = aspect.strip()  # a CSV's "text, aspect, ..." leaves a space before each value
    raw_start, raw_end = _pick(record, _START_KEYS), _pick(record, _END_KEYS)
    if raw_start in (None, "") and raw_end in (None, ""):
        try:
            found = occurrences(text, aspect)
        except InputError as e:
            sink.bad(where, str(e), text)
            return
        start, end = found[0].start, found[0].end  # several occurrences: the first one
        if len(found) > 1:
            sink.first_several_where = sink.first_several_where or where
            sink.first_of_several += 1
    else:
        names = _offset_names(record)
        if raw_start in (None, "") or raw_end in (None, ""):
            sink.bad(where, f"give both {names} or neither{_as_offsets(names)}", text)
            return
        try:
            start, end = _as_offset(raw_start), _as_offset(raw_end)
        except ValueError:
            got = f"{shown_value(raw_start)}, {shown_value(raw_end)}"
            sink.bad(where, f"{names} must be integers{_as_offsets(names)}, got {got}", text)
            return
        try:  # as predict and the API check a pinned span (a letter cut from its mark too)
            pinned(text, aspect, start, end)
        except InputError as e:
            sink.bad(where, str(e), text)
            return
    sink.add(text, start, end, label, source, where)


def json_line(line: str) -> object:
    """One JSONL line's value; ValueError saying what is wrong ("bad JSON: ...", with the
    column, or that it is nested too deeply to read; or a key given twice in one object,
    which is JSON, but no one knows which value was meant)."""
    try:
        return json.loads(line, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        raise ValueError(f"bad JSON: {e.msg} (column {e.colno})") from None
    except DuplicateKey as e:  # a key given twice: the model/jsonio helper the scorer shares
        raise ValueError(str(e)) from None
    except RecursionError:
        raise ValueError("bad JSON: nested too deeply to read") from None
    except ValueError:  # an integer longer than Python reads (sys.get_int_max_str_digits)
        digits = sys.get_int_max_str_digits()
        raise ValueError(f"bad JSON: a number of more than {digits} digits") from None


def _json_document(text: str, path: str) -> None:
    """Refuse a file that is one JSON document spread over several lines (a pretty-printed
    list, as a ``.json`` file often is): each of its lines would be "bad JSON"."""
    if text.count("\n", 0, len(text.rstrip())) == 0:
        return  # one line: its own error (or record) says what it is
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return
    kinds: dict[type, str] = {list: "list", dict: "object"}
    kind = kinds.get(type(value), type(value).__name__)
    raise DataError(
        f"{path}:1: one JSON document (a {kind}) over several lines, not JSON Lines: "
        "expected one JSON object a line"
    )


def _read_jsonl(text: str, sink: _Sink, add: RecordHandler | None = None) -> None:
    """Each line's object handed to ``add`` (default: an aspect-term record)."""
    add = add or _add_record
    path = sink.path
    _refuse_bare_cr(text, path)
    first = True  # the first line that is not blank
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        was_first, first = first, False
        try:
            record = json_line(line)
        except ValueError as e:
            if was_first:  # is the file one JSON document over several lines?
                _json_document(text, path)
            sink.bad(where, str(e))
            continue
        if not isinstance(record, dict):
            sink.bad(where, f"expected a JSON object, got {type(record).__name__}")
            continue
        add(record, sink, where, where)


#: the columns an aspect-term CSV needs: one name of each group
_TERM_COLUMNS = (_TEXT_KEYS, _ASPECT_KEYS, _LABEL_KEYS)


def _read_csv(
    text: str,
    sink: _Sink,
    add: RecordHandler | None = None,
    columns: tuple[tuple[str, ...], ...] = _TERM_COLUMNS,
) -> None:
    """Each row after the header, as a dict, handed to ``add`` (default: an aspect-term
    record); the header must name one column of each group in ``columns``. Strict quoting:
    a quote never closed is an error at the line its row starts on, not a field holding the
    rest of the file."""
    add = add or _add_record
    path = sink.path
    any_field_length()  # a long text is for the text-length limits to refuse, not the reader
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    prev = 0  # physical line the previous row ended on
    header: list[str] | None = None
    try:
        for row in reader:
            first, prev = prev + 1, reader.line_num
            if not row:
                continue  # blank line
            if not any(cell.strip() for cell in row):
                if header is not None:
                    where = f"{path}:{first}"
                    sink.bad(where, "every field is empty")
                continue  # before the header: a blank line
            if header is None:
                header = [cell.strip().lower() for cell in row]
                _check_header(header, f"{path}:{first}", columns)
                continue
            where = f"{path}:{first}"
            why = _swallowed(row, header, first, reader.line_num, columns)
            if why:
                sink.bad(where, why)
                continue
            add(dict(zip(header, row, strict=True)), sink, where, where)
    except csv.Error as e:
        start = prev + 1  # the row being read when the csv module gave up
        unclosed = str(e) == "unexpected end of data"
        why = " (a quoted field opened in this row is never closed)" if unclosed else ""
        raise DataError(f"{path}:{start}: bad CSV in the row starting here: {e}{why}") from None
    if header is None:
        raise DataError(f"{path}: no examples (empty CSV file, not even a header)")


def _swallowed(
    row: list[str], header: list[str], first: int, last: int, columns: tuple[tuple[str, ...], ...]
) -> str:
    """What is wrong with a record not of the header's width or with a line inside it that
    reads as a row of its own (a quote left open, up to the next quote: the row is gone
    into a field), naming the lines it runs over; "" where nothing is."""
    runs = f"it runs from line {first} to line {last}: a quote not closed?"
    if len(row) != len(header):
        over = f" ({runs})" if last > first else ""
        return f"{len(row)} field(s) where the header has {len(header)}{over}"
    if last == first or columns is not _TERM_COLUMNS:
        return ""
    text_at = header.index("text")
    aspect_at = next(header.index(k) for k in _ASPECT_KEYS if k in header)
    inside = row_inside(row, len(header), text_at, aspect_at)
    if inside is None:
        return ""
    return ROW_INSIDE.format(line=f"line {first + inside}") + f" (it runs to line {last})"


def _check_header(
    header: list[str], where: str, columns: tuple[tuple[str, ...], ...] = _TERM_COLUMNS
) -> None:
    missing = ["/".join(keys) for keys in columns if not any(k in header for k in keys)]
    if missing:
        raise DataError(
            f"{where}: the CSV header lacks the column(s) {', '.join(missing)} "
            f"(header: {', '.join(header)})"
        )
    # empty names aside: a spreadsheet's trailing commas ("text,aspect,label,,")
    dupes = sorted({h for h in header if h and header.count(h) > 1})
    if dupes:
        raise DataError(f"{where}: duplicate CSV column(s) {', '.join(dupes)}")


# --------------------------------------------------------------------------- XML


#: encodings (by codecs' name) where every byte is a character: UTF-8's bytes read as
#: mojibake ("café" as "cafÃ©") without an error
_ONE_BYTE_LATIN = frozenset({"iso8859-1", "iso8859-15", "cp1252", "iso8859-2", "cp1250"})


def _warn_if_utf8(data: bytes, path: str, declared: str) -> None:
    """A warning where a file declared in a one-byte encoding holds non-ASCII bytes that
    read as UTF-8 (an editor that kept the old declaration): read as declared, its words
    are mojibake. Valid UTF-8 by chance is rare in Latin text ("Ã©" written on purpose)."""
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return
    logger.warning(
        "%s: declares encoding %r, but its bytes read as UTF-8: read as declared, its "
        'non-ASCII words may be garbled ("cafÃ©"); if so, declare encoding="UTF-8"',
        path,
        declared,
    )


class _SkippedEntity(Exception):  # noqa: N818 - (name, line), turned into a DataError
    """An entity the parser skipped: (its name, the line)."""


def _parse_xml(data: bytes, path: str) -> tuple[ET.Element, dict[int, int]]:
    """The element tree plus the 1-based start line of every element (keyed by ``id``).

    Built with expat and ``ElementTree.TreeBuilder`` because ElementTree's own parser
    keeps no line numbers, and error messages should point at the offending line.
    """
    _refuse_compressed(data, path)
    source: bytes | str = data
    wide = _wide(data)
    if wide is not None and not wide.startswith("UTF-16"):
        _refuse_wide(data, path)  # UTF-32: expat reads none
    if wide is not None:  # UTF-16 without its mark: read here, its order from the first NUL
        declared = "utf-16"
        order = "utf-16-be" if data[:1] == b"\0" else "utf-16-le"
        try:
            source = data.decode(order)
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not valid {order.upper()} (offset {e.start})") from None
    elif data.startswith(_UTF16_BOMS):  # expat reads UTF-16 itself, told by the BOM
        declared = "utf-16"
    else:
        match = _XML_ENCODING_RE.match(data)
        declared = match.group(1).decode("ascii").lower() if match else "utf-8"
        try:
            codecs.lookup(declared)
        except LookupError:
            raise DataError(
                f"{path}:1: unknown encoding {declared!r} in the XML declaration"
            ) from None
        if declared.replace("_", "-") in ("utf-8", "utf8"):
            source = _decode(data, path)
        elif codecs.lookup(declared).name in _ONE_BYTE_LATIN:
            _warn_if_utf8(data, path, declared)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.buffer_text = True
    lines: dict[int, int] = {}

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = builder.start(tag, attrs)
        lines[id(element)] = parser.CurrentLineNumber

    def skipped(name: str, is_parameter_entity: bool) -> None:
        # a DOCTYPE that points outside the file: expat skips an entity it cannot define
        # ("caf&eacute;" read as "caf", spans moved), where without it it is an error
        if not is_parameter_entity:
            raise _SkippedEntity(name, parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.SkippedEntityHandler = skipped
    try:
        parser.Parse(source, True)
    except _SkippedEntity as e:
        name, line = e.args
        raise DataError(
            f"{path}:{line}: entity &{name}; is not defined: a DOCTYPE's outside definitions "
            "are not read (write the character itself, or &#NNN;)"
        ) from None
    except expat.ExpatError as e:
        raise DataError(
            f"{path}:{e.lineno}: malformed XML: {expat.ErrorString(e.code)} "
            f"(line {e.lineno}, column {e.offset + 1})"
        ) from None
    except (LookupError, ValueError) as e:
        # an encoding Python knows that expat cannot read through (LookupError), or one
        # expat refuses outright ("multi-byte encodings are not supported": shift_jis, ...)
        raise DataError(f"{path}:1: cannot read the declared encoding {declared!r}: {e}") from None
    return builder.close(), lines


def _exact_occurrences(text: str, term: str) -> list[int]:
    starts, i = [], text.find(term)
    while i >= 0:
        starts.append(i)
        i = text.find(term, i + 1)
    return starts


def _read_xml(data: bytes, sink: _Sink) -> None:
    path = sink.path
    root, lines = _parse_xml(data, path)
    sentences = list(root.iter("sentence"))
    if not sentences:
        raise DataError(f"{path}: no <sentence> elements (expected SemEval-2014 style XML)")
    for sentence in sentences:
        aspects = [
            a for terms in sentence.findall("aspectTerms") for a in terms.findall("aspectTerm")
        ] or opinion_terms(sentence, lines, sink)
        if not aspects:
            continue  # a sentence without aspect terms is not an error
        sid = sentence.get("id")
        s_line = lines[id(sentence)]
        source = f"{path}:{sid}" if sid else f"{path}:{s_line}"
        where = _xml_where(path, sid, s_line)
        texts = sentence.findall("text")
        text = texts[0].text if texts else None
        why = None
        if len(texts) > 1 or (texts and len(texts[0])):
            why = f"{len(texts)} <text> elements" if len(texts) > 1 else "markup inside <text>"
            why += ": the offsets would not say into which text"
        elif text is None or not text.strip():
            why = "sentence has no <text> or it is empty"
        if why is not None:
            for _ in aspects:  # each of its aspects is a record skipped (and counted)
                sink.bad(where, why)
            continue
        assert text is not None  # a sentence without one has its why above
        for aspect in aspects:
            _xml_aspect(aspect, text, sink, source, _xml_where(path, sid, lines[id(aspect)]))


def _opinions(sentence: ET.Element) -> list[ET.Element]:
    return [o for ops in sentence.findall("Opinions") for o in ops.findall("Opinion")]


def opinions_merged(
    sentence: ET.Element, lines: dict[int, int], key: str, tag: str, named: dict[str, str]
) -> list[ET.Element]:
    """A SemEval-2015/2016 sentence's ``<Opinion>``s (one per target and category) as one
    element ``tag`` per value of the attribute ``key`` (attributes renamed by ``named``), in
    the order first written, on the line of its first opinion: with their polarity where the
    opinions agree, ``conflict`` where they do not (dropped as SemEval-2014's conflict is)."""
    groups: dict[object, list[ET.Element]] = {}
    for opinion in _opinions(sentence):
        value = opinion.get(key)
        group = (value, opinion.get("from"), opinion.get("to")) if key == "target" else value
        # an opinion without the attribute is its own record (the reader names what it lacks)
        groups.setdefault(group if value is not None else object(), []).append(opinion)
    merged: list[ET.Element] = []
    for members in groups.values():
        first = members[0]
        polarities = {(o.get("polarity") or "").strip().lower() for o in members}
        attrs = {named.get(k, k): v for k, v in first.attrib.items()}
        if len(polarities) > 1 and "" not in polarities:
            attrs["polarity"] = CONFLICT
        elif "" in polarities:
            attrs.pop("polarity", None)
        element = ET.Element(tag, attrs)
        lines[id(element)] = lines[id(first)]
        merged.append(element)
    return merged


def opinion_terms(sentence: ET.Element, lines: dict[int, int], sink: _Sink) -> list[ET.Element]:
    """A SemEval-2015/2016 sentence's aspect terms: its opinions' targets, each once (see
    ``opinions_merged``); a target ``NULL`` names no term (the opinion is a category alone:
    counted in ``sink.untargeted``)."""
    terms = opinions_merged(sentence, lines, "target", "aspectTerm", {"target": "term"})
    kept = [t for t in terms if t.get("term") != NULL_TARGET]
    sink.untargeted += sum(o.get("target") == NULL_TARGET for o in _opinions(sentence))
    return kept


def _xml_where(path: str, sid: str | None, line: int) -> str:
    """Where a bad XML record is: the sentence id and the line, or just the line without an id."""
    return f"{path}: sentence {sid} (line {line})" if sid else f"{path}:{line}"


def _xml_aspect(aspect: ET.Element, text: str, sink: _Sink, source: str, where: str) -> None:
    term = aspect.get("term")
    if term is None or not term.strip():
        sink.bad(where, "aspectTerm without a 'term'", text)
        return
    polarity = aspect.get("polarity")
    if polarity is None:
        sink.bad(where, f"aspectTerm {term!r} has no 'polarity'", text)
        return
    label = sink.label(polarity, where, text)
    if label is None:
        return
    # read as every other reader reads offsets ("18.0" too)
    start = whole_offset(aspect.get("from", ""))
    end = whole_offset(aspect.get("to", ""))
    if start is None or end is None:
        start, end = -1, -1
    # offsets that mark the term but for its case ("Food" at 0-4 for term "food") keep
    # their place: the one exact "food" elsewhere is another aspect
    marked = 0 <= start < end <= len(text) and text[start:end].casefold() == term.casefold()
    if not marked:
        found = _exact_occurrences(text, term)
        if len(found) != 1:
            how = "does not occur" if not found else f"occurs {len(found)} times"
            sink.bad(
                where,
                f"aspectTerm {term!r}: from={aspect.get('from')!r} to={aspect.get('to')!r} "
                f"do not mark it in the text and it {how} there",
                text,
            )
            return
        logger.debug("%s: %r found at %d instead of from/to", where, term, found[0])
        sink.relocated += 1
        start, end = found[0], found[0] + len(term)
    sink.add(text, start, end, label, source, where)


def normalise_text(text: str) -> str:
    """Lower-cased text without punctuation or spaces: finds the same sentence across
    differently tokenised copies (the 3-line files split "n't", the XML files do not)."""
    return re.sub(r"\W+", "", text.lower())


class HasText(Protocol):
    @property
    def text(self) -> str: ...


T = TypeVar("T", bound=HasText)


_PTB_BRACKET = re.compile(r"-(?:LRB|RRB|LSB|RSB|LCB|RCB)-", re.IGNORECASE)


def bracket_free(text: str) -> str:
    """``normalise_text`` of the text without its Penn Treebank bracket tokens: the
    SemEval-2014 .seg files and Twitter write "(" as -LRB-, MAMS and the rest write "(", and
    ``normalise_text`` keeps the "lrb" (Rest14 test's "-LRB- including 2 drinks" is MAMS
    train's "(including 2 drinks")."""
    return normalise_text(_PTB_BRACKET.sub(" ", text))


def drop_overlap(
    examples: Sequence[T],
    reference: Iterable[HasText],
    key: Callable[[str], str] = bracket_free,
) -> tuple[list[T], int]:
    """The examples (anything with a sentence ``text``: examples, sentences, transfer-set
    candidates) whose sentence does not occur in ``reference`` (e.g. test sets), and how many
    were dropped, texts compared by ``key`` (``bracket_free``: punctuation, spaces, case and
    the spelling of brackets aside; runs made before it compared by ``normalise_text``).
    Public ABSA sets share sentences (MAMS and SemEval-2014 restaurants)."""
    banned = {key(e.text) for e in reference}
    kept = [e for e in examples if key(e.text) not in banned]
    return kept, len(examples) - len(kept)


def sentences_of(examples: Iterable[HasText]) -> set[str]:
    """The distinct sentences of ``examples`` as ``drop_overlap`` compares them
    (``bracket_free``)."""
    return {bracket_free(e.text) for e in examples}


def sentence_overlap(examples: Iterable[HasText], seen: set[str]) -> dict[str, int]:
    """How many of the sentences of ``examples`` the sentences ``seen`` (``sentences_of`` a
    reference set, made once for every set compared with it) hold too: ``{"sentences": n,
    "of": m}``. An eval or dev set measured on what training saw (retrain's gate, ``absa
    train``)."""
    sentences = sentences_of(examples)
    return {"sentences": len(sentences & seen), "of": len(sentences)}
