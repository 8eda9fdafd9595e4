"""``score_with_ray`` around the job: which files a directory holds, where the partitions
are written (whole or not at all), and a local Ray instance it started shut down after.
Only the last test starts Ray (one actor, two rows); the others replace the job."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")


def test_a_directory_is_searched_for_suffixes_in_any_case(tmp_path: Path) -> None:
    """``a.CSV`` in a directory was skipped, though named on its own it is read as CSV."""
    from absa.bulk.ray_engine import input_files

    for name in ("a.CSV", "b.csv", "notes.txt"):
        (tmp_path / name).write_text("text,aspect\n")
    files, kind = input_files(tmp_path)
    assert [Path(f).name for f in files] == ["a.CSV", "b.csv"] and kind == "csv"


def _fake_job(monkeypatch: pytest.MonkeyPatch, fail: bool) -> None:
    """No Ray: the job writes one partition where it is told to, then fails or not."""
    import pyarrow as pa

    from absa.bulk import ray_engine

    def run(self: Any, rows_per_file: int) -> str:
        table = pa.table({"text": ["the food"], "aspect": ["food"], "error": pa.nulls(1)})
        out = Path(self.output.removeprefix("file://"))
        out.mkdir(parents=True, exist_ok=True)  # as Ray's write does
        pq.write_table(table, out / "part-0.parquet")
        if fail:
            raise RuntimeError("an actor died for good")
        return "error"  # the column a row's error went in

    monkeypatch.setattr(ray_engine, "connect", lambda *a: 0.0)
    monkeypatch.setattr(ray_engine._Job, "run", run)


def test_a_failed_job_leaves_no_output_and_a_rerun_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The partitions written before a failure stayed in the output directory, so the rerun
    was refused ("must be new or empty") until someone removed them."""
    from absa.bulk import score_with_ray

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "aspect": "food"}\n')
    for existing in (False, True):  # an absent output, and an empty directory
        out = tmp_path / f"out{existing}"
        if existing:
            out.mkdir()
        _fake_job(monkeypatch, fail=True)
        with pytest.raises(RuntimeError, match="an actor died"):
            score_with_ray(src, out)
        assert not out.exists() or list(out.iterdir()) == []
        _fake_job(monkeypatch, fail=False)
        stats = score_with_ray(src, out)  # the rerun
        assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", "part-0.parquet"]
        assert (stats.rows, stats.bad, stats.files) == (1, 0, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "outFalse", "outTrue"]


def test_a_uri_is_written_in_place_and_marked_done_only_when_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object store has no rename: a URI output is written in place, so a reader must be
    able to tell a finished one from a job that died half-way: _SUCCESS, written last."""
    from absa.bulk import score_with_ray

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "aspect": "food"}\n')
    failed, done = tmp_path / "failed", tmp_path / "done"
    _fake_job(monkeypatch, fail=True)
    with pytest.raises(RuntimeError, match="an actor died"):
        score_with_ray(src, f"file://{failed}")
    assert [p.name for p in failed.iterdir()] == ["part-0.parquet"]  # in place, not marked
    _fake_job(monkeypatch, fail=False)
    stats = score_with_ray(src, f"file://{done}")
    assert sorted(p.name for p in done.iterdir()) == ["_SUCCESS", "part-0.parquet"]
    assert (done / "_SUCCESS").read_bytes() == b""
    assert (stats.rows, stats.bad, stats.files) == (1, 0, 1)  # the marker is not a partition


@pytest.mark.parametrize("name", ["o" * 250, "é" * 127])  # 250 bytes, 254 bytes
def test_an_output_directory_named_near_the_name_limit_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The staging directory beside it, ``.NAME.part-<12 hex>``, was 19 bytes longer than
    the output's name: an output named within 19 bytes of the limit could not be staged."""
    from absa.bulk import score_with_ray

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "aspect": "food"}\n')
    _fake_job(monkeypatch, fail=False)
    score_with_ray(src, tmp_path / name)
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["_SUCCESS", "part-0.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.jsonl", name])


