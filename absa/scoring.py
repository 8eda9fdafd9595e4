"""Score files offline with a ``Predictor`` or a ``CategoryPredictor`` (no server, no torch):
the same aspect resolver, category lookup, encoding and result building as the HTTP API. A
Parquet input or output goes through ``absa.bulk.files`` (typed columns, pyarrow); this
module reads and writes JSONL and CSV.

Input rows: ``{"text", "aspect", "start"?, "end"?}`` for an aspect-term model, ``{"text",
"category"}`` for an aspect-category model (``RowKind``), as JSONL or CSV (same columns), any
other fields kept. Output: one row per input row, in order, with every input field as it
was and the prediction in columns of its own: ``pred_label``, ``pred_score``, ``pred_scores``
(CSV: one ``pred_score_<label>`` column each), for aspect terms ``pred_start`` / ``pred_end``
(the span scored) and ``pred_occurrence`` / ``pred_occurrences`` (a term found several
times: which occurrence was scored, 1-based, the first unless the row pins ``start``/``end``,
and how many there are), and ``error`` for a row that could not be scored (an empty field
on CSV rows that were). Rows are read, scored and written in chunks, so memory stays flat on any
file size; a bad row (invalid JSON, a byte that is not UTF-8, an aspect not in the text)
gets its ``error``, is logged with the file and line, and the run goes on. A JSONL line that
is not a JSON object has no field to match its output row back to the input by, so its
JSONL output row also gets ``line``, the input line number (blank lines are skipped).

The paths are checked before the first row is read (``absa.scoring_paths``: a missing
input, an output that is a directory or in one that does not exist): the output is written
to ``OUTPUT.<random>.part``
(of this run alone; the output's name cut short where the whole would be over the file
system's name limit) and moved into place at the end, so those would otherwise fail only
after the whole file was scored. A disk that fills while the output is written stops the
run naming the output (not the ``.part``), and leaves neither.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from absa.errors import NO_SPACE, InputError, cannot_write
from absa.model.aspects import (
    check_unicode,
    find_all,
    occurrences,
    pinned,
    shown_value,
    whole_offset,
)
from absa.model.categories import SHIPPED_CATEGORY_MODEL, category_id
from absa.model.category_predictor import (
    CategoryPrediction,
    CategoryPredictor,
    PreparedCategories,
)
from absa.model.csvio import ROW_INSIDE, any_field_length, delimiter_hint, row_inside
from absa.model.jsonio import DuplicateKey, unique_keys
from absa.model.predictor import AspectPrediction, Predictor, Prepared
from absa.scoring_paths import check_paths, file_format, new_part, publish

log = logging.getLogger(__name__)

PREFIX = "pred_"
SCORE_ = f"{PREFIX}score_"  # CSV and Arrow outputs: one column per label's probability
ERROR = "error"
#: JSONL output: the input line of a row that could not be read (it has no fields of its own)
LINE = "line"
# bytes that are not UTF-8 are read as lone surrogates (errors="surrogateescape")
_UNDECODED = re.compile("[\udc80-\udcff]")
# any other lone surrogate: a JSON escape such as "\ud800", which no UTF-8 output can hold
_LONE = re.compile("[\ud800-\udc7f\udd00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: JSONL lines end at "\n" only (as ``absa.bulk.jsonl`` splits them): a lone "\r", JSON
#: whitespace or a raw one in a string, does not split one row into two bad ones
JSONL_NEWLINE = "\n"
#: deeper than this, a JSONL row is a bad row: the checks and the writers walk a row's values
#: by recursion, and a line nested some 500 levels stopped the whole run ("maximum recursion
#: depth exceeded", naming no file or line); and a Parquet output nested 60 lists deep did
#: not read back (pyarrow reads 100 schema levels, and a list takes two)
MAX_DEPTH = 32
#: bad rows a run keeps (ScoreStats.bad) and logs one by one; the rest are counted
KEPT_BAD = 1000
LOGGED_BAD = 100  # under KEPT_BAD: the rows kept count those logged


#: a model that scores files: of aspect terms or of aspect categories
FileModel = Predictor | CategoryPredictor


@dataclass(frozen=True)
class RowKind:
    """What the rows of a file name for one kind of model: ``key``, the field scored beside
    the text (an aspect term, or a category; None: the text alone, its aspects found by
    the extractor); ``read``, every field a row is scored by; ``added``, the prediction
    columns after ``pred_label``, ``pred_score`` and the scores (``labelled``), or in their
    place (the extracted aspects, each with its own)."""

    key: str | None
    read: tuple[str, ...]
    added: tuple[str, ...]
    labelled: bool = True

    @property
    def needed(self) -> tuple[str, ...]:
        return ("text",) if self.key is None else ("text", self.key)

    @property
    def columns(self) -> str:
        """The columns ``needed``, as an error names them: "columns text and aspect"."""
        return "column text" if self.key is None else f"columns text and {self.key}"


TERM_ROWS = RowKind("aspect", ("text", "aspect", "start", "end"),
                    ("start", "end", "occurrence", "occurrences"))  # fmt: skip
CATEGORY_ROWS = RowKind("category", ("text", "category"), ())
#: rows of a text alone, scored with an extractor: every aspect it finds, in one column
#: (``pred_aspects``, with their count); an aspect a row names is read to refuse the row
EXTRACTED_ROWS = RowKind(
    None, ("text", "aspect", "start", "end"), ("aspects", "n_aspects"), labelled=False
)


def row_keys(predictor: FileModel) -> frozenset[str] | None:
    """What a CSV line's key cell holds where the line is a row of its own (``row_inside``):
    a category model's categories, in lower case (a category is seldom in its text); None,
    the aspect found in the line's text."""
    if isinstance(predictor, CategoryPredictor):
        return frozenset(c.lower() for c in predictor.categories)
    return None


