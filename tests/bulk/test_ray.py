"""Bulk scoring on a local Ray instance (2 scoring actors on this machine): the same rows as
single-process scoring, every format in and out, one line for bad input, and every row
exactly once when a scoring actor is killed mid-job."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from absa.bulk.jsonl import LINE_ERROR
from absa.cli import main
from tests.bulk.conftest import (
    BAD_JSONL,
    assert_same_predictions,
    outcomes,
    read_jsonl,
    single_process,
    single_process_file,
    write_jsonl,
    write_parquet,
)

ray = pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One small local instance for the module (3 logical CPUs: 2 actors + read/write)."""
    if os.environ.get("RAY_ADDRESS"):
        pytest.skip("RAY_ADDRESS is set: these tests start their own local instance")
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _parquet_parts(out: Path) -> list[dict[str, Any]]:
    return [r for f in sorted(out.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_ray_gives_the_same_rows_as_single_process(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    from absa.bulk import score_with_ray

    write_parquet(tmp_path / "in" / "part-0.parquet", rows[:150])
    write_parquet(tmp_path / "in" / "part-1.parquet", rows[150:])
    stats = score_with_ray(
        tmp_path / "in", tmp_path / "out", model=artifact, workers=2, batch_size=32
    )
    got = _parquet_parts(tmp_path / "out")
    want = single_process(artifact, rows, tmp_path)
    assert stats.rows == len(rows) == len(got)
    assert stats.bad == sum("error" in w for w in want) > 0
    assert_same_predictions(got, want)  # nothing dropped or duplicated, same numbers


def test_cli_reads_a_glob_of_jsonl_and_writes_jsonl(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    write_jsonl(tmp_path / "a.jsonl", rows[:40])
    write_jsonl(tmp_path / "b.jsonl", rows[40:80])
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--output-format", "jsonl"]
    out = tmp_path / "out"
    rc = main([*argv, "--input", str(tmp_path / "*.jsonl"), "--output", str(out)])
    assert rc == 1  # some rows are bad; all were written
    # the summary is the last line: Ray's driver may print a worker's retried task before it
    assert capsys.readouterr().out.splitlines()[-1].startswith("80 rows: ")
    got = [r for f in sorted(out.glob("*.json")) for r in read_jsonl(f)]
    assert_same_predictions(got, single_process(artifact, rows[:80], tmp_path))


def test_an_input_error_column_is_kept_and_the_bad_rows_are_counted_by_pred_error(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """As single-process scoring: a row's error goes in pred_error beside the input's own
    error column, and the count of bad rows reads pred_error (it read "error", the input's)."""
    import pyarrow.parquet as pq

    rows = [
        {"text": "nice pizza", "aspect": "pizza", "error": "from before"},
        {"text": "nice pizza", "aspect": "pasta", "error": None},
    ]
    write_jsonl(tmp_path / "a.jsonl", rows)
    out = tmp_path / "out"
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--output-format", "parquet"]
    assert main([*argv, "--input", str(tmp_path / "a.jsonl"), "--output", str(out)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("2 rows: 1 scored, 1 ")
    # Ray Data writes its blocks in any order (several part files): rows by their aspect
    got = {r["aspect"]: r for r in pq.read_table(out).to_pylist()}
    assert [got[a]["error"] for a in ("pizza", "pasta")] == ["from before", None]
    assert got["pizza"]["pred_error"] is None and "does not occur" in got["pasta"]["pred_error"]


def test_a_binary_column_written_as_jsonl_is_its_text_or_base64(
    artifact: Path, tmp_path: Path
) -> None:
    """As single-process scoring writes it (absa.bulk.files.bytes_text): Ray's JSONL writer
    gave Python's repr, "b'ok'"."""
    import base64

    import pyarrow as pa

    from absa.bulk import score_with_ray

    table = pa.table(
        {
            "text": ["the food was great", "the service was slow"],
            "aspect": ["food", "service"],
            "blob": pa.array([b"ok", b"\xff\x00"], pa.binary()),
            "blobs": pa.array([[b"ok"], [b"\xff\x00", None]], pa.list_(pa.binary())),
            "part": pa.array([{"b": b"ok"}, {"b": b"\xff\x00"}], pa.struct([("b", pa.binary())])),
        }
    )
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "part-0.parquet")
    out = tmp_path / "out"
    score_with_ray(tmp_path / "in", out, model=artifact, workers=1, output_format="jsonl")
    rows = {r["aspect"]: r for f in sorted(out.glob("*.json")) for r in read_jsonl(f)}
    b64 = base64.b64encode(b"\xff\x00").decode()
    got = {a: (r["blob"], r["blobs"], r["part"]) for a, r in rows.items()}
    assert got == {  # nested too: bytes not UTF-8 inside a list stopped the job
        "food": ("ok", ["ok"], {"b": "ok"}),
        "service": (b64, [b64, None], {"b": b64}),
    }


def test_a_bad_jsonl_line_is_a_row_with_its_error(artifact: Path, tmp_path: Path) -> None:
    """Lines that are not JSON objects or not UTF-8 are rows with the error single-process
    scoring gives them; the job goes on and the rows whose fields differ are all kept."""
    from absa.bulk import score_with_ray

    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_bytes(BAD_JSONL)
    stats = score_with_ray(src.parent, tmp_path / "out", model=artifact, batch_size=3)
    got = _parquet_parts(tmp_path / "out")
    want = single_process_file(artifact, src, tmp_path)
    assert stats.rows == len(got) == len(want) == 7 and stats.bad == 4
    # a line that is no object keeps no field to find it by: its error says where it is
    placed = {r["error"] for r in got if r["text"] is None}
    not_objects = {2: "invalid JSON: Expecting value", 4: "a row must be a JSON object"}
    assert placed == {f"{src}:{n}: {e}" for n, e in not_objects.items()}, placed
    for r in got:
        if r["text"] is None:
            r["error"] = r["error"].split(": ", 1)[1]
    assert outcomes(got) == outcomes(want)


def test_cli_reads_csv(artifact: Path, tmp_path: Path) -> None:
    """Every CSV column is read as a string, as single-process scoring reads CSV."""
    src = tmp_path / "in" / "rows.csv"
    src.parent.mkdir()
    src.write_text(
        "id,text,aspect\n1,the food was great,food\n2,12345,12345\n3,the wine was fine,pizza\n"
    )
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--input", str(src.parent)]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 1
    got = sorted(_parquet_parts(tmp_path / "out"), key=lambda r: r["id"])
    assert [(r["id"], r["text"]) for r in got][:2] == [("1", "the food was great"), ("2", "12345")]
    assert got[0]["pred_label"] and got[1]["pred_label"] and "does not occur" in got[2]["error"]


def test_each_csv_file_is_read_with_its_own_header(artifact: Path, tmp_path: Path) -> None:
    """Every file was read with the first file's header: a column the first lacks was typed
    by pyarrow ("00123" became 123); each is read with its own now, every column a string,
    and a file without a column has it null."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.csv").write_text("id,text,aspect\n001,the food was great,food\n")
    (src / "b.csv").write_text("id,zip,text,aspect\n002,00123,the wine was fine,wine\n")
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--input", str(src)]
    assert main([*argv, "--output", str(tmp_path / "out"), "--batch-size", "1"]) == 0
    got = sorted(_parquet_parts(tmp_path / "out"), key=lambda r: r["id"])
    assert [(r["id"], r["zip"], r["text"]) for r in got] == [
        ("001", None, "the food was great"),
        ("002", "00123", "the wine was fine"),
    ]
    assert all(r["pred_label"] and r["error"] is None for r in got)


def test_a_byte_that_is_not_utf8_in_a_csv_fails_its_row_only(
    artifact: Path, tmp_path: Path
) -> None:
    """pyarrow's CSV reader stopped the whole job at such a byte; now its row alone is bad,
    with the error single-process scoring gives it."""
    src = tmp_path / "in" / "rows.csv"
    src.parent.mkdir()
    src.write_bytes(b"id,text,aspect\n1,the food was great,food\n2,caf\xe9 food,food\n")
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--input", str(src.parent)]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 1
    got = sorted(_parquet_parts(tmp_path / "out"), key=lambda r: r["id"])
    assert [r["id"] for r in got] == ["1", "2"] and got[0]["pred_label"]
    assert got[1]["pred_label"] is None and got[1]["text"] == "caf\ufffd food"
    assert "field 'text' is not valid UTF-8 (byte 0xe9 at character 4)" == got[1]["error"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: None, "no .parquet, .csv or .jsonl files there"),
        (
            lambda d: [(d / "a.csv").write_text("text,aspect\n"), (d / "b.jsonl").write_text("")],
            "one format",
        ),
        (lambda d: (d / "a.csv").write_text("sentence,aspect\nx,y\n"), "no column 'text'"),
        (
            lambda d: (d / "a.jsonl").write_text(
                '{"text": "a", "id": 1}\n{"text": "b", "id": "x"}'
            ),
            "a.jsonl:2: field 'id' holds values of different types",  # the line named
        ),
        (
            lambda d: (d / "a.csv").write_text("text,aspect,__absa_line_error__\nx,x,y\n"),
            "a.csv: column '__absa_line_error__' is a name absa uses for a row's read error",
        ),
        (
            lambda d: (d / "a.jsonl").write_text('{"text": "x"}\n{"__absa_line_error__": 1}\n'),
            "a.jsonl:2: field '__absa_line_error__' is a name absa uses for a row's read error",
        ),
        (
            lambda d: [
                (d / "a.csv").write_text("text,aspect\nnice food,food\n"),
                (d / "b.csv").write_text("Text,Aspect\nbad food,food\n"),
            ],
            "b.csv: the text is column 'Text' here and 'text' in",  # every row failed
        ),
        (
            lambda d: (d / "rag.csv").write_text("text,aspect\nnice food,food\n\nbad,food,x\n"),
            "rag.csv:4: CSV parse error: Expected 2 columns, got 3: bad,food,x",  # as locally
        ),
    ],
    ids=["empty", "mixed", "columns", "types", "inner-csv", "inner-jsonl", "case", "ragged"],
)
def test_bad_input_is_one_line(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, make: Any, message: str
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    make(src)
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--input", str(src)]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # Ray's own log lines come first
    assert err[-1].startswith("absa predict: error: ") and message in err[-1], err[-1]


def test_an_output_directory_with_files_is_refused(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    src = write_parquet(tmp_path / "in.parquet", rows[:5])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.parquet").write_bytes(b"")
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--input", str(src)]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 2
    assert "must be new or empty" in capsys.readouterr().err


def _scoring_actors() -> dict[int, str]:
    """pid -> process title of the scoring actors (Ray titles them by class and method)."""
    found = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                title = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                continue
            if title.startswith("ray::MapWorker(MapBatches(Scorer))"):
                found[int(d.name)] = title
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the actor processes in /proc")
def test_killing_a_scoring_actor_mid_job_keeps_every_row_once(
    artifact: Path, tmp_path: Path
) -> None:
    """SIGKILL one actor while it scores a batch: Ray restarts it and retries the batch;
    the output still has every input row exactly once."""
    from absa.bulk import score_with_ray

    n = 6000
    texts = [f"the food was great {i}" for i in range(n)]
    write_parquet(
        tmp_path / "in.parquet",
        [{"id": i, "text": t, "aspect": "food"} for i, t in enumerate(texts)],
    )
    result: dict[str, Any] = {}

    def job() -> None:
        try:
            result["stats"] = score_with_ray(
                tmp_path / "in.parquet", tmp_path / "out", model=artifact, workers=2, batch_size=50
            )
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            result["error"] = e

    thread = threading.Thread(target=job)
    thread.start()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and thread.is_alive() and time.monotonic() < deadline:
        busy = [pid for pid, title in _scoring_actors().items() if title.endswith(".submit")]
        if busy:  # an actor in the middle of a batch
            killed = busy[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    thread.join(timeout=180)
    assert killed is not None, "the job ended before an actor could be killed"
    assert killed not in _scoring_actors()
    assert "error" not in result, result.get("error")
    ids = [r["id"] for r in _parquet_parts(tmp_path / "out")]
    assert len(ids) == n and sorted(ids) == list(range(n))  # every row, once
    assert result["stats"].rows == n and result["stats"].bad == 0


def test_gpu_actors_load_the_model_on_cuda(artifact: Path) -> None:
    """``--num-gpus`` above 0: the actor asks onnxruntime for CUDA (no GPU here: it says so)."""
    from absa.bulk.ray_engine import Scorer

    ort = pytest.importorskip("onnxruntime")
    if "CUDAExecutionProvider" in ort.get_available_providers():
        scorer = Scorer(str(artifact), num_gpus=1)
        assert scorer.predictor.runtime.providers[0] == "CUDAExecutionProvider"
    else:
        with pytest.raises(RuntimeError, match="device cuda asked for"):
            Scorer(str(artifact), num_gpus=1)
    assert Scorer(str(artifact)).predictor.runtime.providers == ["CPUExecutionProvider"]


def test_a_csv_record_over_pyarrows_default_block_is_read(artifact: Path, tmp_path: Path) -> None:
    """pyarrow reads CSV in 1 MiB blocks, and a record over two of them failed the job
    ("straddling object straddles two block boundaries"); single-process scoring reads it."""
    import csv

    from absa.bulk import score_with_ray

    long_text = "The pizza was good and the wine was fine. " * 75_000  # 3.2 MB
    src = tmp_path / "in" / "part-0.csv"
    src.parent.mkdir()
    with src.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "aspect"])
        w.writerows([i, "The pizza was good", "pizza"] for i in range(3))
        w.writerow([3, long_text, "wine"])
    stats = score_with_ray(src.parent, tmp_path / "out", model=artifact, workers=1)
    got = _parquet_parts(tmp_path / "out")
    # read, and refused as a row: past the text a file's row may have (MAX_ROW_TEXT_CHARS)
    assert stats.rows == 4 and stats.bad == 1
    assert sorted(r["id"] for r in got) == ["0", "1", "2", "3"]
    (long_row,) = [r for r in got if r["id"] == "3"]
    assert long_row["text"] == long_text and "a row scored from a file" in long_row["error"]


@pytest.mark.parametrize("first", [False, True], ids=["last", "first"])
def test_a_jsonl_output_row_over_pyarrows_default_block_is_counted(
    artifact: Path, tmp_path: Path, first: bool
) -> None:
    """The rows written were read back with pyarrow's JSON reader (1 MiB blocks) to count
    them: a longer row failed the job after its output was whole (first in a file: its
    schema was still read so, to list the files)."""
    from absa.bulk import score_with_ray

    long_text = "The pizza was good and the wine was fine. " * 75_000  # 3.2 MB
    rows = [{"id": i, "text": "The pizza was good", "aspect": "pizza"} for i in range(3)]
    long = {"id": 3, "text": long_text}
    src = write_jsonl(tmp_path / "in" / "part-0.jsonl", [long, *rows] if first else [*rows, long])
    out = tmp_path / "out"
    stats = score_with_ray(src.parent, out, model=artifact, workers=1, output_format="jsonl")
    assert (stats.rows, stats.bad) == (4, 1)  # the long row has no aspect: its error
    got = [r for f in sorted(out.glob("*.json")) for r in read_jsonl(f)]
    assert len(got) == 4 and sum(r["error"] is not None for r in got) == 1


@pytest.mark.parametrize("uri", [False, True], ids=["path", "file-uri"])
def test_the_jsonl_output_is_counted_as_a_dataset_lists_it(tmp_path: Path, uri: bool) -> None:
    """The job's own files only: not `_SUCCESS`, nor what lies under `_temporary/` or a
    hidden folder (a URI output may hold them from before; one not JSON failed the job
    after its output was whole), and a first row over 1 MiB is counted, not read as a
    schema."""
    import json

    from absa.bulk.ray_engine import _count

    out = tmp_path / "out"
    for rel, text in {
        "a.json": json.dumps({"text": "x" * 3_000_000, "error": None}) + "\n",
        "sub/b.json": '{"error": "no aspect"}\n{"error": null}\n',
        "_SUCCESS": "",
        "_temporary/0/t.json": "not json\n",
        ".hidden/h.json": '{"error": null}\n',
    }.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    assert _count(out.as_uri() if uri else str(out), "jsonl", "error") == (3, 1, 2)


@pytest.mark.parametrize("content", ["", "id,text,aspect\n"], ids=["empty", "header-only"])
def test_an_input_without_rows_is_an_empty_output_not_a_traceback(
    artifact: Path, tmp_path: Path, content: str
) -> None:
    src = tmp_path / "in" / ("part-0.csv" if content else "part-0.jsonl")
    src.parent.mkdir()
    src.write_text(content)
    out = tmp_path / "out"
    argv = ["predict", "--engine", "ray", "--workers", "1", "--input", str(src.parent)]
    assert main([*argv, "--output", str(out), "--model", str(artifact), "--quiet"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS"]


def test_an_error_field_in_one_file_of_a_directory_puts_every_rows_error_in_pred_error(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The column of a row's error was chosen batch by batch, the column counted once from
    the first block's schema: with an ``error`` field in the second file alone, the rows
    with pred_error were counted as scored (exit 0), and with small batches the count
    failed the job ("Field pred_error does not exist"). One column for the whole job now,
    as the local engine chooses it for a file."""
    good = {"text": "the food was great", "aspect": "food"}
    a = [{**good, "id": i} for i in range(4)]
    b = [{**good, "id": i} for i in range(4, 8)]
    a[1]["aspect"] = b[2]["aspect"] = "zzz"  # a bad row in each file
    b[0]["error"] = "upstream timeout"  # the input's own field, in the second file only
    write_jsonl(tmp_path / "in" / "a.jsonl", a)
    write_jsonl(tmp_path / "in" / "b.jsonl", b)
    out = tmp_path / "out"
    argv = ["predict", "--engine", "ray", "--model", str(artifact), "--batch-size", "2"]
    assert main([*argv, "--input", str(tmp_path / "in"), "--output", str(out)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("8 rows: 6 scored, 2 bad")
    got = sorted(_parquet_parts(out), key=lambda r: r["id"])
    assert [r["error"] for r in got] == [None] * 4 + ["upstream timeout"] + [None] * 3
    assert [r["id"] for r in got if r["pred_error"] is not None] == [1, 6]


def test_a_ragged_csv_read_by_a_task_is_said_as_locally(artifact: Path, tmp_path: Path) -> None:
    """A file given as a URI is read by its task alone (a local path is read through
    first): its ragged record failed the job with Ray's "filter out non-CSV file with
    partition_filter"; it is pyarrow's error with the file and line now."""
    from absa.bulk import score_with_ray
    from absa.errors import InputError

    src = tmp_path / "rag.csv"
    src.write_text("text,aspect\nnice food,food\n\nbad,food,x\n")
    with pytest.raises(InputError) as e:
        score_with_ray(src.as_uri(), tmp_path / "out", model=artifact, workers=1)
    assert str(e.value) == f"{src}:4: CSV parse error: Expected 2 columns, got 3: bad,food,x"


def test_the_type_checks_fields_are_those_rays_pass_finds(tmp_path: Path) -> None:
    """A local JSONL input was read three times: the type check, Ray's pass for its fields,
    the job. The check's fields (every one, in the order first seen, with the read-error
    column) stand in for Ray's pass, which a URI still takes."""
    from absa.bulk.ray_engine import _check_jsonl_types, _input_names, _read

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(BAD_JSONL)
    late = [{"text": f"the food {i}", "aspect": "food"} for i in range(3)]
    late.append({"text": "the wine", "aspect": "wine", "late": None, "later": [1.5]})
    (src / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in late))
    files = sorted(str(f) for f in src.iterdir())
    ours = _check_jsonl_types(files)
    rays = _input_names(_read(files, "jsonl"), files, "jsonl")
    assert ours is not None and set(ours) == set(rays)
    assert ours[-3:] == ["late", "later", LINE_ERROR] and ours.index("id") < ours.index("note")
    assert _check_jsonl_types([f"file://{files[0]}", files[1]]) is None  # a URI: Ray's pass
