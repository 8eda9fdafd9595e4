"""Single-process scoring where Parquet is the input or the output: rows are read in batches
(a Parquet file row group by row group; CSV and JSONL block by block with pyarrow's streaming
readers), scored by ``score_table`` and written as they come, so memory stays flat on any
file size. A row that cannot be scored gets its ``error``, a JSONL line that is not JSON
too (``absa.bulk.jsonl``); a file pyarrow cannot parse (a CSV row with too many fields) stops
the run with one message naming the file. A bad row is logged with the file and the line it
starts on, as ``absa.scoring`` logs it (blank lines and the CSV header counted); a Parquet
input has no lines, so there it is the row number. Bytes (a Parquet binary column) written
to JSONL or CSV are text: theirs where they are UTF-8, else base64 (``bytes_text``)."""

from __future__ import annotations

import base64
import csv
import io
import json
import logging
import re
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa  # the parquet extra; the CLI names it when it is missing
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from tqdm import tqdm

from absa.bulk.columns import check_columns, error_column, score_table
from absa.bulk.jsonl import LINE_ERROR, decoded, file_lines, jsonl_tables, refuse_inner_name
from absa.scoring import (
    NO_SPACE,
    TERM_ROWS,
    FileModel,
    RowKind,
    ScoreStats,
    any_field_length,
    cannot_write,
    finite,
    json_line,
    numbered_records,
    refuse_both_errors,
    repeated,
    repeated_said,
    row_kind,
    undecoded,
)
from absa.scoring_paths import check_paths, new_part, publish

log = logging.getLogger(__name__)

# pyarrow's record number in a CSV parse error (blank lines and line breaks in values left out)
_ROW = re.compile(r"Row #\d+: ")
#: the largest integer every one below it a float64 holds exactly (2**53)
FLOAT_EXACT = 2**53
#: rows per Parquet row group written (the scoring itself goes ``chunk`` rows at a time)
ROW_GROUP = 65_536
#: bytes of CSV pyarrow parses at a time (its default); grown up to ``CSV_BLOCK_MAX`` (the
#: most pyarrow takes) where one record is longer (``csv_batches``)
CSV_BLOCK = 1 << 20
CSV_BLOCK_MAX = 2**31 - 1


def file_system(path: str) -> tuple[Any, str]:
    """(the pyarrow file system, the path within it) of a local path or a URI."""
    import pyarrow.fs as pa_fs

    if "://" in path:
        return pa_fs.FileSystem.from_uri(path)
    return pa_fs.LocalFileSystem(), path


def csv_header(path: str, filesystem: Any = None) -> list[str]:
    """The column names on the first line of a CSV file (a local path or a URI; or a path
    within ``filesystem``), the line ending in ``\\n``, ``\\r\\n`` or ``\\r`` as pyarrow
    reads it; ValueError naming the file and line 1 where the csv module cannot read it or a
    name is not UTF-8."""
    fs, inner = file_system(path) if filesystem is None else (filesystem, path)
    # read as far as the header goes: cut at 64 KiB, a wide file's text and aspect were "no
    # column 'text'", and a column past the cut was not read as strings ("001" became 1).
    # utf-8-sig: a byte-order mark is not part of the first column's name (pyarrow drops it)
    with io.TextIOWrapper(
        fs.open_input_stream(inner), encoding="utf-8-sig", errors="surrogateescape", newline=""
    ) as text:
        try:
            header = next(csv.reader(text), [])
        except csv.Error as e:
            raise ValueError(f"{path}:1: {e}") from None
    bad = undecoded(header)
    if bad:  # as absa.scoring says it
        raise ValueError(f"{path}:1: {bad}")
    return header


def csv_bytes(header: list[str]) -> pa_csv.ConvertOptions:
    """Every column of a CSV file with this ``header`` read as bytes, for ``utf8_columns``
    to decode (so that a byte that is not UTF-8 fails its row and not the file): strings,
    as ``absa.scoring`` reads CSV, whose types do not depend on which rows a block holds."""
    return pa_csv.ConvertOptions(
        column_types=dict.fromkeys(header, pa.binary()), strings_can_be_null=False
    )


