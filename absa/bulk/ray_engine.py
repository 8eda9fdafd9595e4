"""Bulk scoring on Ray: ``ray.data`` reads CSV, JSONL or Parquet files (local paths, globs or
object-storage URIs), ``map_batches`` scores them on a pool of actors that each load the
model artifact once (onnxruntime, 1 thread per actor, CUDA when an actor has a GPU), and
the rows are written back as Parquet or JSONL partitions.

Without ``RAY_ADDRESS`` a local Ray instance is started on this machine; with it (or
``address``) the job joins that cluster. Exactly once: Ray Data restarts a dead actor and
retries its batch (scoring is deterministic), and each write task writes one file named by
the write and its task index, so a retried write replaces its file rather than adding one.
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import io
import json
import logging
import math
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from absa.bulk.columns import check_columns, error_column, score_table
from absa.bulk.jsonl import LINE_ERROR, refuse_inner_name
from absa.errors import InputError
from absa.scoring import ERROR, refuse_both_errors, repeated, repeated_said
from absa.scoring_paths import beside

log = logging.getLogger(__name__)

FORMATS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}
OUTPUT_FORMATS = ("parquet", "jsonl")
JSONL_BLOCK = 8192  # rows per block read from a JSONL file
#: bytes of CSV a read task parses at a time: the longest record it reads is as long
RAY_CSV_BLOCK = 64 << 20


class Scorer:
    """The ``map_batches`` callable: one model per actor, loaded when the actor starts."""

    def __init__(
        self,
        model_dir: str,
        num_gpus: float = 0,
        threads: int = 1,
        csv: bool = False,
        text: bool = False,
        exact: bool = False,
        error: str = ERROR,
        columns: tuple[str, ...] = (),
    ) -> None:
        from absa.model.predictor import Predictor
        from absa.model.runtime import Runtime

        device = "cuda" if num_gpus > 0 else "cpu"
        self.predictor = Predictor(Runtime.load(Path(model_dir), device=device, threads=threads))
        self.csv = csv  # CSV columns come as bytes, decoded here a row at a time where bad
        # JSONL output: bytes as text, as single-process scoring writes them (Ray's JSON
        # writer stopped the job on bytes that are not UTF-8)
        self.text = text
        self.exact = exact  # JSONL: fields read by their own names only (score_table)
        self.error = error  # the column of a row's error, one for the whole job
        # every input column of the job: a batch gets nulls for those it lacks (a JSONL
        # file without a field, a CSV file without a column), as Ray's Parquet writer
        # stopped on blocks of different columns ('Field "error" does not exist')
        self.columns = columns

    def __call__(self, batch: Any) -> Any:  # a pyarrow.Table in, a pyarrow.Table out
        import pyarrow as pa

        from absa.bulk.files import text_columns, utf8_columns

        table = utf8_columns(batch) if self.csv else batch
        for name in self.columns:
            if name not in table.column_names:
                table = table.append_column(name, pa.nulls(table.num_rows))
        scored = score_table(self.predictor, table, exact=self.exact, error=self.error)
        return text_columns(scored) if self.text else scored


@dataclass(frozen=True)
class BulkStats:
    rows: int
    bad: int  # rows with an error
    files: int  # output files written
    seconds: float  # from the first read to the last write (the cluster already up)
    startup_seconds: float  # joining or starting Ray


def input_files(source: str | Path | list[str]) -> tuple[list[str], str]:
    """The files of ``source`` (a file, a directory, a glob, or a list of them; URIs such as
    ``s3://bucket/prefix/`` are passed to Ray as they are) and their one format."""
    sources = [str(s) for s in source] if isinstance(source, list) else [str(source)]
    files: list[str] = []
    for src in sources:
        if "://" in src:
            files.append(src)
        elif Path(src).is_dir():
            found = Path(src).rglob("*")  # a.CSV too, as a file named on its own is read
            files.extend(sorted(str(p) for p in found if p.suffix.lower() in FORMATS))
        else:
            files.extend(sorted(glob.glob(src)) if glob.has_magic(src) else [src])
    if not files:
        raise InputError(f"{', '.join(sources)}: no .parquet, .csv or .jsonl files there")
    for f in files:
        if "://" not in f and not Path(f).is_file():
            raise InputError(f"{f}: no such file")
    files = [f if "://" in f else str(Path(f).resolve()) for f in files]  # for every node
    kinds = {FORMATS.get(Path(f.rstrip("/")).suffix.lower(), "") for f in files}
    if "" in kinds and any("://" in f for f in files):
        kinds = {k for k in kinds if k} or {"parquet"}  # a prefix: Parquet unless named
    if len(kinds) != 1 or "" in kinds:
        raise InputError(
            f"{files[0]}: give files of one format, .parquet, .csv or .jsonl (found "
            f"{', '.join(sorted(k or 'other' for k in kinds))})"
        )
    return files, kinds.pop()


def connect(num_cpus: int | None = None, address: str | None = None) -> float:
    """Join the cluster at ``address`` / ``RAY_ADDRESS``, else start a local one (no
    dashboard); a no-op when Ray is up already. Seconds it took."""
    import ray

    began = time.perf_counter()
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        with _stop_handlers_kept():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    return time.perf_counter() - began


@contextlib.contextmanager
def _stop_handlers_kept() -> Iterator[None]:
    """SIGTERM's and SIGHUP's handlers as they were before the block: ray.init sets its own
    SIGTERM handler, which ended a command's job in an abort (exit 134) instead of its
    clean-up (the staging directory removed, the local instance shut down) and exit 143."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in before.items():
            if handler is not None and signal.getsignal(s) is not handler:
                signal.signal(s, handler)


def score_with_ray(
    source: str | Path | list[str],
    output: str | Path,
    *,
    model: str | Path | None = None,
    output_format: str = "parquet",
    workers: int = 2,
    num_gpus: float = 0,
    batch_size: int = 4096,
    rows_per_file: int = 100_000,
    address: str | None = None,
    progress: bool = True,
) -> BulkStats:
    """Score every row of ``source`` into partitions under ``output`` (a directory or URI
    that must not hold files yet). ``workers`` actors score, each with ``num_gpus`` GPUs
    (0: CPU, one core each), ``batch_size`` rows per call; an output file holds at least
    ``rows_per_file`` rows (but the last). Rows keep all their columns; a row that cannot be
    scored gets its ``error``. ``progress``: Ray Data's progress report (bars on a terminal,
    log lines elsewhere). Needs the ``ray`` extra.

    A local directory is written whole or not at all: the partitions go to a new directory
    beside it, moved into place when the job succeeds and removed when it fails (a rerun is
    not refused for a half-written output). A URI is written in place; both get an empty
    ``_SUCCESS`` file once every partition is there. Ray started here (none was running) is
    shut down at the end: start Ray first (``ray.init``) to score several sources on one
    instance."""
    import ray

    files, fmt = input_files(source)
    if output_format not in OUTPUT_FORMATS:
        raise InputError(f"output format {output_format!r}: use parquet or jsonl")
    if workers < 1 or batch_size < 1 or not 0 <= num_gpus < math.inf:  # nan too
        raise InputError("workers and batch size must be at least 1, GPUs at least 0")
    output = str(output) if "://" in str(output) else str(Path(output).resolve())
    _check_empty(output)
    model_dir = _model_dir(model)
    if fmt == "csv":
        _check_csv_parses(files)
    names = _check_jsonl_types(files) if fmt == "jsonl" else None
    # a local instance gets a logical CPU beyond the actors' for the read and write tasks
    started = not ray.is_initialized()
    local = started and not (address or os.environ.get("RAY_ADDRESS"))
    try:
        startup = connect(workers + 1, address)
        if local and num_gpus:
            _check_gpus(num_gpus)
        ray.data.DataContext.get_current().enable_progress_bars = progress
        began = time.perf_counter()
        with _staged(output) as staging:
            job = _Job(
                files, fmt, staging, model_dir, output_format, workers, num_gpus, batch_size, names
            )
            try:
                error = job.run(rows_per_file)
            except ray.exceptions.RayTaskError as e:  # a file Ray cannot read (ragged CSV)
                said = _first_line(e)
                if not isinstance(_cause(e), InputError):  # ours name the file and line
                    said = f"{', '.join(files[:3])}: {said}"
                raise InputError(said) from None
            _mark_done(staging)
        seconds = time.perf_counter() - began
    finally:
        if started and ray.is_initialized():  # the local instance connect() started
            ray.shutdown()
    rows, bad, files_out = _count(output, output_format, error)
    log.info("%d rows scored into %s (%d with an error) in %.1f s", rows, output, bad, seconds)
    return BulkStats(rows, bad, files_out, seconds, startup)


@dataclass(frozen=True)
class _Job:
    files: list[str]
    fmt: str
    output: str
    model_dir: Path
    output_format: str
    workers: int
    num_gpus: float
    batch_size: int
    # a JSONL input's every field, where the type check read each file (all local): no pass
    # of Ray's over the data for them
    names: list[str] | None = None

    def run(self, rows_per_file: int) -> str:
        """Read, score on the actor pool, write; the column a row's error went in."""
        import ray

        ds = _read(self.files, self.fmt)
        schema = ds.schema()
        if schema is None:  # no rows at all (an empty file, a CSV header alone): none to write
            return ERROR
        # the column of a row's error, chosen once from every file's columns (a JSONL
        # file's every field): chosen batch by batch, a batch without the input's own
        # ``error`` field put the row's error in ``error``, which was then not counted
        names = self.names if self.names is not None else _input_names(ds, self.files, self.fmt)
        error = error_column(names)
        where = self.files[0]
        if self.fmt == "csv":  # each file's own header (a CSV's columns are its header's)
            _check_csv_headers(self.files, _labels(self.model_dir), error)
        if self.fmt != "jsonl":  # a JSONL reader refuses the field itself, naming its line
            refuse_inner_name(names, where)
        refuse_both_errors(names, ", ".join(self.files[:3]))  # maybe in two files
        check_columns(names, _labels(self.model_dir), where, self.fmt == "jsonl", error)
        # blocks of at most a batch: a large file is spread over every actor
        scored = ds.repartition(target_num_rows_per_block=self.batch_size).map_batches(
            Scorer,
            fn_constructor_kwargs={
                "model_dir": str(self.model_dir),
                "num_gpus": self.num_gpus,
                "csv": self.fmt == "csv",
                "exact": self.fmt == "jsonl",
                "text": self.output_format == "jsonl",
                "error": error,
                "columns": tuple(n for n in names if n != LINE_ERROR),
            },
            batch_format="pyarrow",
            batch_size=self.batch_size,
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=0 if self.num_gpus else 1,
            num_gpus=self.num_gpus or None,
        )
        write = scored.write_parquet if self.output_format == "parquet" else scored.write_json
        write(self.output, min_rows_per_file=rows_per_file)
        return error