def row_kind(predictor: FileModel) -> RowKind:
    """The rows ``predictor``'s model scores: aspect terms; for a term model with an extractor
    (``Predictor(runtime, extractor=...)``), texts whose aspects it finds; for a category
    model, categories."""
    if isinstance(predictor, CategoryPredictor):
        return CATEGORY_ROWS
    return TERM_ROWS if predictor.extractor is None else EXTRACTED_ROWS


@dataclass
class ScoreStats:
    rows: int = 0
    scored: int = 0
    # (line, reason) of the first KEPT_BAD bad rows; the row number instead where the input
    # has no lines (Parquet). How many were bad: rows - scored
    bad: list[tuple[int, str]] = field(default_factory=list)

    def add_bad(self, src: Path, at: int, err: str, by_row: bool = False) -> None:
        """A bad row: kept among the first KEPT_BAD, logged among the first LOGGED_BAD (a
        file whose every row is bad, a field misnamed, made a log line and an entry for
        each: memory that grew with the file, which the scored rows never take)."""
        if len(self.bad) < KEPT_BAD:
            self.bad.append((at, err))
        seen = len(self.bad)  # every bad row so far, up to KEPT_BAD (past LOGGED_BAD + 1)
        if seen <= LOGGED_BAD:
            log.warning("%s: row %d: %s" if by_row else "%s:%d: %s", src, at, err)
        elif seen == LOGGED_BAD + 1:
            log.warning(
                "%s: further bad rows are not logged one by one (the output's error column "
                "has each; the count comes at the end)",
                src,
            )


def output_columns(labels: list[str], fmt: str, kind: RowKind = TERM_ROWS) -> list[str]:
    """The columns file scoring adds to every row, in order."""
    scores = [f"{PREFIX}scores"] if fmt == "jsonl" else [f"{SCORE_}{k}" for k in labels]
    names = ["label", "score", *scores, *kind.added] if kind.labelled else list(kind.added)
    return [n if n.startswith(PREFIX) else PREFIX + n for n in names] + [ERROR]


def undecoded(value: Any, name: str = "") -> str | None:
    """What is wrong with the first character of ``value`` that UTF-8 cannot hold, else None:
    a byte that was not UTF-8, or a lone surrogate (a JSON escape such as "\\ud800"), said
    as ``check_unicode`` says it, so that ``prepare_row`` gives a text or aspect the same
    message on every path."""
    if isinstance(value, str):
        m = _UNDECODED.search(value)
        if m is None:
            return _lone(value, name) if _LONE.search(value) else None
        byte = ord(m.group()) - 0xDC00
        where = f"field {name!r}" if name else "the line"
        return f"{where} is not valid UTF-8 (byte 0x{byte:02x} at character {m.start() + 1})"
    if isinstance(value, dict):
        for k, v in value.items():
            msg = undecoded(k, "a field name") if isinstance(k, str) else None
            msg = msg or undecoded(v, name or str(k))
            if msg:
                return msg
    if isinstance(value, list):
        for v in value:
            msg = undecoded(v, name)
            if msg:
                return msg
    return None