def test_a_jsonl_field_of_changing_type_is_refused_before_ray_starts(tmp_path: Path) -> None:
    """Ray's blocks are typed columns: a field that is a number in one row and a string in
    another (in one file, or in two) failed the whole job after some 170 lines of Ray's
    traceback. Refused before Ray starts, in one line naming the file and line."""
    from absa.bulk import score_with_ray
    from absa.errors import InputError

    row = '{"text": "the food was great", "aspect": "food", "x": %s}\n'
    one = tmp_path / "one"
    one.mkdir()
    (one / "a.jsonl").write_text(row % "1" + "\n" + row % '"a"')
    with pytest.raises(InputError, match=r"a\.jsonl:3: field 'x' holds values of different"):
        score_with_ray(one, tmp_path / "out1")
    two = tmp_path / "two"
    two.mkdir()
    (two / "a.jsonl").write_text(row % "1")
    (two / "b.jsonl").write_text(row % '"a"')
    with pytest.raises(InputError, match=r"b\.jsonl: field 'x' holds string values where .*a"):
        score_with_ray(two, tmp_path / "out2")
    (two / "b.jsonl").write_text(row % "1.5")  # numbers are one kind, as within one file
    from absa.bulk.ray_engine import _check_jsonl_types

    _check_jsonl_types([str(two / "a.jsonl"), str(two / "b.jsonl")])
    assert not ray.is_initialized()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_absa_device_in_the_environment_is_said_to_be_unread_by_the_ray_engine(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    device: str,
) -> None:
    """ABSA_DEVICE (the server's, in the environment) is not what --engine ray reads: its
    actors use CUDA where --num-gpus is above 0. It was passed over without a word."""
    from absa.cli import main

    monkeypatch.setenv("ABSA_DEVICE", device)
    argv = ["predict", "--engine", "ray", "--input", str(tmp_path / "missing.jsonl")]
    with caplog.at_level(logging.WARNING, logger="absa"):
        assert main([*argv, "--output", str(tmp_path / "o")]) == 2  # no input: before Ray
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("ABSA_DEVICE is not read by --engine ray") for m in said), said
    caplog.clear()
    monkeypatch.setenv("ABSA_DEVICE", "auto")
    with caplog.at_level(logging.WARNING, logger="absa"):
        assert main([*argv, "--output", str(tmp_path / "o")]) == 2
    assert not any("ABSA_DEVICE" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(bool(os.environ.get("RAY_ADDRESS")), reason="starts a local instance")
def test_a_local_instance_it_started_is_shut_down(tmp_path: Path) -> None:
    """Each call left its local Ray instance (raylet, workers, object store) running until
    the process ended."""
    from absa.bulk import score_with_ray

    assert not ray.is_initialized()
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "the food was great", "aspect": "food"}\n' * 2)
    try:
        stats = score_with_ray(src, tmp_path / "out", workers=1, batch_size=2, progress=False)
        assert not ray.is_initialized()
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert stats.rows == 2 and stats.bad == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out"]  # no staging left
    rows = [
        r
        for f in sorted((tmp_path / "out").glob("*.parquet"))
        for r in pq.read_table(f).to_pylist()
    ]
    assert [r["id"] for r in rows] == [1, 1] and all(r["pred_label"] for r in rows)


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--workers", "0", "--workers is at least 1, not 0"),
        ("--batch-size", "0", "--batch-size is at least 1, not 0"),
        ("--num-gpus", "-1", "--num-gpus is a number >= 0, not -1.0"),
        ("--num-gpus", "nan", "--num-gpus is a number >= 0, not nan"),
    ],
)
def test_a_flag_of_the_ray_engine_out_of_range_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, said: str
) -> None:
    """score_with_ray's "workers and batch size must be at least 1, GPUs at least 0" named
    neither the flag nor its value; --num-gpus nan passed that check and failed in Ray."""
    from absa.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "aspect": "food"}\n')
    argv = ["predict", "--engine", "ray", "--input", str(src), "--output", str(tmp_path / "o")]
    assert main([*argv, flag, value]) == 2
    assert capsys.readouterr().err.strip() == f"absa predict: error: {said}"
    assert not (tmp_path / "o").exists()