def _input_names(ds: Any, files: list[str], fmt: str) -> list[str]:
    """Every column of the input, in the order first seen: every Parquet file's (their
    footers), every CSV file's header, every field of every JSONL row (a pass over the
    dataset: a field may first occur in any row). ``ds.schema()`` is its first block's."""
    names: dict[str, None] = {}
    if fmt == "jsonl":
        for row in ds.map_batches(_names, batch_format="pyarrow", batch_size=None).iter_rows():
            names.update(dict.fromkeys(json.loads(row["names"])))
    elif fmt == "csv":
        from absa.bulk.files import csv_header

        for f in files:
            names.update(dict.fromkeys(csv_header(f)))
    else:
        import pyarrow.dataset as pa_ds

        from absa.bulk.files import file_system

        for f in files:
            fs, path = file_system(f)
            for fragment in pa_ds.dataset(path, format="parquet", filesystem=fs).get_fragments():
                names.update(dict.fromkeys(fragment.physical_schema.names))
    return list(names)


def _names(table: Any) -> Any:
    """A block's column names, as a table of one row (``_input_names``)."""
    import pyarrow as pa

    return pa.table({"names": [json.dumps(table.column_names)]})


@contextlib.contextmanager
def _staged(output: str) -> Iterator[str]:
    """Where the job writes: for a local ``output``, a new directory beside it (same file
    system, so the move is a rename) that replaces ``output`` (absent or empty) when the
    block succeeds and is removed when it fails; a URI is written in place (object stores
    have no rename: its readers wait for ``DONE``, written last)."""
    if "://" in output:
        yield output
        return
    final = Path(output)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = beside(final, ".", f".part-{uuid.uuid4().hex[:12]}")  # within the name limit
    staging.mkdir()  # the permissions a directory Ray made would get (mkdtemp's are 0700)
    try:
        yield str(staging)
        _check_empty(output)  # someone wrote there meanwhile: their files are kept
        staging.replace(final)  # onto an empty directory too
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