def utf8_columns(table: pa.Table) -> pa.Table:
    """``table``'s binary columns (a CSV read as bytes) as strings. A column of valid UTF-8
    is cast at once; in one that is not, each value that is not has its bad bytes as U+FFFD
    and its row gets ``LINE_ERROR``, worded as ``absa.scoring`` words it, so the row is
    reported bad and the rest of the file is scored, as on the JSONL and CSV paths."""
    errors: list[str | None] = [None] * table.num_rows
    columns: list[pa.ChunkedArray | pa.Array] = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if not pa.types.is_binary(column.type):
            columns.append(column)
            continue
        try:
            text = column.cast(pa.string())
        except pa.ArrowInvalid:  # a value that is not UTF-8
            raw: list[bytes] = column.to_pylist()
            for row, value in enumerate(raw):
                said = undecoded(value.decode("utf-8", "surrogateescape"), name)
                errors[row] = errors[row] or said
            text = pa.array([v.decode("utf-8", "replace") for v in raw], pa.string())
        columns.append(text)
    # built once: a set_column per column copied the schema each time (8 s for 5,000 columns)
    table = pa.Table.from_arrays(columns, names=table.column_names).replace_schema_metadata(
        table.schema.metadata
    )
    if any(errors):
        table = table.append_column(LINE_ERROR, pa.array(errors, pa.string()))
    return table


def read_batches(src: Path, chunk: int, kind: RowKind = TERM_ROWS) -> Iterator[pa.Table]:
    """``src`` (.parquet, .csv, .jsonl) as tables of at most ``chunk`` rows. CSV columns are
    all read as strings, as the CSV path of ``absa.scoring`` reads them; a row with a byte
    that is not UTF-8 carries its error (``utf8_columns``). ``kind``: the rows a CSV header
    must name columns for."""
    suffix = src.suffix.lower()
    decode = suffix == ".csv"
    if suffix == ".parquet":
        parquet = pq.ParquetFile(src)
        refuse_inner_name(parquet.schema_arrow.names, str(src))
        batches: Iterator[pa.RecordBatch] = parquet.iter_batches(batch_size=chunk)
    elif suffix == ".csv":
        header = csv_header(str(src))
        twice = repeated(header)
        if twice is not None:  # as absa.scoring refuses it: a row would keep only one of them
            raise ValueError(f"{src}:1: {repeated_said(twice)}")
        refuse_inner_name(header, f"{src}:1")
        # now: a block with a bad byte carries LINE_ERROR, and its rows are not checked for
        # these (a JSONL block's row may lack a field; a CSV's columns are its header's)
        check_columns(header, (), str(src), csv=True, kind=kind)
        batches = csv_batches(src, header)
    elif suffix in (".jsonl", ".json"):
        with src.open("rb") as f:
            yield from jsonl_tables(file_lines(f), str(src), chunk)
        return
    else:
        raise ValueError(f"{src}: use a .parquet, .csv or .jsonl file")
    for batch in batches:
        table = pa.Table.from_batches([batch])
        table = utf8_columns(table) if decode else table
        for start in range(0, table.num_rows, chunk):
            yield table.slice(start, chunk)


def csv_batches(src: Path, header: list[str]) -> Iterator[pa.RecordBatch]:
    """The records of a CSV file read by pyarrow (every column bytes, ``csv_bytes``), in
    blocks of ``CSV_BLOCK`` bytes, or larger where a record is: pyarrow stopped on one over
    two blocks ("straddling object straddles two block boundaries"), where ``absa.scoring``
    reads a field of any length. The file is then read again from its start with blocks
    twice as large, the records already given skipped, so each comes once and in order."""
    block, given = CSV_BLOCK, 0  # records yielded so far, by every reading
    while True:
        skip = given  # of this reading's records, those yielded by an earlier one
        try:
            reader = pa_csv.open_csv(
                src,
                read_options=pa_csv.ReadOptions(block_size=block),
                parse_options=pa_csv.ParseOptions(newlines_in_values=True),
                convert_options=csv_bytes(header),
            )
            for batch in reader:
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                batch, skip = batch.slice(skip), 0
                given += batch.num_rows
                yield batch
            return
        except pa.ArrowInvalid as e:
            if "straddling" not in str(e) or block >= CSV_BLOCK_MAX:
                raise
            block = min(block * 2, CSV_BLOCK_MAX)
            log.debug("%s: a record over two blocks; reading again in blocks of %d", src, block)