def test_score_with_ray_refuses_nan_gpus_before_ray_starts(tmp_path: Path) -> None:
    """num_gpus=nan compared false with 0 and reached Ray ("cannot convert float NaN")."""
    from absa.bulk import score_with_ray
    from absa.errors import InputError

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "aspect": "food"}\n')
    with pytest.raises(InputError, match="GPUs at least 0"):
        score_with_ray(src, tmp_path / "o", num_gpus=float("nan"))


def test_starting_ray_leaves_the_commands_stop_handlers_in_place() -> None:
    """ray.init put its own SIGTERM handler in place of the command's: SIGTERM during a job
    ended it in an abort (exit 134, a stack dump) instead of its clean-up and exit 143."""
    import signal

    from absa.bulk.ray_engine import connect

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("not called here")

    before = {s: signal.signal(s, mine) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        connect(1)
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) is mine
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for s, handler in before.items():
            signal.signal(s, handler)


def test_a_category_model_is_refused_in_one_line_before_ray_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped category model passed the check of its directory and failed in every
    actor: ~150 lines of traceback and exit 1 (the status of "some rows bad"); it is
    refused in one line naming the local engine, which scores its files."""
    from absa.bulk import ray_engine
    from absa.cli import main
    from absa.model.categories import SHIPPED_CATEGORY_MODEL

    def started(*args: Any, **kwargs: Any) -> float:
        raise AssertionError("Ray was started")

    monkeypatch.setattr(ray_engine, "connect", started)
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "category": "food"}\n')
    argv = ["predict", "--input", str(src), "--model", str(SHIPPED_CATEGORY_MODEL)]
    assert main([*argv, "--output", str(tmp_path / "o"), "--engine", "ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is an aspect-category model" in err, err
    assert "without --engine ray" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert main([*argv, "--output", str(tmp_path / "o.jsonl"), "--quiet"]) == 0  # the local one


@pytest.mark.parametrize("device", ["cpu", "cuda", "auto"])
def test_device_is_refused_with_the_ray_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str
) -> None:
    """--engine ray never read --device (its actors use CUDA where --num-gpus is above 0):
    --device cpu scored on a GPU, --device cuda on CPUs, without a word."""
    from absa.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food", "aspect": "food"}\n')
    argv = ["predict", "--engine", "ray", "--input", str(src), "--output", str(tmp_path / "o")]
    assert main([*argv, "--device", device]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("absa predict: error: --device") and "--num-gpus" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(bool(os.environ.get("RAY_ADDRESS")), reason="starts a local instance")
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU may be here")
def test_gpus_on_a_local_instance_without_them_are_refused(tmp_path: Path) -> None:
    """--num-gpus 1 on the local instance absa starts, on a machine without a GPU: the
    actors waited for a GPU forever, and the job with them."""
    from absa.bulk import score_with_ray
    from absa.errors import InputError

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the food was great", "aspect": "food"}\n')
    try:
        with pytest.raises(InputError, match="GPU") as e:
            score_with_ray(src, tmp_path / "out", workers=1, num_gpus=1, progress=False)
        assert "has 0" in str(e.value) and "--num-gpus" in str(e.value)
        assert not ray.is_initialized()
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_ragged_local_csv_is_refused_as_locally_before_ray_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ragged CSV failed a Ray read task: Ray's "filter out non-CSV file with
    partition_filter" and ~165 lines of traceback, no line named. A local file is read
    through first, and refused as single-process scoring refuses it."""
    from absa.bulk import ray_engine
    from absa.cli import main

    def started(*args: Any, **kwargs: Any) -> float:
        raise AssertionError("Ray was started")

    monkeypatch.setattr(ray_engine, "connect", started)
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.csv").write_text("text,aspect\nnice food,food\n")
    (src / "rag.csv").write_text("text,aspect\nnice food,food\n\nbad,food,x\n")
    argv = ["predict", "--input", str(src / "rag.csv"), "--output", str(tmp_path / "o.parquet")]
    assert main(argv) == 2
    local = capsys.readouterr().err.strip()
    assert local.endswith("rag.csv:4: CSV parse error: Expected 2 columns, got 3: bad,food,x")
    argv = ["predict", "--engine", "ray", "--input", str(src), "--output", str(tmp_path / "o")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == local
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
