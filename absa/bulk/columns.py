"""Score a pyarrow table of ``{text, aspect, start?, end?}`` rows (``{text, category}`` for
an aspect-category model, ``{text}`` with an extractor): every input column kept, the
prediction in typed columns of its own (``pred_label``, ``pred_score``, one
``pred_score_<label>`` each; for aspect terms ``pred_start`` / ``pred_end``,
``pred_occurrence`` / ``pred_occurrences``; for extracted ones ``pred_aspects``, a list of
structs, and ``pred_n_aspects``), and ``error``
(null on rows that were scored; ``pred_error`` where the input has an ``error`` column of
its own). The rows are prepared by ``absa.scoring.prepare_row``, as in JSONL and CSV
scoring."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from absa.bulk.jsonl import LINE_ERROR
from absa.errors import InputError
from absa.model.csvio import ROW_INSIDE, delimiter_hint, row_inside
from absa.scoring import (
    ERROR,
    NO_EXTRACTION,
    OTHER_KIND,
    OTHER_NAMES,
    PRED_ERROR,
    PREFIX,
    SCORE_,
    TERM_ROWS,
    FileModel,
    RowKind,
    header_hint,
    named_otherwise,
    other_kind,
    predicted,
    prepare_rows,
    read_names,
    refuse_both_errors,
    repeated,
    repeated_said,
    row_keys,
    row_kind,
)

if TYPE_CHECKING:
    import pyarrow as pa


def error_column(names: Sequence[str]) -> str:
    """The column a row's error goes in: ``error``, or ``pred_error`` where the input has an
    ``error`` column of its own (kept as it is), as ``absa.scoring`` writes JSONL and CSV."""
    return PRED_ERROR if ERROR in names else ERROR


def output_schema(
    labels: Sequence[str], error: str = ERROR, kind: RowKind = TERM_ROWS
) -> pa.Schema:
    """The columns scoring appends, in order (``error``: the error's, ``error_column``; an
    aspect term's span and occurrence, ``kind.added``, as whole numbers; extracted aspects
    as a list of ``aspect_type``)."""
    import pyarrow as pa

    labelled = [
        (f"{PREFIX}label", pa.string()),
        (f"{PREFIX}score", pa.float64()),
        *((f"{SCORE_}{k}", pa.float64()) for k in labels),
    ]
    return pa.schema(
        [
            *(labelled if kind.labelled else ()),
            *(
                (f"{PREFIX}{n}", pa.list_(aspect_type(labels)) if n == "aspects" else pa.int64())
                for n in kind.added
            ),
            (error, pa.string()),
        ]
    )


def aspect_type(labels: Sequence[str]) -> pa.DataType:
    """One extracted aspect's answer as a struct, the fields of ``AspectPrediction.to_dict``:
    term, start, end, label, score, scores (a float per label) and extracted.confidence."""
    import pyarrow as pa

    return pa.struct(
        [
            ("term", pa.string()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("label", pa.string()),
            ("score", pa.float64()),
            ("scores", pa.struct([(k, pa.float64()) for k in labels])),
            ("extracted", pa.struct([("confidence", pa.float64())])),
        ]
    )


def check_columns(
    names: Sequence[str],
    labels: Sequence[str],
    where: str,
    exact: bool = False,
    error: str | None = None,
    csv: bool = False,
    kind: RowKind = TERM_ROWS,
) -> dict[str, str]:
    """InputError naming ``where`` when the table cannot be scored, else the column each
    field scoring reads comes from (``_read_columns``; any others are carried through
    untouched). Rows read from JSONL (``LINE_ERROR`` among the columns) may lack a field:
    each such row gets its error. ``exact``: the fields read by their own names only (a
    JSONL file's). ``error``: the column a row's error goes in, chosen for the whole input
    (default: ``error_column(names)``). ``csv``: the names are a CSV header's (a header
    another delimiter splits is told so). ``kind``: the rows of a term or a category model."""
    twice = repeated(names)
    if twice is not None:  # which of them would be scored, and which kept?
        raise InputError(f"{where}: {repeated_said(twice)}")
    needed = () if LINE_ERROR in names else kind.needed
    read = _read_columns(names, where, exact, kind.read)
    missing = [c for c in needed if c not in read]
    if missing:
        hint = header_hint(missing[:1], names) + (delimiter_hint(names) if csv else "")
        if missing == ["aspect"] and not hint:
            hint = NO_EXTRACTION
        needs = " and ".join(kind.needed)
        raise InputError(f"{where}: no column {missing[0]!r} (the input needs {needs}){hint}")
    refuse_both_errors(names, where)
    added = set(output_schema(labels, error or error_column(names), kind).names)
    clash = [c for c in names if c in added]
    if clash:
        raise InputError(f"{where}: column {clash[0]!r} is one the output adds; rename it")
    return read


def _read_columns(
    names: Sequence[str], where: str, exact: bool, fields: Sequence[str]
) -> dict[str, str]:
    """The column each field scoring reads comes from (``absa.scoring.read_names``: "Text"
    as the text of a CSV or Parquet table without a column named "text"); with ``exact``
    (a JSONL file's fields, as ``absa.scoring`` reads JSONL) by their own names only."""
    if exact:
        return {c: c for c in fields if c in names}
    try:
        return read_names(names, where, fields)
    except ValueError as e:
        raise InputError(str(e)) from None


def score_table(
    predictor: FileModel, table: pa.Table, exact: bool = False, error: str | None = None
) -> pa.Table:
    """``table`` with the prediction columns appended, one output row per input row, in order.
    A row that cannot be scored (or a JSONL line that could not be read, ``LINE_ERROR``)
    gets its ``error`` and nulls in the other columns. ``exact``: a JSONL file's table, its
    fields read by their own names only (``check_columns``). ``error``: the column a row's
    error goes in, chosen once for all of an input's tables (``error_column`` of every
    field of the file or job: a JSONL block without the input's own ``error`` field would
    put it in ``error`` where the others put it in ``pred_error``); default: this table's."""
    import pyarrow as pa

    error = error or error_column(table.column_names)
    kind = row_kind(predictor)
    read = check_columns(table.column_names, predictor.labels, "the table", exact, error, kind=kind)
    schema = output_schema(predictor.labels, error, kind)
    unreadable: list[str | None] = [None] * table.num_rows
    if LINE_ERROR in table.column_names:  # never a read field's column
        unreadable = table.column(LINE_ERROR).to_pylist()
        table = table.drop_columns([LINE_ERROR])
    if not exact and kind.key is not None:  # a CSV (or Parquet) file's: where a quote left
        # open took a row into a field, told by its aspect in its text (a text alone: none)
        inside = _rows_inside(table, read, kind.key, row_keys(predictor))
        unreadable = [u or s for u, s in zip(unreadable, inside, strict=True)]
    # a column named as the HTTP API or the training data name a field ("aspects", "term"),
    # or as the other kind of model's rows do ("category"): a row lacking the field has it,
    # for the error's hint, where its value is there
    aliases = [n for n in table.column_names if n not in read.values() and _other_name(n)]
    rows = [
        {
            **{field: row[name] for field, name in read.items()},
            **{n: row[n] for n in aliases if row[n] not in (None, "")},
        }
        for row in table.select([*read.values(), *aliases]).to_pylist()
    ]
    prepared = prepare_rows(predictor, rows, unreadable)
    answers = iter(predictor.predict_many([p.prepared for p, _ in prepared if p is not None]))
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    for prep, err in prepared:
        values = predicted(prep, next(answers), nested=False) if prep is not None else {}
        values[error] = err or None
        for name, column in columns.items():
            column.append(values.get(name))
    for field in schema:
        table = table.append_column(field, pa.array(columns[field.name], field.type))
    return table


def _rows_inside(
    table: pa.Table, read: dict[str, str], key: str, keys: frozenset[str] | None
) -> list[str | None]:
    """For each row, what ``absa.scoring`` says of a CSV record with a line inside a field
    that reads as a row of its own (``row_inside``), else None; ``key``: the field beside
    the text (aspect or category); ``keys``: ``absa.scoring.row_keys``. Only the rows with a line
    break in a string column are made Python records (most have none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = table.column_names
    at = (names.index(read["text"]), names.index(read[key]))
    said: list[str | None] = [None] * table.num_rows
    broken = [
        pc.fill_null(pc.match_substring(c, "\n"), False)
        for c in table.columns
        if pa.types.is_string(c.type) or pa.types.is_large_string(c.type)
    ]
    if not broken:
        return said
    where = pc.indices_nonzero(functools.reduce(pc.or_, broken))
    taken = table.take(where).columns  # by position: names may repeat in a Parquet file
    rows_taken = zip(*(c.to_pylist() for c in taken), strict=True)
    for i, values in zip(where.to_pylist(), rows_taken, strict=True):
        record = ["" if v is None else str(v) for v in values]
        inside = row_inside(record, len(record), *at, keys)
        if inside is not None:
            said[i] = ROW_INSIDE.format(line=f"line {inside + 1} of the row")
    return said


def _other_name(column: str) -> bool:
    """Whether ``column`` is another name of a read field (``OTHER_NAMES``), as
    ``named_otherwise`` reads it, or the other kind of model's field (``OTHER_KIND``)."""
    return any(named_otherwise(field, [column]) for field in OTHER_NAMES) or any(
        other_kind(field, [column]) for field in OTHER_KIND
    )