def _lone(value: str, name: str) -> str | None:
    names = {"text": "the text", "aspect": "the aspect", "category": "the category", "": "the line"}
    what = names.get(name) or (name if name == "a field name" else f"field {name!r}")
    try:
        check_unicode(value, what)
    except InputError as e:
        return str(e)
    return None


def clean(value: Any) -> Any:
    """``value`` writable as UTF-8: undecodable bytes and lone surrogates become U+FFFD."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        value = _LONE.sub("\ufffd", value)
        if not _UNDECODED.search(value):
            return value
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


#: the input fields a term row is scored by; a CSV header names them in any case, spaces around
READ_FIELDS = TERM_ROWS.read

#: other names of the fields a row must have, as the HTTP API ("aspects", "categories") and
#: the training data ("term", SemEval's "sentence") give them: an error about the field
#: missing names the one the row or the header has
OTHER_NAMES = {
    "text": ("sentence",),
    "aspect": ("term", "aspects", "terms"),
    "category": ("categories",),
}

#: the other kind of model's field, where a row or a header lacks its own (``other_kind``):
#: what it is told, after "the row has 'category': "
OTHER_KIND = {
    "aspect": (
        "category",
        "rows of aspect categories are scored by an aspect-category model (--model DIR; "
        f"the shipped one: {SHIPPED_CATEGORY_MODEL})",
    ),
    "category": (
        "aspect",
        "an aspect-category model scores a row's category (name that field 'category' where "
        "it holds one of the model's categories; aspect terms are scored by an aspect-term model)",
    ),
}


#: said of rows without an aspect: a file's rows are scored by the aspects they name, or
#: each text's found by an extractor given for the file
NO_EXTRACTION = (
    " (a file's rows name their aspects; to have each text's aspects found, give "
    "absa predict --extractor DIR|shipped, on the local engine)"
)
#: said of a row that names an aspect where the extractor finds each text's (EXTRACTED_ROWS)
NAMED_ASPECT = (
    "the row names an aspect ({}), where --extractor finds each text's aspects: score the "
    "aspects rows name without --extractor, or leave this one empty to have it found"
)


def named_otherwise(field: str, names: Iterable[object]) -> str | None:
    """The name among ``names`` (a row's keys, a header's columns) that is another name of
    ``field`` (``OTHER_NAMES``), read as a header is (any case, spaces around), or None."""
    others = OTHER_NAMES.get(field, ())
    return next((n for n in names if isinstance(n, str) and n.strip().lower() in others), None)


def other_kind(field: str, names: Iterable[object]) -> tuple[str, str] | None:
    """Where ``names`` (a row's keys, a header's columns) lack ``field`` but give the other
    kind of model's (``OTHER_KIND``: a category where a term model reads an aspect, or the
    other way round), read as a header is: that name and what to say of it; else None."""
    if field not in OTHER_KIND:
        return None
    theirs, said = OTHER_KIND[field]
    found = next((n for n in names if isinstance(n, str) and n.strip().lower() == theirs), None)
    return None if found is None else (found, said)


def header_hint(missing: Iterable[str], names: Sequence[str]) -> str:
    """The hint of an error about columns a header lacks: for each one missing, the column
    that is another name of it ("; it has 'term': name that column 'aspect'"), or the other
    kind of model's ("; it has 'category': ... an aspect-category model"), or ""."""
    hints = []
    for name in missing:
        if (other := named_otherwise(name, names)) is not None:
            hints.append(f"it has {other!r}: name that column {name!r}")
        elif (crossed := other_kind(name, names)) is not None:
            hints.append(f"it has {crossed[0]!r}: {crossed[1]}")
    return "".join(f"; {h}" for h in hints)


