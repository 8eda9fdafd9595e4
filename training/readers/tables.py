"""JSON lines and CSV: one record a line (or row) with ``text``, ``aspect`` (or ``term``),
``label`` (or ``polarity``) and optional ``start``/``end`` (or ``from``/``to``). The category
readers hand these readers a record handler and columns of their own."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable
from typing import Any

from absa.errors import InputError
from absa.model.aspects import occurrences, pinned, shown_value, whole_offset
from absa.model.csvio import ROW_INSIDE, any_field_length, delimiter_hint, row_inside
from absa.model.jsonio import DuplicateKey, unique_keys
from absa.training.readers.files import refuse_bare_cr
from absa.training.readers.sink import Sink
from absa.training.records import DataError

TEXT_KEYS = ("text",)
ASPECT_KEYS = ("aspect", "term")
LABEL_KEYS = ("label", "polarity")
#: a span's offsets, by their names here and SemEval's ("from"/"to" were ignored, and the
#: first occurrence taken)
_START_KEYS = ("start", "from")
_END_KEYS = ("end", "to")


def pick(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:  # an empty cell falls through to the next name, as a null does
        value = record.get(key)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            return value
    return None


def _offset_names(record: dict[str, Any]) -> str:
    """The names ``record`` gives its offsets under ("'from' and 'to'"): each the first of
    its names with a value; one given alone is named with its partner ('from' with 'to')."""
    start = [i for i, k in enumerate(_START_KEYS) if pick(record, (k,)) is not None]
    end = [i for i, k in enumerate(_END_KEYS) if pick(record, (k,)) is not None]
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
    for keys in (ASPECT_KEYS, LABEL_KEYS, _START_KEYS, _END_KEYS):
        given = [k for k in keys if pick(record, (k,)) is not None]
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
RecordHandler = Callable[[dict[str, Any], "Sink", str, str], None]


def add_record(record: dict[str, Any], sink: Sink, source: str, where: str) -> None:
    """One JSONL object or CSV row (both as dicts) -> an example, a drop, or a bad record."""
    text = pick(record, TEXT_KEYS)
    aspect = pick(record, ASPECT_KEYS)
    raw_label = pick(record, LABEL_KEYS)
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
    raw_start, raw_end = pick(record, _START_KEYS), pick(record, _END_KEYS)
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


def read_jsonl(text: str, sink: Sink, add: RecordHandler | None = None) -> None:
    """Each line's object handed to ``add`` (default: an aspect-term record)."""
    add = add or add_record
    path = sink.path
    refuse_bare_cr(text, path)
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
_TERM_COLUMNS = (TEXT_KEYS, ASPECT_KEYS, LABEL_KEYS)


def read_csv(
    text: str,
    sink: Sink,
    add: RecordHandler | None = None,
    columns: tuple[tuple[str, ...], ...] = _TERM_COLUMNS,
) -> None:
    """Each row after the header, as a dict, handed to ``add`` (default: an aspect-term
    record); the header must name one column of each group in ``columns``. Strict quoting:
    a quote never closed is an error at the line its row starts on, not a field holding the
    rest of the file."""
    add = add or add_record
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
    aspect_at = next(header.index(k) for k in ASPECT_KEYS if k in header)
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
            f"(header: {', '.join(header)}){delimiter_hint(header)}"
        )
    # empty names aside: a spreadsheet's trailing commas ("text,aspect,label,,")
    dupes = sorted({h for h in header if h and header.count(h) > 1})
    if dupes:
        raise DataError(f"{where}: duplicate CSV column(s) {', '.join(dupes)}")
