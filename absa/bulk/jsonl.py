"""JSONL read into Arrow tables line by line, so that one bad line is one bad row, as in
single-process scoring (``absa.scoring``), instead of a parse error that stops the file.

A line that is not a JSON object becomes a row of nulls; a line with a value that is not
UTF-8 keeps its values (the bad bytes as U+FFFD). Either way the reason travels in the
``LINE_ERROR`` column, which ``columns.score_table`` turns into the row's ``error`` and
drops. Blank lines are skipped, as ``absa.scoring`` skips them. Lines are split on ``\\n``
only (a JSON string may hold U+2028), read as UTF-8 with undecodable bytes kept to be
named; a byte-order mark opening the file is not part of its first line. The columns of a
table are the fields of its rows in the order first seen; a field whose values mix types
(a number here, a string there) stops the run with a message naming the file and the
field, as a Parquet column of one type cannot hold both.
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


def jsonl_tables(lines: Iterable[bytes], where: str, rows_per_table: int) -> Iterator[pa.Table]:
    """The JSON objects of ``lines`` (raw lines of one file) as tables of at most
    ``rows_per_table`` rows, each with ``LINE_ERROR``."""
    rows: list[dict[str, Any]] = []
    errors: list[str | None] = []
    for line in decoded(lines):
        if not line.strip():
            continue
        row, err = parse_line(line)
        rows.append(clean(row) if row is not None else {})
        errors.append(err or None)
        if len(rows) >= rows_per_table:
            yield _table(rows, errors, where)
            rows, errors = [], []
    if rows:
        yield _table(rows, errors, where)


def decoded(lines: Iterable[bytes]) -> Iterator[str]:
    """Each raw line as text, undecodable bytes kept (``surrogateescape``) to be named; a
    byte-order mark opening the first is dropped, as ``absa.scoring`` reads it (utf-8-sig)."""
    for i, raw in enumerate(lines):
        if i == 0 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        yield raw.decode("utf-8", "surrogateescape")


def _table(rows: list[dict[str, Any]], errors: list[str | None], where: str) -> pa.Table:
    import pyarrow as pa

    names = list(dict.fromkeys(k for row in rows for k in row))
    columns = {}
    for name in names:
        try:
            columns[name] = pa.array([row.get(name) for row in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise InputError(
                f"{where}: field {name!r} holds values of different types ({e}); "
                "give it one type in every row"
            ) from None
    columns[LINE_ERROR] = pa.array(errors, pa.string())
    return pa.table(columns)


def file_lines(f: Any) -> Iterator[bytes]:
    """The lines of a binary file (a Python or pyarrow one), split on ``\\n`` only."""
    rest = b""
    while chunk := f.read(1 << 20):
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


__all__ = ["LINE_ERROR", "decoded", "file_lines", "jsonl_tables"]