def _rows(
    f: IO[str],
    fmt: str,
    path: Path,
    reserved: list[str],
    kind: RowKind = TERM_ROWS,
    keys: frozenset[str] | None = None,
) -> tuple[list[str] | None, Iterator[tuple[int, dict[str, Any] | None, str]], dict[str, str]]:
    """The CSV header (None for JSONL), (line, row or None, error) for each input row, and
    the header's name of each field read (``kind.read``) where it is not that field's own
    (``as_read``). ``keys``: ``row_keys``."""
    if fmt == "jsonl":
        return None, _jsonl_rows(f, reserved, path), {}
    any_field_length()  # a long text is for the text-length limits to refuse, not the reader
    reader = csv.reader(f)
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise ValueError(f"{path}:{reader.line_num}: {e}") from None
    bad = undecoded(header)  # first: a UTF-16 file's "text" is not read as text
    if bad:
        raise ValueError(f"{path}:1: {bad}")
    twice = repeated(header or [])
    if twice is not None:  # a row would keep one of them, and the output drop the other
        raise ValueError(f"{path}:1: {repeated_said(twice)}")
    read = read_names(header or [], f"{path}:1", kind.read)
    if header is None or not set(kind.needed) <= set(read):
        hint = header_hint([f for f in kind.needed if f not in read], header or [])
        hint += delimiter_hint(header or [])
        if "text" in read and kind is TERM_ROWS and not hint:
            hint = NO_EXTRACTION
        raise ValueError(f"{path}:1: the CSV header must name the {kind.columns}{hint}")
    clash = [c for c in header if c in reserved]
    if clash:
        raise ValueError(f"{path}:1: column {clash[0]!r} is one the output adds; rename it")
    # a row inside a field is told by its aspect found in its text: a text alone has none
    at = None if kind.key is None else (header.index(read["text"]), header.index(read[kind.key]))
    rows = _csv_rows(reader, header, path, at, keys)
    return header, rows, {k: v for k, v in read.items() if k != v}


def read_names(
    header: Sequence[str], where: str, fields: Sequence[str] = READ_FIELDS
) -> dict[str, str]:
    """Each field read (``fields``: a term row's by default) to the column that gives it:
    its own name, else the one name that is it stripped and in lower case, as the training
    readers read a CSV header ("Text", " aspect"). ValueError naming ``where`` where two
    names could be it."""
    names: dict[str, str] = {}
    for read in fields:
        if read in header:
            names[read] = read
            continue
        like = [name for name in header if name.strip().lower() == read]
        if len(like) > 1:
            both = f"columns {like[0]!r} and {like[1]!r}"
            raise ValueError(f"{where}: {both} are both read as {read}")
        if like:
            names[read] = like[0]
    return names