#: written last into a finished output (Hadoop's and Spark's convention): a reader of a URI,
#: written in place, waits for it; pyarrow and Ray Data skip names that start with "_"
DONE = "_SUCCESS"


def _mark_done(output: str) -> None:
    """An empty ``DONE`` file in ``output``, once every partition is written."""
    from absa.bulk.files import file_system

    fs, path = file_system(output)
    with fs.open_output_stream(f"{path.rstrip('/')}/{DONE}"):
        pass


def _cause(error: BaseException) -> BaseException:
    """A Ray task's original exception."""
    while isinstance(getattr(error, "cause", None), BaseException):
        error = error.cause  # type: ignore[attr-defined]
    return error


def _first_line(error: BaseException) -> str:
    """What a Ray task's error says (its original exception, not Ray's traceback), in one
    line without colour codes."""
    error = _cause(error)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else type(error).__name__


def _count(output: str, output_format: str, error: str) -> tuple[int, int, int]:
    """(rows, rows with an error, files) written under ``output``, read back: Parquet with
    pyarrow, JSONL line by line (pyarrow's JSON reader, its schema too, fails on a row over
    its block, 1 MiB, and the job's rows may be of any length)."""
    import pyarrow as pa
    import pyarrow.dataset as pa_ds

    if output_format == "parquet":
        written = pa_ds.dataset(output, format="parquet")
        bad = written.count_rows(filter=pa_ds.field(error).is_valid()) if written.files else 0
        return written.count_rows(), bad, len(written.files)
    # listed as a dataset lists them (no `_SUCCESS`, nothing under `_temporary/` or a hidden
    # folder), its schema given: read from the first file, a row over 1 MiB failed it
    listed = pa_ds.dataset(output, format="json", schema=pa.schema([]))
    fs, files = listed.filesystem, listed.files
    rows = bad = 0
    for path in files:
        with fs.open_input_stream(path) as f, io.TextIOWrapper(f, "utf-8") as t:
            for line in t:
                if line.strip():
                    rows += 1
                    bad += json.loads(line).get(error) is not None
    return rows, bad, len(files)