def _has_empty_struct(t: pa.DataType) -> bool:
    """``t`` is, or holds, a struct of no fields (a JSON ``{}``), which Parquet cannot store."""
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(
            _has_empty_struct(t.field(i).type) for i in range(t.num_fields)
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_empty_struct(t.value_type)
    if pa.types.is_map(t):
        return _has_empty_struct(t.key_type) or _has_empty_struct(t.item_type)
    return False


def _empty_objects(table: pa.Table) -> dict[str, int]:
    """Each column of ``table`` whose type holds an object with no fields (a JSONL ``{}``
    beside no object with fields), with the index of its first row holding one."""
    found = {}
    for f in table.schema:
        if _has_empty_struct(f.type):
            values = table.column(f.name).to_pylist()
            found[f.name] = next((i for i, v in enumerate(values) if _holds_empty_object(v)), 0)
    return found


def _no_fields(where: str, name: str) -> str:
    return (
        f"{where}: field {name!r} holds an object with no fields ({{}}), which Parquet cannot "
        "store: give it a field or null, or write .jsonl or .csv"
    )


def _holds_empty_object(value: object) -> bool:
    if isinstance(value, dict):
        return not value or any(_holds_empty_object(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_empty_object(v) for v in value)
    return False


class TableWriter:
    """Scored tables to one .parquet, .jsonl or .csv file, in order. The tables may differ in
    their columns (JSONL blocks: a field absent or all null in one): the file's columns are
    those of the first row group (Parquet) or table (CSV), or, where the input was read
    ahead (``expect``), all of the input's; a table gets nulls for the ones it lacks. A
    field that only appears after the columns were written, or whose values change type (a
    JSONL number, then a string), is an error naming the row: ``locate(row)``
    (``FILE:LINE``), by default ``SOURCE: row N``."""

    def __init__(
        self,
        path: Path,
        fmt: str,
        source: str = "",
        locate: Callable[[int], str] | None = None,
    ) -> None:
        self.path, self.fmt = path, fmt.lower().lstrip(".")
        self.source = source or str(path)
        self.locate = locate or (lambda row: f"{self.source}: row {row}")
        if self.fmt not in ("parquet", "jsonl", "json", "csv"):
            raise ValueError(f"{path}: write a .parquet, .jsonl or .csv file")
        self.parquet: pq.ParquetWriter | None = None
        self.csv: pa_csv.CSVWriter | None = None
        self.text: IO[str] | None = None
        self.pending: list[pa.Table] = []
        self.schema: pa.Schema | None = None  # the file's columns, once written
        self.types: pa.Schema | None = None  # the columns of the tables before it is
        self.ahead = False  # whether ``types`` holds the whole input's columns (``expect``)
        self.wide: dict[str, int] = {}  # a field's first row with an integer past 2**53
        self.rows = 0  # rows given to ``write``: the next table's first is row rows + 1

    def expect(self, tables: Iterable[pa.Table]) -> None:
        """Read the input ahead, before a row is scored (a JSONL file's blocks, whose fields
        may differ): its fields' types are merged over all of it, a clash refused as
        ``write`` refuses it, naming the row, and the file's columns are then every field
        of the input, in the order first seen, before the ones scoring adds. A field first
        seen, or first given a value, after the first row group was written stopped the run
        there. ``tables``: the input as ``write`` will be given it, less the columns
        scoring adds."""
        empty: dict[str, int] = {}  # a field's first row holding an object with no fields
        for table in tables:
            table = self._as_written(table)
            self._check(table)
            for name, at in _empty_objects(table).items():
                empty.setdefault(name, self.rows + 1 + at)
            self.rows += table.num_rows
        if self.fmt == "parquet" and self.types is not None:
            for name, row in empty.items():
                if _has_empty_struct(self.types.field(name).type):  # no row gave it a field
                    raise ValueError(_no_fields(self.locate(row), name))
        self.rows, self.ahead = 0, self.types is not None

    def _as_written(self, table: pa.Table) -> pa.Table:
        """CSV cells are text: nested values as JSON, bytes as their text (or base64)."""
        return text_columns(json_columns(table)) if self.fmt == "csv" else table

    def _columns(self, table: pa.Table) -> pa.Schema:
        """The file's columns, fixed with its first rows (``table``): the input's, read
        ahead, with those ``table`` adds; else ``table``'s."""
        if not self.ahead:
            return table.schema
        assert self.types is not None  # ``_check`` merged ``table`` into them
        return self.types

    def write(self, table: pa.Table) -> None:
        if self.fmt == "parquet":
            self._check(table)
            self.pending.append(table)
            self.rows += table.num_rows
            if sum(t.num_rows for t in self.pending) >= ROW_GROUP:
                self._flush()
            return
        elif self.fmt == "csv":
            table = self._as_written(table)
            self._check(table)
            if self.csv is None:
                self.schema = self._columns(table)
                self.csv = pa_csv.CSVWriter(str(self.path), self.schema)
            self.csv.write_table(self._conform(table))
        else:
            if self.text is None:
                self.text = self.path.open("w", encoding="utf-8")
            for row in table.to_pylist():  # NaN: null, not a bare NaN
                self.text.write(json_line(row, default=json_default))
        self.rows += table.num_rows

    def _check(self, table: pa.Table) -> None:
        """Refuse a column of ``table`` the file cannot take as it is: one that first has a
        value after the file's columns were written, or whose values are of another type than
        before (a JSONL field that was a number, now a string). Cast to the file's type,
        "0042" became 42, 7 True, and a struct lost its new field; merged with the tables
        pending, pyarrow stopped the run with a traceback. Until the file's columns are
        written, a column null so far takes the type it gets, and an integer one becomes
        float beside floats, as JSON numbers do within one block."""
        fixed = self.schema is not None
        before = self.schema if fixed else self.types
        self._note_wide_integers(table)
        if before is None:  # the first table: its types are the ones to keep
            self.types = table.schema
            return
        for f in table.schema:
            column = table.column(f.name)
            if column.null_count == len(column):
                continue  # nulls fit any column
            if f.name not in before.names:
                if not fixed:
                    continue
                why = (
                    "first appears after the first rows were written; give every row the same "
                    "fields (null where there is no value)"
                )
            else:
                had = before.field(f.name).type
                merged = _merged(had, f.type)
                if merged is not None and (merged == had or not fixed):
                    continue
                if pa.types.is_null(had):
                    why = (
                        f"first has a value here; rows 1-{self.rows} were written first, with "
                        "it null in every one, which made it a column of nulls: give it a "
                        "value in one of them, or write .jsonl"
                    )
                else:
                    why = (
                        f"is {f.type} here, {had} in the rows before; give it one type in every row"
                    )
            first = column.is_valid().index(True).as_py()  # the row of its first value
            raise ValueError(f"{self.locate(self.rows + 1 + first)}: field {f.name!r} {why}")
        if not fixed:
            self.types = pa.unify_schemas([before, table.schema], promote_options="permissive")
        self._no_wide_integers_as_floats(self.schema if fixed else self.types)

    def _note_wide_integers(self, table: pa.Table) -> None:
        """Keep the first row of each integer column of ``table`` holding a value a float
        cannot hold exactly (past 2**53 either way), as ``self.wide``."""
        for f in table.schema:
            if not pa.types.is_integer(f.type) or f.name in self.wide:
                continue
            column = table.column(f.name)
            low, high = (v.as_py() for v in pc.min_max(column).values())
            if low is None or -FLOAT_EXACT <= low <= high <= FLOAT_EXACT:
                continue  # (compared in Python: a uint64 column takes no negative bound)
            at = next(
                i
                for i, v in enumerate(column.to_pylist())
                if v is not None and abs(v) > FLOAT_EXACT
            )
            self.wide[f.name] = self.rows + 1 + at

    def _no_wide_integers_as_floats(self, types: pa.Schema | None) -> None:
        """Refuse a field of float ``types`` with an integer a float cannot hold (a JSON
        number past 2**53 in one block, numbers with a fraction in another), naming the
        integer's row: the cast failed once the rows were scored, naming none."""
        for name, row in self.wide.items():
            if types is not None and pa.types.is_floating(types.field(name).type):
                raise ValueError(
                    f"{self.locate(row)}: field {name!r} holds an integer past 2**53 here and "
                    "numbers with a fraction in other rows, which one column of floats cannot "
                    "hold exactly; give it as text"
                )

    def _flush(self) -> None:
        if not self.pending:
            return
        try:  # the types were checked (``_check``): an integer past float's range may fail
            table = pa.concat_tables(self.pending, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValueError(f"{self.source}: {e}") from None
        first_row = self.rows + 1 - table.num_rows  # the pending rows are the last ones
        self.pending.clear()
        if self.parquet is None:
            if not self.ahead:  # else ``expect`` looked at every row group's
                self._no_empty_objects(table, first_row)
            self.schema = self._columns(table)
            self.parquet = pq.ParquetWriter(self.path, self.schema)
        self.parquet.write_table(self._conform(table), row_group_size=ROW_GROUP)

    def _no_empty_objects(self, table: pa.Table, first_row: int) -> None:
        """Refuse a column of the file's first row group that is, or holds, an object with
        no fields, which Parquet cannot store: a JSONL ``{}`` beside no object with fields
        in that row group (beside one, it is that object's fields null). Names the line of
        the first such value."""
        for name, at in _empty_objects(table).items():
            raise ValueError(_no_fields(self.locate(first_row + at), name))

    def _conform(self, table: pa.Table) -> pa.Table:
        """``table`` with the file's columns, in its order and types (``_check``: a column
        the file does not have is all null, one of another type widens to the file's)."""
        assert self.schema is not None
        if table.schema == self.schema:
            return table
        columns = []
        for f in self.schema:
            column = table.column(f.name) if f.name in table.column_names else None
            if column is None or column.null_count == len(column):
                columns.append(pa.nulls(table.num_rows, f.type))
                continue
            try:
                columns.append(column.cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise ValueError(f"{self.source}: field {f.name!r} changes type ({e})") from None
        return pa.Table.from_arrays(columns, schema=self.schema)

    def close(self) -> None:
        self._flush()
        for w in self._take_open():
            w.close()
        if not self.path.exists():  # an input without rows: an empty file of the same kind
            self.path.touch()

    def abort(self) -> None:
        """Close without writing what is pending, and remove the file: a run that failed
        leaves nothing behind. ``close`` could fail again on the rows that failed the run;
        an error closing here is only logged, so that the run's own error is the one told."""
        self.pending.clear()
        for w in self._take_open():
            try:
                w.close()
            except Exception as e:  # the caller re-raises the run's own error
                log.debug("%s: closing after a failure: %s", self.path, e)
        self.path.unlink(missing_ok=True)

    def _take_open(self) -> list[Any]:
        """The writers still open, forgotten here so that each is closed once (``abort``
        may follow a ``close`` whose file could not be moved into place)."""
        open_ = [w for w in (self.parquet, self.csv, self.text) if w is not None]
        self.parquet = self.csv = self.text = None
        return open_


def _merged(had: pa.DataType, new: pa.DataType) -> pa.DataType | None:
    """The type one column of ``had`` values and ``new`` ones takes, as pyarrow merges two
    tables (null: the other; integer and float: float; structs: every field of both); None
    where the two cannot share one (a number and a string)."""
    one = [pa.schema([("x", had)]), pa.schema([("x", new)])]
    try:
        return pa.unify_schemas(one, promote_options="permissive").field(0).type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def bytes_text(value: bytes) -> str:
    """Bytes as a JSONL or CSV file holds them: their text where they are UTF-8, else
    base64. They were Python's repr in JSONL (``"b'ok'"``), and bytes that are not UTF-8
    stopped a CSV output ("Invalid UTF8 payload", then a refusal naming the row)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return base64.b64encode(value).decode("ascii")


def json_default(value: Any) -> Any:
    """A value JSON has no type for, as ``json.dumps`` writes it: bytes (a binary column, or
    in a nested one) as ``bytes_text``; anything else (a date, a decimal) as its ``str``."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_text(bytes(value))
    return str(value)


def _is_bytes(type_: pa.DataType) -> bool:
    return (
        pa.types.is_binary(type_)
        or pa.types.is_large_binary(type_)
        or pa.types.is_fixed_size_binary(type_)
    )


def _as_text(type_: pa.DataType) -> pa.DataType | None:
    """``type_`` with every binary in it a string (a list, struct or map of bytes too), or
    None where it holds no bytes."""
    if _is_bytes(type_):
        return pa.large_string() if pa.types.is_large_binary(type_) else pa.string()
    if pa.types.is_dictionary(type_):  # pandas' Categorical of bytes: written decoded
        return _as_text(type_.value_type)
    if pa.types.is_map(type_):
        key, item = _as_text(type_.key_type), _as_text(type_.item_type)
        return (
            None if key is item is None else pa.map_(key or type_.key_type, item or type_.item_type)
        )
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        value = _as_text(type_.value_type)
        make = pa.large_list if pa.types.is_large_list(type_) else pa.list_
        return None if value is None else make(value)
    if pa.types.is_fixed_size_list(type_):
        value = _as_text(type_.value_type)
        return None if value is None else pa.list_(value, type_.list_size)
    if pa.types.is_struct(type_):
        fields = [type_.field(i) for i in range(type_.num_fields)]
        texts = [_as_text(f.type) for f in fields]
        if all(t is None for t in texts):
            return None
        return pa.struct([f.with_type(t or f.type) for f, t in zip(fields, texts, strict=True)])
    return None


def _deep_text(value: Any) -> Any:
    """A Python value of a nested column with its bytes as ``bytes_text``."""
    if isinstance(value, bytes):
        return bytes_text(value)
    if isinstance(value, list):
        return [_deep_text(v) for v in value]
    if isinstance(value, tuple):  # a map's (key, item)
        return tuple(_deep_text(v) for v in value)
    if isinstance(value, dict):
        return {k: _deep_text(v) for k, v in value.items()}
    return value


def text_columns(table: pa.Table) -> pa.Table:
    """``table``'s binary columns as string columns, for a CSV file, which cannot hold
    bytes: each value as ``bytes_text`` (a column all UTF-8 cast at once), as JSONL output
    writes them; bytes inside a nested column too (Ray's JSON writer stopped on them)."""
    for i, f in enumerate(table.schema):
        to = _as_text(f.type)
        if to is None:
            continue
        column, text = table.column(i), None
        if _is_bytes(f.type):
            try:  # all of it UTF-8: at once
                text = column.cast(to)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
        if text is None:  # value by value (bytes that are not UTF-8, or inside a nested one)
            text = pa.array([_deep_text(v) for v in column.to_pylist()], to)
        table = table.set_column(i, pa.field(f.name, to), text)
    return table


def _json_text(value: Any) -> str:
    return json.dumps(finite(value), ensure_ascii=False, default=json_default)


def json_columns(table: pa.Table) -> pa.Table:
    """``table`` with every nested column (list, struct, map), which a CSV file cannot hold,
    as a string column of JSON (``["a", "b"]``, ``{"k": 1}``; null stays null), and NaN and
    infinities in float columns empty, as the JSONL-to-CSV path writes them (pyarrow's CSV
    writer wrote "nan" and "inf": one input, two CSV spellings by its format)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_floating(f.type):
            column = table.column(i)
            finite_ = pc.is_finite(column)
            table = table.set_column(i, f, pc.if_else(finite_, column, pa.scalar(None, f.type)))
        elif pa.types.is_nested(f.type):
            values = [None if v is None else _json_text(v) for v in table.column(i).to_pylist()]
            table = table.set_column(
                i, pa.field(f.name, pa.string()), pa.array(values, pa.string())
            )
    return table


def score_table_file(
    predictor: FileModel, src: Path, dst: Path, chunk: int = 4096, progress: bool = True
) -> ScoreStats:
    """Score ``src`` into ``dst`` (written whole or not at all), as ``absa.scoring.score_file``
    does for JSONL and CSV (rows of aspect terms, or of categories for a category model)."""
    src, dst = Path(src), Path(dst)
    check_paths(src, dst)
    stats = ScoreStats()
    where = _RowLines(src)
    try:
        # made now: opened with its first row group, it failed after that was scored
        with new_part(dst) as tmp:
            writer = TableWriter(tmp, dst.suffix, source=str(src), locate=where.named)
            exact = is_jsonl(src)  # a JSONL file's fields are read by their own names only
            # the column of a row's error, one for the whole file: a JSONL file's every field (read
            # ahead), else the columns every table has (a CSV header, a Parquet schema)
            error: str | None = None
            try:
                if exact and writer.fmt == "parquet":  # columns of one type each, fixed
                    error = _read_ahead(writer, src, chunk, predictor)  # (into CSV: absa.scoring's)
                with tqdm(unit=" rows", desc=src.name, disable=None if progress else True) as bar:
                    batches = read_batches(src, chunk, row_kind(predictor))
                    for table in _checked(batches, src, predictor, error):
                        error = error or error_column(table.column_names)
                        scored = score_table(predictor, table, exact=exact, error=error)
                        # written first: a row it refuses is named by ``where``, which reads forward
                        writer.write(scored)
                        _count(scored, stats, src, where, error)
                        bar.update(table.num_rows)
                if not stats.rows:  # no rows: a file of no rows that still names the columns
                    no_rows = _no_rows(src, row_kind(predictor))
                    empty = next(_checked(iter([no_rows]), src, predictor))  # the file named
                    writer.write(score_table(predictor, empty, exact=exact, error=error))
                writer.close()
                publish(tmp, dst)
            except BaseException as e:
                writer.abort()  # its writers closed; new_part removes the .part
                if isinstance(e, OSError) and e.errno in NO_SPACE:  # a full disk: said so
                    raise cannot_write(dst, e) from None
                raise
    finally:
        where.close()
    return stats


def _read_ahead(writer: TableWriter, src: Path, chunk: int, predictor: FileModel) -> str:
    """``writer.expect`` the JSONL file ``src``: every field, and a clash of types or an
    output column's name anywhere in it refused before a row is scored. The column a row's
    error goes in (``error_column`` of every field: ``pred_error`` where any row has an
    ``error`` field)."""
    t0 = time.perf_counter()
    names: set[str] = set()

    def noted(tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
        for t in tables:
            names.update(t.column_names)
            yield t.drop_columns([LINE_ERROR])

    batches = read_batches(src, chunk, row_kind(predictor))
    writer.expect(noted(_checked(batches, src, predictor)))
    refuse_both_errors(names, str(src))  # the two may be in different blocks
    log.info("%s: fields read ahead in %.1f s", src, time.perf_counter() - t0)
    return error_column(sorted(names))


def is_jsonl(src: Path) -> bool:
    """``src`` is read as JSONL (``read_batches``): its fields are read by their own names."""
    return src.suffix.lower() in (".jsonl", ".json")


def _no_rows(src: Path, kind: RowKind) -> pa.Table:
    """A table of no rows with the input's columns: a CSV's header (strings, as its rows
    are read), a Parquet file's schema; a JSONL file without rows names none but text and
    aspect (category: ``kind.key``)."""
    suffix = src.suffix.lower()
    if suffix == ".csv":
        return pa.table({name: pa.array([], pa.string()) for name in csv_header(str(src))})
    if suffix == ".parquet":
        return pq.read_schema(src).empty_table()
    return pa.table({name: pa.array([], pa.string()) for name in kind.needed})


def _checked(
    tables: Iterator[pa.Table], src: Path, predictor: FileModel, error: str | None = None
) -> Iterator[pa.Table]:
    """The tables, each checked for the columns scoring needs (JSONL blocks can differ: a
    field named like an output column may first occur in a later one), the file and rows
    named; pyarrow's parse errors named with the file. ``error``: the file's column for a
    row's error, where known (``check_columns``)."""
    row, kind = 1, row_kind(predictor)
    try:
        for table in tables:
            where = str(src) if row == 1 else f"{src} (rows {row}-{row + table.num_rows - 1})"
            exact = is_jsonl(src)
            check_columns(table.column_names, predictor.labels, where, exact, error, kind=kind)
            row += table.num_rows
            yield table
    except pa.ArrowException as e:
        raise parse_error(src, e) from None
    except OSError as e:
        if e.errno is not None or e.filename is not None:  # the system's: says what it is
            raise
        # pyarrow's IOError status: a damaged file ("Couldn't deserialize thrift"), unnamed
        raise ValueError(f"{src}: {one_line(str(e).strip())}") from None


def parse_error(src: Path, error: Exception) -> ValueError:
    """pyarrow's error reading the file ``src`` on one line (it quotes a row as it is, line
    breaks too), naming the file, or the line of a ragged CSV record (``ragged_line``)."""
    said = one_line(str(error))
    line = ragged_line(src)
    if line is not None:  # pyarrow's "Row #N" counts records, not lines: said by line
        said = _ROW.sub("", said)
    return ValueError(f"{line or src}: {said}")


def one_line(said: str) -> str:
    """``said`` on one line: line breaks and other control characters escaped."""
    said = said.replace("\r", "\\r").replace("\n", "\\n")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in said)


def ragged_line(src: Path) -> str | None:
    """``FILE:LINE`` of the first record of a CSV file whose fields are not as many as its
    header's, the line it starts on (pyarrow names none, or counts records without the
    blank lines); None for another file, or where the csv module finds no such record."""
    if src.suffix.lower() != ".csv":
        return None
    any_field_length()  # a long text is for the text-length limits to refuse, not the reader
    with src.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, [])
            for line, record in numbered_records(reader):
                if len(record) != len(header):
                    return f"{src}:{line}"
        except csv.Error:
            return f"{src}:{reader.line_num}"
    return None


class _RowLines:
    """The physical line each row of a JSONL or CSV input starts on, for the log: the tables
    pyarrow and ``absa.bulk.jsonl`` read carry no line numbers, and blank lines, the CSV
    header and values over several lines put a row's number off its line. Found on demand
    by a second, forward-only reader of the file, opened at the first bad row: a file of
    good rows is read once. None for a Parquet input (no lines), or where the second reader
    cannot follow pyarrow's (a CSV field over the csv module's size limit)."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.starts: Generator[int, None, None] | None = None
        self.row, self.line = 0, 0
        self.lost = src.suffix.lower() == ".parquet"

    def __call__(self, row: int) -> int | None:
        """The line of the 1-based ``row`` (asked for in increasing order)."""
        if self.lost:
            return None
        if self.starts is None:
            self.starts = self._starts()
        try:
            while self.row < row:
                self.line = next(self.starts)
                self.row += 1
        except (StopIteration, csv.Error, OSError) as e:
            log.debug("%s: line numbers lost at row %d (%s); naming rows", self.src, row, e)
            self.lost = True
            return None
        return self.line

    def _starts(self) -> Generator[int, None, None]:
        if self.src.suffix.lower() == ".csv":  # as pyarrow reads it: blank lines skipped
            any_field_length()  # as pyarrow: a field of any length (else lines lost after one)
            with self.src.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
                reader = csv.reader(f)
                next(reader, None)  # the header
                for line, _ in numbered_records(reader):
                    yield line
            return
        with self.src.open("rb") as f:  # as absa.bulk.jsonl reads it: blank lines skipped
            for line, text in enumerate(decoded(file_lines(f)), 1):
                if text.strip():
                    yield line

    def named(self, row: int) -> str:
        """``row`` as an error names it: ``FILE:LINE``, or ``FILE: row N`` without lines."""
        line = self(row)
        return f"{self.src}: row {row}" if line is None else f"{self.src}:{line}"

    def close(self) -> None:
        if self.starts is not None:
            self.starts.close()  # closes the file it holds open


def _count(
    scored: pa.Table,
    stats: ScoreStats,
    src: Path,
    where: Callable[[int], int | None],
    error: str,
) -> None:
    errors: list[Any] = scored.column(error).to_pylist()
    for i, err in enumerate(errors, stats.rows + 1):
        if err is None:
            continue
        line = where(i)
        stats.add_bad(src, i if line is None else line, err, by_row=line is None)
    stats.rows += len(errors)
    stats.scored += sum(e is None for e in errors)
