"""JSONL read into Arrow tables line by line, so that one bad line is one bad row, as in
single-process scoring (``absa.scoring``), instead of a parse error that stops the file.

A line that is not a JSON object becomes a row of nulls; a line with a value that is not
UTF-8 keeps its values (the bad bytes as U+FFFD). Either way the reason travels in the
``LINE_ERROR`` column, which ``columns.score_table`` turns into the row's ``error`` and
drops. Blank lines are skipped, as ``absa.scoring`` skips them. Lines are split on ``\\n``
only (a JSON string may hold U+2028), read as UTF-8 with undecodable bytes kept to be
named; a byte-order mark opening the file is not part of its first line. The columns of a
table are the fields of its rows in the order first seen; a field whose values mix types
(a number here, a string there) stops the run with a message naming the file, the line
of the first value that does not fit and the field, as a Parquet column of one type cannot
hold both.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from absa.errors import InputError
from absa.scoring import clean, parse_line

if TYPE_CHECKING:
    import pyarrow as pa

#: carries each line's parse error from the reader to ``score_table`` (null: parsed)
LINE_ERROR = "__absa_line_error__"


def refuse_inner_name(names: Iterable[str], where: str, kind: str = "column") -> None:
    """InputError naming ``where`` if an input column (``kind``: or JSONL field) is named
    ``LINE_ERROR``: it would be taken for the rows' read errors, or overwritten by them."""
    if LINE_ERROR in names:
        raise InputError(
            f"{where}: {kind} {LINE_ERROR!r} is a name absa uses for a row's read error; rename it"
        )


def jsonl_tables(
    lines: Iterable[bytes], where: str, rows_per_table: int, placed: bool = False
) -> Iterator[pa.Table]:
    """The JSON objects of ``lines`` (raw lines of one file) as tables of at most
    ``rows_per_table`` rows, each with ``LINE_ERROR``. ``placed``: a line that is no JSON
    object says where it is in its error ("a.jsonl:3: invalid JSON: ..."), since its row
    keeps no field to find it by, and Ray writes rows of many files in no set order."""
    rows: list[dict[str, Any]] = []
    errors: list[str | None] = []
    numbers: list[int] = []  # each row's line, for an error naming the value that stops the file
    for number, line in enumerate(decoded(lines), 1):
        if not line.strip():
            continue
        row, err = parse_line(line)
        if row is None and placed:
            err = f"{where}:{number}: {err}"
        rows.append(clean(row) if row is not None else {})
        errors.append(err or None)
        numbers.append(number)
        if len(rows) >= rows_per_table:
            yield _table(rows, errors, where, numbers)
            rows, errors, numbers = [], [], []
    if rows:
        yield _table(rows, errors, where, numbers)


def decoded(lines: Iterable[bytes]) -> Iterator[str]:
    """Each raw line as text, undecodable bytes kept (``surrogateescape``) to be named; a
    byte-order mark opening the first is dropped, as ``absa.scoring`` reads it (utf-8-sig)."""
    for i, raw in enumerate(lines):
        if i == 0 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        yield raw.decode("utf-8", "surrogateescape")


def _table(
    rows: list[dict[str, Any]], errors: list[str | None], where: str, numbers: list[int]
) -> pa.Table:
    import pyarrow as pa

    names = list(dict.fromkeys(k for row in rows for k in row))
    if LINE_ERROR in names:
        at = next(i for i, row in enumerate(rows) if LINE_ERROR in row)
        refuse_inner_name(names, f"{where}:{numbers[at]}", "field")
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            columns[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            at, err = _first_misfit(values, e)
            if isinstance(err, OverflowError):  # was a traceback: not among pyarrow's errors
                why = "holds an integer over 64 bits, which Parquet cannot hold; give it as text"
            else:
                why = f"holds values of different types ({err}); give it one type in every row"
            raise InputError(f"{where}:{numbers[at]}: field {name!r} {why}") from None
    columns[LINE_ERROR] = pa.array(errors, pa.string())
    return pa.table(columns)


def _first_misfit(values: list[Any], error: Exception) -> tuple[int, Exception]:
    """The index of the first value pyarrow cannot put in one column with those before it,
    and its error (``error``: all of ``values`` failed so): the end of the shortest prefix
    that fails (a longer one fails too), found by bisection, so that an error in a block of
    thousands of rows names its line."""
    import pyarrow as pa

    ok, bad = 0, len(values)  # values[:ok] convert, values[:bad] do not
    while bad - ok > 1:
        mid = (ok + bad) // 2
        try:
            pa.array(values[:mid])
            ok = mid
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            bad, error = mid, e
    return bad - 1, error


def file_lines(f: Any) -> Iterator[bytes]:
    """The lines of a binary file (a Python or pyarrow one), split on ``\\n`` only. A line
    longer than a read is gathered in pieces and joined once: adding each read to what came
    before copied it all again, which took minutes on a line of a few hundred MiB."""
    pieces: list[bytes] = []  # the start of a line that the reads so far have not ended
    while chunk := f.read(1 << 20):
        *ended, rest = chunk.split(b"\n")
        if ended:
            yield b"".join([*pieces, ended[0]])
            yield from ended[1:]
            pieces.clear()
        pieces.append(rest)
    if any(pieces):
        yield b"".join(pieces)


__all__ = ["LINE_ERROR", "decoded", "file_lines", "jsonl_tables", "refuse_inner_name"]