def _read(files: list[str], fmt: str) -> Any:
    import ray

    _import_before_threads()

    if fmt == "parquet":
        return ray.data.read_parquet(files)
    if fmt == "jsonl":  # a bad line is a row with its error (absa.bulk.jsonl)
        return ray.data.read_datasource(_jsonl_source(files))
    return ray.data.read_datasource(_csv_source(files))


def _csv_source(files: list[str]) -> Any:
    """A Ray datasource of CSV files, each read with its own header, every column as bytes
    for Scorer to decode (a bad byte fails its row): read with the first file's header, a
    column the first lacked was typed by pyarrow ("00123" became 123)."""
    from ray.data.datasource import FileBasedDatasource

    class CsvSource(FileBasedDatasource):
        def _read_stream(self, f: Any, path: str) -> Iterator[Any]:
            import pyarrow as pa
            import pyarrow.csv as pa_csv

            from absa.bulk.files import csv_bytes, csv_header

            try:
                reader = pa_csv.open_csv(
                    f,
                    convert_options=csv_bytes(csv_header(path, self._filesystem)),
                    parse_options=pa_csv.ParseOptions(newlines_in_values=True),
                    # a record over two blocks failed the job (pyarrow's 1 MiB: a 2 MB
                    # review); a task cannot read again with larger ones, as
                    # single-process scoring does
                    read_options=pa_csv.ReadOptions(block_size=RAY_CSV_BLOCK, use_threads=False),
                )
                for batch in reader:
                    yield pa.Table.from_batches([batch])
            except pa.ArrowInvalid as e:  # a ragged record: said as single-process scoring
                raise _csv_error(path, self._filesystem, e) from None

    return CsvSource(files)