def as_read(row: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``row`` with the fields read under their own names (``names``: from ``_rows``); the
    row itself, written to the output, keeps the input's."""
    if not names:
        return row
    return {**row, **{field: row.get(name) for field, name in names.items()}}


def repeated_said(name: str) -> str:
    """What a header that gives ``name`` twice (``repeated``) is told: cells left empty, as a
    spreadsheet's export leaves them after the last column, are not a name given twice."""
    if not name.strip():
        return (
            "more than one column has no name (empty header cells, as a spreadsheet's export "
            "can leave after the last column): name them or remove them"
        )
    return f"column {name!r} appears twice"


def repeated(names: Iterable[str]) -> str | None:
    """The first column name that a header gives twice, else None: every reader refuses such
    a file, since a row keeps only one of the two values."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def parse_line(line: str) -> tuple[dict[str, Any] | None, str]:
    """One JSONL line (read with errors="surrogateescape") as a row, and what is wrong with
    it: (None, why) when it is not a JSON object or an object gives a key twice (which of
    the two was meant no one knows: the training readers refuse it too), (row, why) when a
    value is not UTF-8."""
    try:
        row = json.loads(line, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        return None, undecoded(line) or f"invalid JSON: {e.msg}"
    except DuplicateKey as e:  # JSON, but which of the two values is meant no one knows
        return None, undecoded(line) or str(e)
    except RecursionError:  # deeper than json's own limit
        return None, f"nested deeper than {MAX_DEPTH} levels"
    except ValueError:  # an integer longer than Python reads (sys.get_int_max_str_digits)
        return None, f"invalid JSON: a number of more than {sys.get_int_max_str_digits()} digits"
    if not isinstance(row, dict):
        return None, "a row must be a JSON object"
    if _deeper_than(row, MAX_DEPTH):
        return None, f"nested deeper than {MAX_DEPTH} levels"
    return row, undecoded(row) or ""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest in ``value`` more than ``limit`` levels (no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(v, dict):
            stack += [(x, depth + 1) for x in v.values() if isinstance(x, dict | list)]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v if isinstance(x, dict | list)]
    return False


def jsonl_fields(path: Path) -> list[str]:
    """Every field name of a JSONL file's object rows, in the order they first occur: the
    columns of its CSV output (a field that first occurs in row 1,000 is one too)."""
    seen: dict[str, None] = {}
    with path.open(encoding="utf-8-sig", errors="surrogateescape", newline=JSONL_NEWLINE) as f:
        for line in f:
            row, _ = parse_line(line) if line.strip() else (None, "")
            # as the rows are written: a name that UTF-8 cannot hold with U+FFFD in its place
            seen.update(dict.fromkeys(clean(k) for k in row or () if isinstance(k, str)))
    return list(seen)


def _jsonl_rows(
    f: IO[str], reserved: list[str], path: Path
) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """The rows; one with a field named like an output column (``pred_label``) stops the
    file, naming it and the line, as into Parquet: as a bad row it kept the input's value
    in that column, which read as absa's prediction."""
    for lineno, line in enumerate(f, 1):
        if not line.strip():
            continue
        row, err = parse_line(line)
        clash = [c for c in row or () if c in reserved]
        if clash:
            raise ValueError(
                f"{path}:{lineno}: field {clash[0]!r} is one the output adds; rename it"
            )
        yield lineno, row, err


PRED_ERROR = f"{PREFIX}{ERROR}"
#: an input with both: the row's error goes in pred_error where the input has an error field
BOTH_ERRORS = (
    f"fields {ERROR!r} and {PRED_ERROR!r} are both in the input, and a row's error is written "
    f"to {PRED_ERROR!r} where the input has {ERROR!r}: rename one"
)


def refuse_both_errors(names: Iterable[str], where: str) -> None:
    """InputError naming ``where`` when the input's columns (or fields, from any of its
    files or blocks) hold both ``error`` and ``pred_error``: no third name for a row's
    error."""
    names = set(names)
    if ERROR in names and PRED_ERROR in names:
        raise InputError(f"{where}: {BOTH_ERRORS}")


def numbered_records(reader: Any) -> Iterator[tuple[int, list[str]]]:
    """The records of a ``csv.reader`` after the lines it has read, each with the physical
    line it starts on; blank lines are skipped (as pyarrow skips them), yet counted: a
    ``DictReader`` skips them too, but its line count then names the blank line."""
    line = reader.line_num
    for record in reader:
        if record:
            yield line + 1, record
        line = reader.line_num


def _csv_rows(
    reader: Any,
    names: list[str],
    path: Path,
    at: tuple[int, int] | None,
    keys: frozenset[str] | None = None,
) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """The rows; a record the csv module cannot read stops the file, naming it and the line.
    ``at``: the text's and the aspect's (or category's) columns, for a row a quote left open
    took into a field of a record of the header's width (``row_inside``); None: not looked
    for (rows of a text alone); ``keys``: ``row_keys``."""
    records = numbered_records(reader)
    while True:
        try:
            line, record = next(records)
        except StopIteration:
            return
        except csv.Error as e:
            raise ValueError(f"{path}:{reader.line_num}: {e}") from None
        # as a DictReader: fields past the header's dropped, the missing ones None
        row: dict[str, Any] = dict(zip(names, record, strict=False))
        row.update(dict.fromkeys(names[len(record) :]))
        got, want = len(record), len(names)
        ragged = f"the row has {got} fields; the header names {want}" if got != want else ""
        if ragged and reader.line_num > line:  # over several lines: a quote left open takes
            # the lines after it into one field, up to the next quote (too few fields or, where
            # that quote ends a field mid-line, too many) or the end of the file
            ragged += f" (it runs from line {line} to line {reader.line_num}: a quote not closed?)"
        elif (
            reader.line_num > line
            and at is not None
            and (inside := row_inside(record, want, *at, keys)) is not None
        ):
            ragged = ROW_INSIDE.format(line=f"line {line + inside}")
            ragged += f" (it runs from line {line} to line {reader.line_num})"
        yield line, row, ragged or undecoded(row) or ""


#: the longest text a row scored from a file may have: encoding takes some 80 bytes a
#: character (a 20 MB text took 1.7 GB; this many, some 100 MB), where file scoring is to run
#: in constant memory; the service takes far less (ABSA_MAX_TEXT_CHARS)
MAX_ROW_TEXT_CHARS = 1_000_000


@dataclass(frozen=True)
class PreparedRow:
    prepared: Prepared | PreparedCategories
    occurrence: int = 1  # 1-based: which occurrence of the term was scored
    occurrences: int = 1  # how many the text has (a category row: 1)
    extracted: bool = False  # its spans are the extractor's: every one answered (pred_aspects)


def prepare_row(predictor: FileModel, row: dict[str, Any]) -> PreparedRow:
    """The row's pinned span, or the first occurrence of its aspect, encoded (with which
    occurrence it is); for a category model, its text and category; for a text whose
    aspects the extractor finds (``EXTRACTED_ROWS``), the text checked, with no spans yet
    (``prepare_rows`` extracts a chunk's at once). InputError says what is wrong."""
    if isinstance(predictor, CategoryPredictor):
        text, category = _row_string(row, "text"), _row_string(row, "category")
        _check_length(text)
        name = predictor.categories[category_id(predictor.categories, category)]
        return PreparedRow(predictor.preprocess(text, [name]))
    if predictor.extractor is not None:
        text = _row_string(row, "text")
        _check_length(text)
        named = _named_aspect(row)
        if named is not None:
            raise InputError(NAMED_ASPECT.format(named))
        return PreparedRow(Prepared(text, [], []), extracted=True)
    text, aspect = _row_string(row, "text"), _row_string(row, "aspect")
    _check_length(text)
    start, end = row.get("start"), row.get("end")
    if _unpinned(start) and _unpinned(end):
        found = occurrences(text, aspect)
        return PreparedRow(
            Prepared(text, found[:1], predictor.encode(text, found[:1])), 1, len(found)
        )
    s, e = whole_offset(start), whole_offset(end)
    if s is None or e is None:
        raise InputError(f"start/end must be integers, got {shown_value(start)}/{shown_value(end)}")
    span = pinned(text, aspect, s, e)
    spans = find_all(text, aspect)
    if (span.start, span.end) not in spans:  # pinned where the search does not look
        spans = [(span.start, span.end)]
    index = spans.index((span.start, span.end))
    return PreparedRow(
        Prepared(text, [span], predictor.encode(text, [span])), index + 1, len(spans)
    )


def _named_aspect(row: dict[str, Any]) -> str | None:
    """What a row names of an aspect, as shown in an error: its ``aspect``, or one under
    another name (``OTHER_NAMES``: the HTTP API's ``aspects``, the training data's ``term``),
    or a span pinned by ``start``/``end``; None where it names none (absent, null, blank)."""
    others = [k for k in row if k != "aspect" and named_otherwise("aspect", [k]) is not None]
    for key in ("aspect", *others):
        value = row.get(key)
        blank = isinstance(value, str) and not value.strip() or value in ([], {})
        if not (_unpinned(value) or blank):
            return shown_value(value) if key == "aspect" else f"{key} {shown_value(value)}"
    start, end = row.get("start"), row.get("end")
    if _unpinned(start) and _unpinned(end):
        return None
    return f"a span, start/end {shown_value(start)}/{shown_value(end)}"


def _check_length(text: str) -> None:
    """InputError for a row's text of more than ``MAX_ROW_TEXT_CHARS``."""
    if len(text) > MAX_ROW_TEXT_CHARS:
        raise InputError(
            f"text has {len(text):,} characters; a row scored from a file takes up to "
            f"{MAX_ROW_TEXT_CHARS:,} (a review, not a document): split it"
        )


def _row_string(row: dict[str, Any], name: str) -> str:
    """The row's ``name`` (text, aspect, category): a string with a word in it, or InputError."""
    value = row.get(name)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{name} must be a string, not {type(value).__name__}")
    if value is None or not value.strip():
        raise InputError(f"{name} is missing or empty{_row_hint(name, value, row)}")
    check_unicode(value, f"the {name}")
    return value


def _row_hint(field: str, value: Any, row: dict[str, Any]) -> str:
    """Where a row lacks ``field``: the key it has that is another name of it (the HTTP
    API's "aspects", the training data's "term"), or the other kind of model's field (a
    category where an aspect is read), as a hint; else ""."""
    other = named_otherwise(field, row) if value is None else None
    crossed = other_kind(field, row) if value is None and other is None else None
    if crossed is not None:
        return f"; the row has {crossed[0]!r}: {crossed[1]}"
    if other is None:
        return NO_EXTRACTION if field == "aspect" and value is None else ""
    one = " (one aspect a row)" if isinstance(row[other], list) else ""
    return f"; the row has {other!r}: name that field {field!r}{one}"


def _unpinned(value: Any) -> bool:
    """A start or end that pins nothing: absent, null, an empty CSV field, or NaN (a float
    column with no value, as pandas writes one to Parquet)."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def try_prepare(predictor: FileModel, row: dict[str, Any]) -> tuple[PreparedRow | None, str]:
    """``prepare_row``, or None and what is wrong with the row."""
    try:
        return prepare_row(predictor, row), ""
    except InputError as e:
        return None, str(e)


def prepare_rows(
    predictor: FileModel, rows: Sequence[dict[str, Any] | None], errors: Sequence[str | None]
) -> list[tuple[PreparedRow | None, str]]:
    """``try_prepare`` of each row of a chunk, or (None, its error) where it could not be
    read (``errors``); rows whose aspects the extractor finds get them here, the chunk's
    texts tagged in batches (``Predictor.extract_many``), not one text at a time."""
    out: list[tuple[PreparedRow | None, str]] = [
        (None, err or "") if err or row is None else try_prepare(predictor, row)
        for row, err in zip(rows, errors, strict=True)
    ]
    todo = {i: p.prepared.text for i, (p, _) in enumerate(out) if p is not None and p.extracted}
    if not todo or not isinstance(predictor, Predictor):
        return out
    texts = list(todo.values())
    for i, text, spans in zip(todo, texts, predictor.extract_many(texts), strict=True):
        try:
            prepared = Prepared(text, spans, predictor.encode(text, spans))
            out[i] = (PreparedRow(prepared, extracted=True), "")
        except InputError as e:
            out[i] = (None, str(e))
    return out


Answer = AspectPrediction | CategoryPrediction


def predicted(prep: PreparedRow, answers: Sequence[Answer], nested: bool) -> dict[str, Any]:
    """The prediction columns of a scored row (``answers``: its model's, one a row but for
    ``extracted`` ones): ``pred_scores`` as one mapping (``nested``), else one
    ``pred_score_<label>`` float each; an aspect term's span and occurrence. Extracted
    aspects: ``pred_aspects``, each as the single-text path answers it (``to_dict``), and
    ``pred_n_aspects``, how many."""
    if prep.extracted:
        found = [a.to_dict() for a in answers]
        return {f"{PREFIX}aspects": found, f"{PREFIX}n_aspects": len(found)}
    answer = answers[0]
    if nested:
        scores: dict[str, Any] = {f"{PREFIX}scores": answer.scores}
    else:
        scores = {f"{SCORE_}{k}": p for k, p in answer.scores.items()}
    out = {f"{PREFIX}label": answer.label, f"{PREFIX}score": answer.score, **scores}
    if isinstance(answer, AspectPrediction):
        out[f"{PREFIX}start"], out[f"{PREFIX}end"] = answer.start, answer.end
        out[f"{PREFIX}occurrence"] = prep.occurrence
        out[f"{PREFIX}occurrences"] = prep.occurrences
    return out


class _Writer:
    def __init__(self, f: IO[str], fmt: str, columns: list[str]) -> None:
        self.f, self.fmt, self.columns = f, fmt, columns
        self.csv: csv.DictWriter | None = None
        self.error = ERROR  # the column of a row's error

    def start_csv(self, input_columns: list[str]) -> None:
        if ERROR in input_columns:  # a JSONL input's own "error" field is kept, as in JSONL
            self.error = f"{PREFIX}{ERROR}"
            self.columns = [self.error if c == ERROR else c for c in self.columns]
        fields = [c for c in input_columns if c not in self.columns] + self.columns
        self.csv = csv.DictWriter(self.f, fieldnames=fields, extrasaction="ignore")
        self.csv.writeheader()

    def write(
        self,
        row: dict[str, Any] | None,
        prep: PreparedRow | None,
        answers: Sequence[Answer] | None,
        error: str,
        line: int,
    ) -> None:
        """One output row; ``row`` None for an input line that could not be read at all.
        ``line``, the row's input line, is written beside the error in JSONL where nothing
        else finds the row back: a line not read, or a row that leaves its error no field
        (CSV columns are fixed by the header)."""
        at = line if row is None else None
        out = clean(row or {})
        added: dict[str, Any] = {}
        if answers is not None and prep is not None:
            added = predicted(prep, answers, nested=self.fmt == "jsonl")
            if self.fmt == "csv":
                added.update(  # every probability the same six places (the API's rounding)
                    {k: f"{v:.6f}" for k, v in added.items() if k.startswith(f"{PREFIX}score")}
                )
                added = {k: csv_cell(v) for k, v in added.items()}  # a list: JSON text
        else:
            added[self.error] = error
        if self.fmt == "jsonl":
            if ERROR in out and answers is None:  # the input's own "error" field is kept
                added = {f"{PREFIX}{ERROR}": error}
                if PRED_ERROR in out:  # and pred_error too: no field left for the error
                    out, added = {}, {ERROR: f"{error}; {BOTH_ERRORS}"}
                    at = line
            if at is not None:
                added[LINE] = at
            self.f.write(json_line({**out, **added}))
            return
        assert self.csv is not None  # started with the input's columns
        self.csv.writerow({**{k: csv_cell(v) for k, v in out.items()}, **added})


def json_line(row: dict[str, Any], default: Any = None) -> str:
    """``row`` as one line of JSON. NaN and infinities (JSON input may carry them, Parquet
    float columns do) are null: written bare they would make the line invalid JSON."""
    try:
        text = json.dumps(row, ensure_ascii=False, allow_nan=False, default=default)
    except ValueError:  # a float that is not finite, somewhere in the row
        text = json.dumps(finite(row), ensure_ascii=False, default=default)
    return text + "\n"


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity in it (nested ones too) made None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def csv_cell(value: Any) -> Any:
    """A JSONL value as a CSV field: a string or null as it is, anything else as JSON (a list
    ``["pizza"]``, not Python's ``['pizza']``; ``true``, not ``True``; NaN is null)."""
    value = finite(value)
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def score_file(
    predictor: FileModel, src: Path, dst: Path, chunk: int = 512, progress: bool = True
) -> ScoreStats:
    """Score ``src`` into ``dst`` (written whole or not at all): rows of aspect terms, or of
    categories for a category model (``row_kind``). ``progress`` shows a bar counting rows,
    on a terminal only (never in logs)."""
    src, dst = Path(src), Path(dst)
    in_fmt, out_fmt = file_format(src), file_format(dst)
    if "parquet" in (in_fmt, out_fmt):  # typed columns: read and written with pyarrow
        from absa.bulk.files import score_table_file

        return score_table_file(predictor, src, dst, progress=progress)  # checks the paths
    check_paths(src, dst)
    stats = ScoreStats()
    with new_part(dst) as tmp:
        try:
            with (
                # utf-8-sig: a byte-order mark (spreadsheet exports) is not part of the first name;
                # JSONL lines end at "\n" only, CSV records where the csv module says
                src.open(
                    encoding="utf-8-sig",
                    errors="surrogateescape",
                    newline=JSONL_NEWLINE if in_fmt == "jsonl" else "",
                ) as fin,
                tmp.open("w", encoding="utf-8", newline="") as fout,
                tqdm(unit=" rows", desc=src.name, disable=None if progress else True) as bar,
            ):
                kind = row_kind(predictor)
                columns = output_columns(predictor.labels, out_fmt, kind)
                reserved = sorted({*columns, *output_columns(predictor.labels, in_fmt, kind)})
                reserved.remove(ERROR)  # an input "error" field is kept; the error goes beside it
                header, rows, names = _rows(fin, in_fmt, src, reserved, kind, row_keys(predictor))
                writer = _Writer(fout, out_fmt, columns)
                if header is None and out_fmt == "csv":  # JSONL rows: every row's fields, first
                    header = jsonl_fields(src)  # a pass of its own, so no row's field is lost
                if header is not None:  # a CSV's columns, or every JSONL field
                    refuse_both_errors(header, str(src))
                if header is not None and out_fmt == "csv":
                    writer.start_csv(header)
                pending: list[tuple[int, dict | None, str]] = []

                def flush() -> None:
                    read = [None if row is None else as_read(row, names) for _, row, _ in pending]
                    preps = prepare_rows(predictor, read, [err for _, _, err in pending])
                    good = [p.prepared for p, _ in preps if p is not None]
                    preds = iter(predictor.predict_many(good))
                    for (line, row, _), (prep, err) in zip(pending, preps, strict=True):
                        if prep is None:
                            writer.write(row, None, None, err, line)
                            stats.add_bad(src, line, err)
                        else:
                            writer.write(row, prep, next(preds), "", line)
                            stats.scored += 1
                    bar.update(len(pending))
                    pending.clear()

                for line, row, err in rows:
                    stats.rows += 1
                    pending.append((line, row, err))
                    if len(pending) >= chunk:
                        flush()
                flush()
            publish(tmp, dst)
        except OSError as e:  # new_part removes the .part, a failed move's too
            if e.errno in NO_SPACE:  # a full disk: said of the output
                raise cannot_write(dst, e) from None
            raise
    return stats
