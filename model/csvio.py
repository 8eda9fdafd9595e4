"""What every CSV reader shares: training's readers, ``absa predict --input`` and bulk
scoring. No torch."""

from __future__ import annotations

import csv
from collections.abc import Collection, Sequence

__all__ = ["CSV_FIELD_LIMIT", "ROW_INSIDE", "any_field_length", "row_inside"]

#: the longest CSV field read (the csv module's default, 131,072 characters, stopped the file
#: on one long text; the text-length limits, not the reader, decide about long texts)
CSV_FIELD_LIMIT = 2**31 - 1

#: what is said of a record that ``row_inside`` finds a row in ({line}: which line)
ROW_INSIDE = "{line} reads as a row of its own, inside a field: a quote not closed?"


def any_field_length() -> None:
    """Raise the csv module's field size limit to ``CSV_FIELD_LIMIT`` (process-wide; raised,
    never lowered), before a reader is made: every reader of the project's CSV files calls
    it, so that each counts the same records (a second reader that stopped on a long field
    lost the first one's line numbers)."""
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))


def row_inside(
    record: Sequence[str],
    width: int,
    text_at: int,
    aspect_at: int,
    keys: Collection[str] | None = None,
) -> int | None:
    """Where a field of ``record`` holds a line that reads as a row of its own (``width``
    fields, the one at ``aspect_at`` found in the one at ``text_at``, or with ``keys``, an
    aspect-category model's categories in lower case, one of them): its line, counted from
    the record's first, 0-based; else None. A quote left open takes the lines after it into
    one field up to the next quote, and where that quote ends a field, the record has the
    header's number of fields and a row is gone without an error; a text of several lines
    whose lines are not rows (a review's paragraphs) is not such a record."""
    any_field_length()  # a line of a long text is one field as long
    lines_before = 0
    for field in record:
        lines = field.split("\n")
        for i, line in enumerate(lines if len(lines) > 1 else ()):
            cells = next(csv.reader([line]), [])
            term = cells[aspect_at].strip().lower() if len(cells) == width else ""
            if term and (term in keys if keys is not None else term in cells[text_at].lower()):
                return lines_before + i
        lines_before += len(lines) - 1
    return None


#: the names a text and an aspect column go by, in any case (the readers' and scoring's)
_TEXT_NAMES, _ASPECT_NAMES = {"text", "sentence"}, {"aspect", "term", "aspects", "terms"}


def delimiter_hint(header: Sequence[str]) -> str:
    """The hint of an error about a CSV header that is one column which another delimiter
    splits into a text and an aspect column ("text;aspect", a spreadsheet's export in a
    locale whose list separator is ';'), or "": the reader splits on commas only. A single
    column that merely holds a ';' ("notes; free text") gets no hint."""
    if len(header) != 1:
        return ""
    for sep, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
        parts = {p.strip().lower() for p in header[0].split(sep)}
        if parts & _TEXT_NAMES and parts & _ASPECT_NAMES:
            return (
                f"; the header is one column, {header[0]!r}, split by {name}: separate the "
                "columns with commas"
            )
    return ""