def _check_csv_parses(files: list[str]) -> None:
    """Each local CSV file read through with pyarrow, as the read tasks read it, before
    Ray starts: a ragged record is refused in one line naming its line, as single-process
    scoring refuses it, not as a failed read task (Ray's traceback before it). A URI's
    file is left to its read task (``_csv_error``)."""
    import pyarrow as pa

    from absa.bulk.files import csv_batches, csv_header, parse_error

    for f in files:
        if "://" in f:
            continue
        try:
            for _ in csv_batches(Path(f), csv_header(f)):
                pass
        except pa.ArrowInvalid as e:
            raise InputError(str(parse_error(Path(f), e))) from None


def _check_jsonl_types(files: list[str]) -> list[str] | None:
    """Each local JSONL file's fields read ahead as single-process scoring into Parquet reads
    them (``TableWriter.expect``), and their types merged over the files, before Ray
    starts: Ray's blocks are typed columns in either output format, so a field whose values
    change type (a number, then a string) failed the whole job after some 170 lines of
    Ray's traceback. It is refused in one line naming the file and line (or both files). A
    URI's file is left to Ray. Returns every field, in the order first seen, with the
    read-error column (as ``_input_names`` finds them), where every file was local."""
    import pyarrow as pa

    from absa.bulk.files import TableWriter, _RowLines, read_batches

    types: dict[str, tuple[pa.DataType, str]] = {}  # a field's type, and the file it is from
    for f in files:
        if "://" in f:
            continue
        src, lines = Path(f), _RowLines(Path(f))
        try:
            writer = TableWriter(src.with_suffix(".parquet"), "parquet", f, lines.named)
            writer.expect(t.drop_columns([LINE_ERROR]) for t in read_batches(src, JSONL_BLOCK))
        except ValueError as e:
            raise InputError(f"{e} (--engine ray writes typed columns)") from None
        finally:
            lines.close()
        for field in writer.types or []:
            first = types.setdefault(field.name, (field.type, f))
            if pa.types.is_null(first[0]):
                types[field.name] = (field.type, f)
            elif not pa.types.is_null(field.type) and not _one_kind(field.type, first[0]):
                raise InputError(
                    f"{f}: field {field.name!r} holds {field.type} values where {first[1]} "
                    f"holds {first[0]}: give it one type in every file (--engine ray writes "
                    "typed columns)"
                )
    return None if any("://" in f for f in files) else [*types, LINE_ERROR]


def _one_kind(a: Any, b: Any) -> bool:
    """Whether two files' types of a field are one: the same, or numbers (JSON's 1 and 1.5,
    an integer column beside a float one, as within one file)."""
    import pyarrow as pa

    numbers = (pa.types.is_integer, pa.types.is_floating)
    return bool(a == b) or all(any(kind(t) for kind in numbers) for t in (a, b))


def _csv_error(path: str, filesystem: Any, error: Exception) -> InputError:
    """pyarrow's error reading the CSV file ``path`` as single-process scoring says it (a
    local file's ragged record with its line), not Ray's "filter out non-CSV file with
    partition_filter" and a traceback."""
    import pyarrow.fs as pa_fs

    from absa.bulk.files import one_line, parse_error

    unwrap = getattr(filesystem, "unwrap", None)  # Ray's retrying wrapper
    if isinstance(unwrap() if unwrap else filesystem, pa_fs.LocalFileSystem):
        return InputError(str(parse_error(Path(path), error)))
    return InputError(f"{path}: {one_line(str(error))}")


def _check_csv_headers(files: list[str], labels: list[str], error: str) -> None:
    """Each CSV file's header checked as single-process scoring checks it (a column twice,
    no text or aspect, an output column's name), naming the file; and refused where two
    files read a field from columns of different names ("text" in one, "Text" in another):
    one table of both would hold both columns, each null in the other file's rows."""
    from absa.bulk.files import csv_header

    seen: dict[str, tuple[str, str]] = {}  # a field: the file first reading it, and column
    for f in files:
        header = csv_header(f)
        twice = repeated(header)
        if twice is not None:
            raise InputError(f"{f}:1: {repeated_said(twice)}")
        refuse_inner_name(header, f)
        for field, name in check_columns(header, labels, f, error=error, csv=True).items():
            there, other = seen.setdefault(field, (f, name))
            if other != name:
                raise InputError(
                    f"{f}: the {field} is column {name!r} here and {other!r} in {there}; "
                    "give the CSV files of one job the same names for text, aspect, start "
                    "and end"
                )


def _jsonl_source(files: list[str]) -> Any:
    """A Ray datasource of JSONL files read by ``absa.bulk.jsonl``, one task per file, blocks
    of ``JSONL_BLOCK`` rows."""
    from ray.data.datasource import FileBasedDatasource

    from absa.bulk.jsonl import file_lines, jsonl_tables

    class JsonlSource(FileBasedDatasource):
        def _read_stream(self, f: Any, path: str) -> Iterator[Any]:
            yield from jsonl_tables(file_lines(f), path, JSONL_BLOCK, placed=True)

    return JsonlSource(files)


def _import_before_threads() -> None:
    """Ray Data resolves paths from several threads, each trying to import fsspec's HTTP
    filesystem and taking ModuleNotFoundError as "not there". Where that import fails (no
    aiohttp), a thread that looks while another is halfway through it gets ImportError
    instead and the read fails ("cannot import name 'HTTPFileSystem'", about 1 read in 10
    here). Imported once here first; if it cannot be, it is marked absent so that every
    thread gets ModuleNotFoundError at once."""
    name = "fsspec.implementations.http"
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    except ImportError:
        pass


def _labels(model_dir: Path) -> list[str]:
    from absa.model import artifact

    return artifact.load(model_dir).labels


#: a category model given to the Ray engine (its rows are scored by the local engine)
RAY_TERMS_ONLY = (
    "--engine ray scores files with aspect-term models only; score a file of text and "
    "category rows with this category model on the local engine: absa predict --model DIR "
    "--input FILE --output OUT, without --engine ray"
)


def _model_dir(model: str | Path | None) -> Path:
    """The model's directory, checked to be an aspect-term model (a category model failed
    in every actor), as the local engine checks it; a category model is refused naming the
    local engine, which scores its files."""
    from absa.cli.common import model_dir, servable
    from absa.model.artifact import read_metadata
    from absa.model.categories import CATEGORY, task_of

    path = servable(model_dir(str(model) if model else None))
    if task_of(read_metadata(path)) == CATEGORY:
        raise InputError(f"{path}: is an aspect-category model: {RAY_TERMS_ONLY}")
    return path.resolve()


def _check_gpus(num_gpus: float) -> None:
    """InputError where an actor asks for more GPUs than the local instance started here
    has: Ray would wait for them forever (one that joins a cluster may get GPU nodes)."""
    import ray

    have = ray.cluster_resources().get("GPU", 0)
    if num_gpus > have:
        raise InputError(
            f"--num-gpus {num_gpus:g}: each actor asks for that many GPUs, and the local Ray "
            f"instance started here has {have:g} (give --num-gpus 0 to score on CPUs, or set "
            "RAY_ADDRESS to a cluster with GPUs)"
        )


def _check_empty(output: str) -> None:
    if "://" in output:
        return
    path = Path(output)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"{output}: the output directory must be new or empty")


__all__ = ["BulkStats", "Scorer", "connect", "input_files", "score_with_ray"]
