"""Parquet in and out of single-process scoring (`absa predict --input/--output`)."""

from __future__ import annotations

import csv
import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
from tests.helpers import NO_ROOM, parts_on_a_full_disk

pq = pytest.importorskip("pyarrow.parquet")


def _predict(artifact: Path, src: Path, dst: Path) -> int:
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    return main([*argv, "--quiet"])


def test_parquet_to_parquet_keeps_every_column_in_order(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    src = write_parquet(tmp_path / "in.parquet", rows, row_group=64)
    assert _predict(artifact, src, tmp_path / "out.parquet") == 1  # some rows are bad
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names[:6] == ["id", "text", "aspect", "label", "start", "end"]
    assert str(out.schema.field("pred_score_positive").type) == "double"
    assert str(out.schema.field("pred_start").type) == "int64"
    got = out.to_pylist()
    assert [r["id"] for r in got] == list(range(len(rows)))  # one row per input row, in order
    assert_same_predictions(got, single_process(artifact, rows, tmp_path))
    assert not list(tmp_path.glob("*.part"))


def test_parquet_to_jsonl_and_csv(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    src = write_parquet(tmp_path / "in.parquet", rows[:50])
    assert _predict(artifact, src, tmp_path / "out.jsonl") == 1
    want = single_process(artifact, rows[:50], tmp_path)
    assert_same_predictions(read_jsonl(tmp_path / "out.jsonl"), want)
    assert _predict(artifact, src, tmp_path / "out.csv") == 1
    header = (tmp_path / "out.csv").read_text().splitlines()[0]
    assert header.startswith('"id","text","aspect","label"') and '"error"' in header


def test_jsonl_and_csv_to_parquet(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    want = single_process(artifact, rows[:60], tmp_path)
    src = write_jsonl(tmp_path / "in.jsonl", rows[:60])
    assert _predict(artifact, src, tmp_path / "out.parquet") == 1
    assert_same_predictions(pq.read_table(tmp_path / "out.parquet").to_pylist(), want)

    csv_in = tmp_path / "in.csv"
    csv_in.write_text("id,text,aspect\n7,the food was great,food\n8,12345,12345\n")
    assert _predict(artifact, csv_in, tmp_path / "csv.parquet") == 0
    out = pq.read_table(tmp_path / "csv.parquet")
    assert out.column("id").to_pylist() == ["7", "8"]  # CSV values stay strings
    assert out.column("pred_label").null_count == 0


def test_a_csv_header_in_other_case_or_spaced_is_read_into_parquet_too(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the CSV path of ``absa.scoring`` (and the training readers) read such a header:
    "Text" and " Aspect " are the text and the aspect; the output keeps the names given.
    Parquet columns are read so too; two columns that could be the text are refused."""
    csv_in = tmp_path / "in.csv"
    csv_in.write_text("id,Text, Aspect \n7,the food was great,food\n")
    assert _predict(artifact, csv_in, tmp_path / "csv.parquet") == 0
    out = pq.read_table(tmp_path / "csv.parquet")
    assert out.column_names[:3] == ["id", "Text", " Aspect "]
    assert out.column("pred_label").to_pylist() == ["positive"]
    assert (out.column("pred_start")[0].as_py(), out.column("pred_end")[0].as_py()) == (4, 8)

    rows = [{"TEXT": "the food was great", "aspect": "food", " text": "kept"}]
    src = write_parquet(tmp_path / "two.parquet", rows)
    assert _predict(artifact, src, tmp_path / "two.jsonl") == 2
    assert "columns 'TEXT' and ' text' are both read as text" in capsys.readouterr().err
    assert not (tmp_path / "two.jsonl").exists()


@pytest.mark.parametrize("out", ["out.parquet", "out.jsonl"])
def test_jsonl_fields_are_read_by_their_own_names_into_parquet_too(
    artifact: Path, tmp_path: Path, out: str
) -> None:
    """A JSONL row's "Text" is no text (JSON keys are exact: ``absa.scoring`` reads them so),
    into Parquet as into JSONL: the Parquet path scored it as the text, and stopped the run
    where a row held "Text" and " text" both."""
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"id": 1, "Text": "the food was great", "aspect": "food"}\n'
        '{"id": 2, "Text": "the food was great", "aspect": "food", " text": "x"}\n'
    )
    assert _predict(artifact, src, tmp_path / out) == 1  # bad rows, the run finished
    if out.endswith(".jsonl"):
        got = read_jsonl(tmp_path / out)
    else:
        got = pq.read_table(tmp_path / out).to_pylist()
    assert [r["id"] for r in got] == [1, 2]
    assert all("text" in r["error"] and r.get("pred_label") is None for r in got)


def test_a_bad_jsonl_line_is_a_row_with_its_error(artifact: Path, tmp_path: Path) -> None:
    """JSONL to Parquet keeps every line as single-process JSONL scoring does, the bad ones
    with the same error, where pyarrow's JSON reader would stop the file."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(BAD_JSONL)
    assert _predict(artifact, src, tmp_path / "out.parquet") == 1
    got = pq.read_table(tmp_path / "out.parquet").to_pylist()
    want = single_process_file(artifact, src, tmp_path)
    assert len(got) == len(want) == 7 and outcomes(got) == outcomes(want)
    assert [r["id"] for r in got] == [1, None, None, 4, 5, None, 7]  # in order
    assert got[1]["error"] == "invalid JSON: Expecting value" and got[4]["note"] == {"k": 1}
    assert "not valid UTF-8" in got[3]["error"] and got[6]["pred_label"]


@pytest.mark.parametrize("out", ["out.jsonl", "out.csv", "out.parquet"])
def test_a_jsonl_integer_too_long_to_read_is_a_bad_row(
    artifact: Path, tmp_path: Path, out: str
) -> None:
    """An integer of more than 4,300 digits (Python's limit on reading one) stopped the whole
    run with "Exceeds the limit (4300 digits) for integer string conversion", naming no file
    or line; it is that row's error now, and the run goes on."""
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"id": 1, "text": "nice pizza", "aspect": "pizza", "n": ' + "1" * 5000 + "}\n"
        '{"id": 2, "text": "nice pizza", "aspect": "pizza"}\n'
    )
    assert _predict(artifact, src, tmp_path / out) == 1
    if out.endswith(".parquet"):
        got = pq.read_table(tmp_path / out).to_pylist()
    elif out.endswith(".csv"):
        got = list(csv.DictReader((tmp_path / out).open(encoding="utf-8")))
    else:
        got = read_jsonl(tmp_path / out)
    assert len(got) == 2 and got[1]["pred_label"] and not got[1].get("error")
    assert "invalid JSON: a number of more than 4300 digits" in got[0]["error"], got[0]


def test_a_bad_csv_row_after_a_long_field_is_named_by_its_line_in_parquet_output_too(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """CSV into Parquet named a bad row "FILE: row 4" where a field before it was longer than
    the csv module's default limit (131,072 characters): the second reader, which finds the
    lines, stopped there. Into CSV or JSONL it was "FILE:LINE" already."""
    import logging

    before = csv.field_size_limit(131_072)  # as a fresh process has it: the default
    try:
        src = tmp_path / "in.csv"
        long_text = "the pizza was good " + "x" * 200_000
        src.write_text(
            f'text,aspect\n"{long_text}",pizza\n"two\nlines",two\nok pizza,pizza\n'
            "the pizza,zz top\n"
        )
        caplog.set_level(logging.WARNING)
        assert _predict(artifact, src, tmp_path / "out.parquet") == 1
    finally:
        csv.field_size_limit(before)
    assert f"{src}:6: " in caplog.text and "row 4" not in caplog.text, caplog.text


@pytest.mark.parametrize("out", ["out.csv", "out.jsonl"])
def test_a_dictionary_encoded_bytes_column_is_written_as_its_text_or_base64(
    artifact: Path, tmp_path: Path, out: str
) -> None:
    """A pandas Categorical of bytes (a dictionary-encoded binary column in Parquet) stopped
    a CSV output with "Invalid UTF8 payload", naming no file; JSONL wrote it."""
    import base64

    import pyarrow as pa

    raw = pa.array([b"\xff\x00", b"ok"]).dictionary_encode()
    table = pa.table({"text": ["nice pizza"] * 2, "aspect": ["pizza"] * 2, "raw": raw})
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    assert _predict(artifact, src, tmp_path / out) == 0
    got = _read_any(tmp_path / out)
    assert [r["raw"] for r in got] == [base64.b64encode(b"\xff\x00").decode(), "ok"]


def _read_any(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    if path.suffix == ".csv":
        return list(csv.DictReader(path.open(encoding="utf-8", newline="")))
    return read_jsonl(path)


@pytest.mark.parametrize("out", ["out.jsonl", "out.csv", "out.parquet"])
@pytest.mark.parametrize("src_name", ["in.csv", "in.parquet", "in.jsonl"])
def test_an_input_error_column_is_kept_and_the_rows_error_goes_in_pred_error(
    artifact: Path, tmp_path: Path, src_name: str, out: str
) -> None:
    """The README says a row's error goes in pred_error where the input has an error field of
    its own. Only JSONL into JSONL or CSV did so: a CSV or Parquet input, or any input into
    Parquet, was refused ("column 'error' is one the output adds; rename it")."""
    rows = [
        {"id": "1", "text": "nice pizza", "aspect": "pizza", "error": "from before"},
        {"id": "2", "text": "nice pizza", "aspect": "pasta", "error": ""},
    ]
    src = tmp_path / src_name
    if src_name.endswith(".csv"):
        with src.open("w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    elif src_name.endswith(".parquet"):
        write_parquet(src, rows)
    else:
        write_jsonl(src, rows)
    assert _predict(artifact, src, tmp_path / out) == 1
    got = _read_any(tmp_path / out)
    assert [r["error"] for r in got] == ["from before", ""]
    assert got[0]["pred_label"] and not got[0].get("pred_error")
    assert "does not occur in the text" in got[1]["pred_error"] and not got[1].get("pred_label")


@pytest.mark.parametrize("src_name", ["in.csv", "in.parquet"])
def test_an_input_with_both_error_and_pred_error_is_refused(
    artifact: Path, tmp_path: Path, src_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"text": "nice pizza", "aspect": "pizza", "error": "a", "pred_error": "b"}]
    src = tmp_path / src_name
    if src_name.endswith(".csv"):
        src.write_text("text,aspect,error,pred_error\nnice pizza,pizza,a,b\n", encoding="utf-8")
    else:
        write_parquet(src, rows)
    for out in ("out.jsonl", "out.csv", "out.parquet"):
        assert _predict(artifact, src, tmp_path / out) == 2
        assert "are both in the input" in capsys.readouterr().err
        assert not (tmp_path / out).exists()


def test_a_field_that_appears_after_the_first_row_group_is_a_column_like_the_others(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSONL blocks may differ in their fields: one missing later gets nulls; one that only
    appears after the first row group was written stopped the run there (a million-row
    file after 65,536 rows). The file is read ahead for its fields first."""
    from absa.bulk import files
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    monkeypatch.setattr(files, "ROW_GROUP", 2)
    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    row = {"text": "the food was great", "aspect": "food"}
    src = write_jsonl(tmp_path / "in.jsonl", [{**row, "a": 1}, {**row, "a": 2}, row, row])
    files.score_table_file(predictor, src, tmp_path / "ok.parquet", chunk=2, progress=False)
    assert pq.read_table(tmp_path / "ok.parquet").column("a").to_pylist() == [1, 2, None, None]

    src = write_jsonl(tmp_path / "late.jsonl", [row, row, {**row, "late": "x", "n": 7}])
    dst = tmp_path / "late.parquet"
    files.score_table_file(predictor, src, dst, chunk=2, progress=False)
    out = pq.read_table(dst).to_pylist()
    assert [r["late"] for r in out] == [None, None, "x"]
    assert [r["n"] for r in out] == [None, None, 7]
    assert list(out[0])[:4] == ["text", "aspect", "late", "n"]  # the input's fields first
    assert all(r["pred_label"] for r in out)


def test_rows_are_scored_a_chunk_at_a_time(artifact: Path, tmp_path: Path) -> None:
    """A file of many row groups is read batch by batch: the model never sees more than a
    chunk at once, and the output has every row."""
    from absa.bulk.files import score_table_file
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    n = 3000
    rows = [{"text": f"the food was great {i}", "aspect": "food", "i": i} for i in range(n)]
    src = write_parquet(tmp_path / "big.parquet", rows, row_group=500)
    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    calls: list[int] = []
    real = predictor.forward
    predictor.forward = lambda items, *a: calls.append(len(items)) or real(items, *a)  # type: ignore[method-assign]
    stats = score_table_file(
        predictor, src, tmp_path / "big.out.parquet", chunk=256, progress=False
    )
    assert stats.rows == stats.scored == n and not stats.bad
    assert max(calls) <= 256 and sum(calls) == n
    assert pq.read_table(tmp_path / "big.out.parquet").column("i").to_pylist() == list(range(n))


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"sentence": ["x"], "aspect": ["x"]}, "no column 'text'"),
        ({"text": ["x"], "aspect": ["x"], "pred_label": ["y"]}, "column 'pred_label' is one"),
    ],
)
def test_a_table_that_cannot_be_scored_is_one_line_naming_the_file(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, columns: dict, message: str
) -> None:
    import pyarrow as pa

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table(columns), src)
    assert _predict(artifact, src, tmp_path / "out.parquet") == 2
    err = capsys.readouterr().err
    assert f"{src}: {message}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.parquet").exists()


def test_a_ragged_csv_row_read_for_parquet_is_one_line_naming_its_line(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """pyarrow's own words named no line ("CSV parse error: Row #3: Expected 2 columns, got
    3: ...": its count of records, blank lines left out) and quoted the row, so a row with a
    line break in a value made the message several lines."""
    src = tmp_path / "in.csv"
    src.write_text('text,aspect\n\nthe food,food\n"the\nwine",wine,extra\nthe tea,tea\n')
    assert _predict(artifact, src, tmp_path / "out.parquet") == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == 1 and err[0].startswith(f"absa predict: error: {src}:4: "), err
    assert "Expected 2 columns, got 3" in err[0] and "the\\nwine" in err[0], err
    assert "Row #" not in err[0], err  # pyarrow's count of records (3), not the line (4)
    assert not (tmp_path / "out.parquet").exists()


BLOCK_PYARROW = """
import sys
class NoArrow:
    def find_spec(self, name, path=None, target=None):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoArrow())
from absa.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_pyarrow_parquet_names_the_extra(artifact: Path, tmp_path: Path) -> None:
    """A serve-only install: JSONL and CSV scoring work, Parquet says which extra it needs."""
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": "the food was great", "aspect": "food"}])
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--quiet", "--output"]
    run = [sys.executable, "-c", BLOCK_PYARROW, *argv]
    ok = subprocess.run([*run, str(tmp_path / "o.jsonl")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    out = subprocess.run([*run, str(tmp_path / "o.parquet")], capture_output=True, text=True)
    assert out.returncode == 2
    hint = "pip install '.[parquet]' in absa's checkout"
    assert hint in out.stderr and "Traceback" not in out.stderr
    # said before the model loads (it was said after): no model at all, the same line
    argv[argv.index("--model") + 1] = str(tmp_path / "no-model")
    run = [sys.executable, "-c", BLOCK_PYARROW, *argv]
    out = subprocess.run([*run, str(tmp_path / "o.parquet")], capture_output=True, text=True)
    assert out.returncode == 2 and hint in out.stderr, out.stderr


@pytest.mark.parametrize(("name", "content"), [("empty.jsonl", b""), ("hdr.csv", b"text,aspect\n")])
def test_no_rows_to_parquet_is_a_readable_file_naming_the_columns(
    artifact: Path, tmp_path: Path, name: str, content: bytes
) -> None:
    """An input without rows used to give a 0-byte .parquet, which no reader opens."""
    src = tmp_path / name
    src.write_bytes(content)
    assert _predict(artifact, src, tmp_path / "out.parquet") == 0
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.num_rows == 0
    assert {"text", "aspect", "pred_label", "error"} <= set(out.column_names)


def test_no_rows_keep_the_inputs_columns(
    artifact: Path, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A header-only CSV or a Parquet file of no rows gave text and aspect alone: a reader
    of the output found its id column gone."""
    csv_in = tmp_path / "hdr.csv"
    csv_in.write_text("id,text,aspect,note\n")
    one = pq.read_table(write_parquet(tmp_path / "one.parquet", rows[:1]))
    pq_in = tmp_path / "none.parquet"
    pq.write_table(one.slice(0, 0), pq_in)  # the columns, no rows
    for src, first in ((csv_in, ["id", "text", "aspect", "note"]), (pq_in, None)):
        assert _predict(artifact, src, tmp_path / "out.parquet") == 0
        out = pq.read_table(tmp_path / "out.parquet")
        want = first or pq.read_schema(pq_in).names
        assert out.num_rows == 0 and out.column_names[: len(want)] == want
        assert "pred_label" in out.column_names


def test_a_csv_with_a_byte_order_mark_keeps_its_first_column_a_string(
    artifact: Path, tmp_path: Path
) -> None:
    """Every CSV column is read as a string; the mark hid the first one from that, and
    pyarrow typed it (id 007 came out as 7)."""
    src = tmp_path / "bom.csv"
    src.write_bytes("\ufeffid,text,aspect\n007,the food was great,food\n".encode())
    assert _predict(artifact, src, tmp_path / "out.parquet") == 0
    (row,) = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert row["id"] == "007" and row["pred_label"] is not None


def test_an_output_name_in_a_later_block_is_named_with_file_and_rows(tmp_path: Path) -> None:
    """JSONL blocks may differ in their fields: a clash with an output column first seen
    after the first block stopped the run naming "the table"; it names file and rows now."""
    from absa import load
    from absa.bulk.files import score_table_file
    from absa.errors import InputError

    rows = [{"text": "the food was great", "aspect": "food"}] * 3
    rows.append({"text": "the food was great", "aspect": "food", "pred_label": "x"})
    src = write_jsonl(tmp_path / "late.jsonl", rows)
    dst = tmp_path / "out.parquet"
    with pytest.raises(InputError, match=r"late\.jsonl \(rows 3-4\): column 'pred_label'"):
        score_table_file(load().predictor, src, dst, chunk=2, progress=False)
    assert not dst.exists()


def _predictor(artifact: Path) -> Any:
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    return Predictor(Runtime.load(artifact, device="cpu", threads=1))


def test_bad_rows_are_logged_with_the_line_they_start_on(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The Parquet path named a row by its number (``FILE: row 2`` for line 5): blank lines,
    the CSV header and values over several lines put it off the line, which README promises
    and ``absa.scoring`` gives (file:line); a Parquet input, which has no lines, keeps rows."""
    from absa.bulk.files import score_table_file

    predictor = _predictor(artifact)
    good = '{"text": "the food was great", "aspect": "food"}'
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(f'{good}\n\n\n\nnot json\n{good}\n\n{good[:-1]}, "start": 0, "end": 3}}\n')
    csv_in = tmp_path / "in.csv"
    csv_in.write_text('text,aspect\n"the food\nwas great",food\n\nthe food was great,pizza\n')
    parquet = write_parquet(tmp_path / "in.parquet", [{"text": "the food", "aspect": "x"}] * 2)
    with caplog.at_level("WARNING"):
        stats = [
            score_table_file(predictor, src, tmp_path / f"{src.name}.parquet", 2)
            for src in (jsonl, csv_in, parquet)
        ]
    assert [line for line, _ in stats[0].bad] == [5, 8]
    assert f"{jsonl}:5: invalid JSON" in caplog.text and f"{jsonl}:8: " in caplog.text
    assert stats[1].bad == [(5, "aspect 'pizza' does not occur in the text")]
    assert f"{csv_in}:5: aspect 'pizza'" in caplog.text
    assert [row for row, _ in stats[2].bad] == [1, 2] and f"{parquet}: row 2: " in caplog.text
    by_row = [m for m in caplog.messages if ": row " in m and not m.startswith(str(parquet))]
    assert by_row == []  # JSONL and CSV rows: by line only


def test_a_csv_the_csv_module_cannot_follow_names_rows_and_still_finishes(
    artifact: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lines come from a second reader (Python's csv) beside pyarrow's: where that one
    cannot read the file (a field over its size limit, here made small), the log names rows,
    as before."""
    import csv

    from absa.bulk.files import score_table_file
    from absa.model import csvio

    monkeypatch.setattr(csvio, "CSV_FIELD_LIMIT", 8)

    src = tmp_path / "in.csv"
    src.write_text("text,aspect\nthe food was great,food\nthe food was great,pizza\n")
    limit = csv.field_size_limit(8)  # "the food was great" is longer
    try:
        with caplog.at_level("WARNING"):
            stats = score_table_file(_predictor(artifact), src, tmp_path / "o.parquet")
    finally:
        csv.field_size_limit(limit)
    assert stats.rows == 2 and stats.bad == [(2, "aspect 'pizza' does not occur in the text")]
    assert f"{src}: row 2: aspect 'pizza'" in caplog.text


@pytest.mark.parametrize("output", ["out.parquet", "out.jsonl", "out.csv"])
def test_an_output_directory_is_refused_before_the_input_is_scored(
    artifact: Path, tmp_path: Path, output: str
) -> None:
    """``score_table_file`` (called by the CLI and the benchmarks) scored every row, then
    failed moving ``OUT.part`` onto the directory and left the .part behind."""
    from absa.bulk.files import score_table_file

    src = write_parquet(tmp_path / "in.parquet", [{"text": "the food", "aspect": "food"}])
    predictor = _predictor(artifact)
    predictor.forward = lambda *a: pytest.fail("scored")  # type: ignore[method-assign]
    dst = tmp_path / output
    dst.mkdir()
    with pytest.raises(ValueError, match=f"^{dst}: is a directory"):
        score_table_file(predictor, src, dst, progress=False)
    with pytest.raises(ValueError, match=f"^{tmp_path / 'no' / output}: no such directory"):
        score_table_file(predictor, src, tmp_path / "no" / output, progress=False)
    with pytest.raises(ValueError, match=f"^{tmp_path / 'gone.parquet'}: no such file$"):
        score_table_file(predictor, tmp_path / "gone.parquet", tmp_path / output, progress=False)
    assert set(tmp_path.iterdir()) == {src, dst} and list(dst.iterdir()) == []


@pytest.mark.parametrize("output", ["out.parquet", "out.jsonl", "out.csv"])
def test_no_part_file_is_left_when_the_output_cannot_be_moved_into_place(
    artifact: Path, tmp_path: Path, output: str
) -> None:
    """The final move was outside the clean-up: an output path that became a directory
    while the file was scored failed the move and left ``OUT.part``."""
    from absa.bulk.files import score_table_file

    src = write_parquet(tmp_path / "in.parquet", [{"text": "the food", "aspect": "food"}])
    dst = tmp_path / output
    predictor = _predictor(artifact)
    real = predictor.forward

    def while_scoring(*args: Any) -> Any:
        dst.mkdir(exist_ok=True)  # someone else takes the name meanwhile
        return real(*args)

    predictor.forward = while_scoring  # type: ignore[method-assign]
    with pytest.raises(IsADirectoryError):
        score_table_file(predictor, src, dst, progress=False)
    assert set(tmp_path.iterdir()) == {src, dst}  # no out.*.part


# ------------------------------------------------- file scoring review: typed columns


def _shipped(src: Path, dst: Path) -> int:
    """``absa predict`` on a file with the shipped model (no --model)."""
    return main(["predict", "--input", str(src), "--output", str(dst), "--quiet"])


def _strict_jsonl(path: Path) -> list[dict[str, Any]]:
    """JSONL as a strict JSON reader reads it: NaN or Infinity fails."""
    import json

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return [json.loads(x, parse_constant=refuse) for x in path.read_text().splitlines()]


def test_a_column_named_twice_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Parquet in: a KeyError without the file; CSV in, Parquet out: pyarrow's message
    without it."""
    import pyarrow as pa

    src = tmp_path / "in.parquet"
    columns = [pa.array(["The pizza was good"]), pa.array(["pizza"]), pa.array(["The burger"])]
    pq.write_table(pa.Table.from_arrays(columns, names=["text", "aspect", "text"]), src)
    csv_in = tmp_path / "in.csv"
    csv_in.write_text("text,aspect,text\nThe pizza was good,pizza,The burger\n")
    for given, output in ((src, "out.jsonl"), (src, "out.parquet"), (csv_in, "out.parquet")):
        assert _shipped(given, tmp_path / output) == 2
        where = f"{given}:1" if given == csv_in else str(given)
        err = capsys.readouterr().err
        assert f"absa predict: error: {where}: column 'text' appears twice\n" in err
    assert sorted(tmp_path.iterdir()) == [csv_in, src]
    csv_in.write_text("text,aspect,,\nThe pizza was good,pizza,,\n")  # a spreadsheet's
    assert _shipped(csv_in, tmp_path / "out.parquet") == 2
    assert f"{csv_in}:1: more than one column has no name" in capsys.readouterr().err


def test_a_column_named_as_the_readers_inner_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The readers carry a row's read error in a column of their own; an input column of
    that name was taken for it (its values became the rows' errors) or overwritten by it
    (a JSONL field, its values lost without a word)."""
    import pyarrow as pa

    from absa.bulk.jsonl import LINE_ERROR

    rows = [{"text": "The pizza was good", "aspect": "pizza", LINE_ERROR: "kept"}]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    csv_in = tmp_path / "in.csv"
    csv_in.write_text(f"text,aspect,{LINE_ERROR}\nThe pizza was good,pizza,kept\n")
    jsonl_in = write_jsonl(tmp_path / "in.jsonl", [{"text": "ok", "aspect": "ok"}, *rows])
    for given, where in ((src, str(src)), (csv_in, f"{csv_in}:1"), (jsonl_in, f"{jsonl_in}:2")):
        for output in ("out.jsonl", "out.parquet"):
            if given != src and output == "out.jsonl":
                continue  # not the table path: absa.scoring reads the fields it needs
            assert _shipped(given, tmp_path / output) == 2, (given, output)
            err = capsys.readouterr().err
            kind = "field" if given == jsonl_in else "column"
            assert f"{where}: {kind} {LINE_ERROR!r} is a name absa uses for " in err, err
            assert "rename it" in err and len(err.strip().splitlines()) == 1
    assert sorted(tmp_path.iterdir()) == sorted([csv_in, src, jsonl_in])


def test_float_offsets_as_pandas_writes_them_pin_and_nan_pins_nothing(tmp_path: Path) -> None:
    """A float64 start/end column (pandas writes an integer column with gaps so): 14.0
    failed its row ("must be integers"), NaN too; and NaN was written bare into JSONL."""
    import pyarrow as pa

    nan = float("nan")
    table = pa.table(
        {
            "text": ["The pizza and pizza", "The pizza was good", "The pizza", "The pizza"],
            "aspect": ["pizza"] * 4,
            "start": pa.array([14.0, nan, None, 4.5], pa.float64()),
            "end": pa.array([19.0, nan, None, 9.0], pa.float64()),
        }
    )
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    assert _shipped(src, tmp_path / "out.jsonl") == 1
    rows = _strict_jsonl(tmp_path / "out.jsonl")
    assert (rows[0]["pred_start"], rows[0]["pred_end"], rows[0]["pred_occurrence"]) == (14, 19, 2)
    assert rows[1]["start"] is None and (rows[1]["pred_start"], rows[1]["pred_end"]) == (4, 9)
    assert rows[2]["error"] is None and rows[2]["pred_start"] == 4
    assert rows[3]["error"] == "start/end must be integers, got 4.5/9.0"
    assert _shipped(src, tmp_path / "out.parquet") == 1  # typed output: the floats as given
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("start").type == pa.float64()
    assert out.column("pred_start").to_pylist() == [14, 4, 4, None]


def test_nested_columns_are_written_to_csv_as_json(tmp_path: Path) -> None:
    """A list or struct column stopped the run (pyarrow: "Unsupported Type", no file named);
    every input column is kept, so a nested one is JSON text in CSV."""
    import csv

    import pyarrow as pa

    table = pa.table(
        {
            "text": ["The pizza was good", "The pizza"],
            "aspect": ["pizza", "pizza"],
            "tags": pa.array([["a", "é"], None], pa.list_(pa.string())),
            "meta": pa.array([{"k": 1, "x": 0.5}, {"k": None, "x": float("nan")}]),
            "n": [1, 2],
        }
    )
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    assert _shipped(src, tmp_path / "out.csv") == 0
    with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["tags"] for r in rows] == ['["a", "é"]', ""]
    assert [r["meta"] for r in rows] == ['{"k": 1, "x": 0.5}', '{"k": null, "x": null}']
    assert [r["n"] for r in rows] == ["1", "2"] and all(r["pred_label"] for r in rows)


def test_nan_and_infinity_in_a_float_column_are_empty_in_csv_as_from_jsonl(
    tmp_path: Path,
) -> None:
    """Parquet to CSV wrote pyarrow's "nan" and "inf", where JSONL to CSV writes an empty
    cell for the same values: one input, two spellings by its format."""
    import csv

    import pyarrow as pa

    inf, nan = float("inf"), float("nan")
    texts, aspects = ["The pizza was good"] * 4, ["pizza"] * 4
    src = tmp_path / "in.parquet"
    price = pa.array([1.5, nan, inf, None], pa.float64())
    pq.write_table(pa.table({"text": texts, "aspect": aspects, "price": price}), src)
    assert _shipped(src, tmp_path / "out.csv") == 0
    with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as f:
        assert [r["price"] for r in csv.DictReader(f)] == ["1.5", "", "", ""]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(
        "".join(
            f'{{"text": "{t}", "aspect": "pizza", "price": {p}}}\n'
            for t, p in zip(texts, ["1.5", "NaN", "Infinity", "null"], strict=True)
        )
    )
    assert _shipped(jsonl, tmp_path / "from-jsonl.csv") == 0
    with (tmp_path / "from-jsonl.csv").open(newline="", encoding="utf-8") as f:
        assert [r["price"] for r in csv.DictReader(f)] == ["1.5", "", "", ""]


def test_a_text_of_another_type_says_which_type(tmp_path: Path) -> None:
    """An integer text or a list aspect was "missing or empty"."""
    import pyarrow as pa

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": [1], "aspect": [["pizza"]]}), src)
    assert _shipped(src, tmp_path / "out.jsonl") == 1
    (row,) = _strict_jsonl(tmp_path / "out.jsonl")
    assert row["error"] == "text must be a string, not int"


def test_a_jsonl_with_a_byte_order_mark_scores_its_first_row(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``absa.bulk.jsonl`` decoded the first line as UTF-8 with the mark in it: the first
    row was a bad one ("Unexpected UTF-8 BOM") on the Parquet path and on Ray, while
    ``absa.scoring`` (utf-8-sig) scored it; a mark alone on the first line was a bad row
    there too, not a blank line."""
    from absa.bulk.jsonl import file_lines, jsonl_tables

    src = tmp_path / "bom.jsonl"
    src.write_bytes(
        b'\xef\xbb\xbf{"id": 1, "text": "The pizza was great", "aspect": "pizza"}\r\n'
        b'{"id": 2, "text": "The pizza was great", "aspect": "pizza"}'
    )
    assert _shipped(src, tmp_path / "out.parquet") == 0
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [(r["id"], r["error"]) for r in rows] == [(1, None), (2, None)]
    assert all(r["pred_label"] for r in rows)
    with src.open("rb") as f:  # as the Ray datasource reads each file
        (table,) = jsonl_tables(file_lines(f), str(src), 10)
    assert table.column("id").to_pylist() == [1, 2]
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b'\xef\xbb\xbf\n{"text": "The pizza", "aspect": "pizza"}\nnot json\n')
    with caplog.at_level("WARNING"):
        assert _shipped(blank, tmp_path / "blank.parquet") == 1
    errors = pq.read_table(tmp_path / "blank.parquet").column("error").to_pylist()
    assert len(errors) == 2 and errors[0] is None
    assert f"{blank}:3: invalid JSON" in caplog.text


def test_a_csv_header_ending_in_a_carriage_return_or_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``csv_header`` split the first 64 KiB on ``\\n`` only: a CSV with ``\\r`` line ends
    (which pyarrow and ``absa.scoring`` read) stopped with a ``_csv.Error`` traceback; a
    header byte that is not UTF-8 was a bare ``'utf-8' codec can't decode`` naming no file."""
    src = tmp_path / "mac.csv"
    src.write_bytes(b"id,text,aspect\r007,The pizza was great,pizza\r008,The pizza,pizza\r")
    assert _shipped(src, tmp_path / "out.parquet") == 0
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [(r["id"], r["error"]) for r in rows] == [("007", None), ("008", None)]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"id,t\xe9xt,text,aspect\n1,x,The pizza,pizza\n")
    capsys.readouterr()
    assert _shipped(bad, tmp_path / "bad.parquet") == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: " in err and "not valid UTF-8 (byte 0xe9" in err
    assert not (tmp_path / "bad.parquet").exists()


def test_a_byte_that_is_not_utf8_in_a_csv_fails_its_row_only_into_parquet(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """pyarrow stopped the whole run at the first such byte (exit 2, nothing written), where
    CSV to JSONL or CSV fails that row alone; now Parquet output does as they do."""
    src = tmp_path / "in.csv"
    src.write_bytes(
        b"id,text,aspect,note\n1,the food was great,food,ok\n2,caf\xe9 food,food,ok\n"
        b"3,good food,food,n\xe9e\n4,good service,service,ok\n"
    )
    with caplog.at_level("WARNING"):
        assert _predict(artifact, src, tmp_path / "out.parquet") == 1  # some rows bad
    got = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [r["id"] for r in got] == ["1", "2", "3", "4"]
    assert got[0]["pred_label"] and got[3]["pred_label"] and got[0]["error"] is None
    assert got[1]["pred_label"] is None and got[2]["pred_label"] is None
    assert got[1]["text"] == "caf\ufffd food" and got[2]["note"] == "n\ufffde"
    # worded as the JSONL/CSV path words it, the row's line named
    assert assert_csv_error(artifact, src, tmp_path) == [got[1]["error"], got[2]["error"]]
    assert "field 'text' is not valid UTF-8 (byte 0xe9" in got[1]["error"]
    assert f"{src}:4: field 'note' is not valid UTF-8" in caplog.text  # the header is line 1


def assert_csv_error(artifact: Path, src: Path, tmp_path: Path) -> list[str]:
    """The errors of the bad rows as CSV-to-JSONL scoring (absa.scoring) gives them."""
    assert _predict(artifact, src, tmp_path / "out.jsonl") == 1
    return [r["error"] for r in read_jsonl(tmp_path / "out.jsonl") if r.get("error")]


def _refused_into_parquet(artifact: Path, src: Path) -> str:
    """``absa predict`` of ``src`` into Parquet in a process of its own: its stderr, exit 2."""
    out = src.with_name("out.parquet")
    proc = subprocess.run(
        [sys.executable, "-m", "absa.cli", "predict", "--model", str(artifact), "--input",
         str(src), "--output", str(out), "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert not out.exists()
    return proc.stderr


def test_a_csv_without_a_text_column_is_refused_though_a_row_is_bad(
    artifact: Path, tmp_path: Path
) -> None:
    src = tmp_path / "in.csv"
    src.write_bytes(b"id,words,aspect\n1,caf\xe9 food,food\n")
    assert f"{src}: no column 'text'" in _refused_into_parquet(artifact, src)
    src.write_text("text;aspect\nthe food was good;food\n")  # a locale's list separator
    err = _refused_into_parquet(artifact, src)
    assert "one column, 'text;aspect', split by semicolons" in err, err
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "one.parquet"  # a table's one column is no CSV header: no such hint
    pq.write_table(pa.table({"text|aspect": ["the food|food"]}), table)
    err = _refused_into_parquet(artifact, table)
    assert "no column 'text'" in err and "split by" not in err, err


# ------------------------------------------- file scoring review: types, lines, wide headers


def _one_line_error(capsys: pytest.CaptureFixture) -> str:
    """The CLI's stderr after a refused run: one ``absa predict: error:`` line, no traceback."""
    lines = [x for x in capsys.readouterr().err.splitlines() if "INFO" not in x]
    assert len(lines) == 1 and lines[0].startswith("absa predict: error: "), lines
    return lines[0]


def test_a_jsonl_field_that_changes_type_in_a_later_block_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """JSONL is read 4,096 rows a block: a field that was a number in one block and a
    string in a later one of the same Parquet row group stopped the run with pyarrow's
    ``ArrowTypeError`` traceback (exit 1), naming neither file nor line."""
    row = {"text": "The pizza was good", "aspect": "pizza"}
    src = write_jsonl(tmp_path / "in.jsonl", [{**row, "id": i} for i in range(4096)])
    with src.open("a") as f:
        f.write('\n{"text": "The pizza was good", "aspect": "pizza", "id": "0042"}\n')
    assert _shipped(src, tmp_path / "out.parquet") == 2
    err = _one_line_error(capsys)
    assert f"{src}:4098: field 'id' is string here, int64 in the rows before" in err
    assert sorted(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ([1, 2, "0042"], "field 'v' is string here, int64 in the rows before"),  # was 42
        ([True, False, 7], "field 'v' is int64 here, bool in the rows before"),  # was True
    ],
)
def test_a_jsonl_value_of_another_type_after_a_row_group_is_not_cast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list[Any], said: str
) -> None:
    """Once a row group was written, a later value was cast to the file's type: "0042"
    became 42, 7 became True, a struct lost its new field ``b`` (no error, exit 0)."""
    from absa import load
    from absa.bulk import files

    monkeypatch.setattr(files, "ROW_GROUP", 2)
    row = {"text": "The pizza was good", "aspect": "pizza"}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({**row, "v": v}) + "\n\n" for v in values))
    dst = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=rf"^{re.escape(f'{src}:5: {said}')}"):
        files.score_table_file(load().predictor, src, dst, chunk=2, progress=False)
    assert sorted(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize(
    ("values", "kept"),
    [
        ([{"a": 1}, {"a": 2}, {"a": 3, "b": "x"}], [{"a": k, "b": None} for k in (1, 2)]),
        ([None, None, "x"], [None, None]),
    ],
    ids=["struct-widens", "null-then-text"],
)
def test_a_jsonl_value_that_widens_its_field_after_a_row_group_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list[Any], kept: list[Any]
) -> None:
    """A struct that gains a field, or a field null in every row of the first row group,
    was refused once that row group was written ("is struct<a: int64, b: string> here",
    "first has a value here"): the file is read ahead, so its columns take every field."""
    from absa import load
    from absa.bulk import files

    monkeypatch.setattr(files, "ROW_GROUP", 2)
    row = {"text": "The pizza was good", "aspect": "pizza"}
    src = write_jsonl(tmp_path / "in.jsonl", [{**row, "v": v} for v in values])
    files.score_table_file(load().predictor, src, tmp_path / "o.parquet", chunk=2, progress=False)
    assert pq.read_table(tmp_path / "o.parquet").column("v").to_pylist() == [*kept, values[-1]]


def test_a_jsonl_field_that_changes_type_is_refused_before_a_row_is_scored(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into Parquet the file is read ahead: a clash of types on its last line stops the run
    before any row is scored, not after hours of scoring."""
    from absa.bulk import files
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    scored: list[int] = []
    real = predictor.forward
    predictor.forward = lambda items, *a: scored.append(len(items)) or real(items, *a)  # type: ignore[method-assign]
    row = {"text": "The pizza was good", "aspect": "pizza"}
    src = write_jsonl(tmp_path / "in.jsonl", [*([{**row, "id": 1}] * 10), {**row, "id": "x"}])
    with pytest.raises(ValueError, match=f"{src}:11: field 'id' is string here, int64"):
        files.score_table_file(predictor, src, tmp_path / "o.parquet", chunk=2, progress=False)
    assert scored == [] and sorted(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize(
    ("values", "line"),
    [([0.5, 1, 2**53 + 1], 3), ([2**53 + 1, 1, 0.5], 1), ([-(2**53) - 1, 0.5], 1)],
    ids=["float-first", "integer-first", "negative"],
)
def test_an_integer_a_float_cannot_hold_beside_floats_in_another_block_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list, line: int
) -> None:
    """Integers become floats beside floats; one past 2**53 cannot, exactly. Within a block
    that is named with its line; across blocks it failed once the rows were scored, naming
    no line (pyarrow's "Integer value ... not in range")."""
    from absa import load
    from absa.bulk import files

    monkeypatch.setattr(files, "ROW_GROUP", 2)
    row = {"text": "The pizza was good", "aspect": "pizza"}
    src = write_jsonl(tmp_path / "in.jsonl", [{**row, "id": v} for v in values])
    said = f"{src}:{line}: field 'id' holds an integer past 2**53 here and numbers with a"
    with pytest.raises(ValueError, match=f"^{re.escape(said)}"):
        files.score_table_file(
            load().predictor, src, tmp_path / "o.parquet", chunk=1, progress=False
        )
    assert sorted(tmp_path.iterdir()) == [src]
    ok = write_jsonl(tmp_path / "ok.jsonl", [{**row, "id": v} for v in (0.5, 1, 2**53)])
    files.score_table_file(load().predictor, ok, tmp_path / "ok.parquet", chunk=1, progress=False)
    assert pq.read_table(tmp_path / "ok.parquet").column("id").to_pylist() == [0.5, 1.0, 2.0**53]


def test_jsonl_numbers_may_mix_integers_and_floats_across_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a block allows (JSON numbers as float64) later blocks may do too."""
    from absa import load
    from absa.bulk import files

    monkeypatch.setattr(files, "ROW_GROUP", 2)
    row = {"text": "The pizza was good", "aspect": "pizza"}
    src = write_jsonl(tmp_path / "in.jsonl", [{**row, "v": v} for v in (0.5, 1.5, 3, None)])
    files.score_table_file(load().predictor, src, tmp_path / "o.parquet", chunk=2, progress=False)
    out = pq.read_table(tmp_path / "o.parquet")
    assert out.column("v").to_pylist() == [0.5, 1.5, 3.0, None]


def test_a_jsonl_field_of_mixed_types_in_one_block_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Named the file alone: in a file of millions of lines, which one?"""
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"text": "The pizza was good", "aspect": "pizza", "id": 1}\n\n'
        '{"text": "The pizza was good", "aspect": "pizza", "id": 2}\n'
        '{"text": "The pizza was good", "aspect": "pizza", "id": "x"}\n'
    )
    assert _shipped(src, tmp_path / "out.parquet") == 2
    assert f"{src}:4: field 'id' holds values of different types" in _one_line_error(capsys)
    big = tmp_path / "big.jsonl"  # an integer no Arrow column holds: a traceback (exit 1)
    row = {"text": "The pizza", "aspect": "pizza"}
    write_jsonl(big, [{**row, "n": 1}, {**row, "n": 2}, {**row, "n": 2**64}])
    assert _shipped(big, tmp_path / "out.parquet") == 2
    assert f"{big}:3: field 'n' holds an integer over 64 bits" in _one_line_error(capsys)
    assert sorted(tmp_path.iterdir()) == [big, src]


def test_a_csv_header_over_64_kib_is_read_whole(tmp_path: Path) -> None:
    """``csv_header`` read the first 64 KiB: text and aspect after them were "no column
    'text'"; a column after them escaped the all-strings rule (``001`` became 1)."""
    names = [f"column_number_{i:05d}" for i in range(5000)]  # 100 KB of header
    late = tmp_path / "late.csv"
    cells = ["x"] * 5000 + ["007", "The pizza was good", "pizza"]
    late.write_text(",".join([*names, "zip", "text", "aspect"]) + "\n" + ",".join(cells) + "\n")
    assert _shipped(late, tmp_path / "late.parquet") == 0
    (row,) = pq.read_table(tmp_path / "late.parquet").to_pylist()
    assert row["zip"] == "007" and row["pred_label"] is not None
    early = tmp_path / "early.csv"
    cells = ["The pizza was good", "pizza"] + ["001"] * 5000
    early.write_text(",".join(["text", "aspect", *names]) + "\n" + ",".join(cells) + "\n")
    assert _shipped(early, tmp_path / "early.parquet") == 0
    out = pq.read_table(tmp_path / "early.parquet")
    assert {str(t) for t in out.schema.types[:5002]} == {"string"}
    assert out.column(names[-1]).to_pylist() == ["001"]


def test_a_line_over_many_reads_is_joined_whole(tmp_path: Path) -> None:
    """``file_lines`` added each 1 MiB read to what it had of the line, copying it all again:
    a 64 MiB line took 6 s, a 300 MiB one two minutes (0.25 s for 64 MiB now, gathered in
    pieces and joined once; measured by hand, not here). A line over several reads, one
    ending inside a read and the last without a newline come out whole."""
    from absa.bulk.jsonl import file_lines

    src = tmp_path / "long.jsonl"
    src.write_bytes(b'{"text": "' + b"y" * (5 << 20) + b'"}\n{}\r\nlast')
    with src.open("rb") as f:
        lines = list(file_lines(f))
    assert [len(x) for x in lines] == [(5 << 20) + 12, 3, 4] and lines[1:] == [b"{}\r", b"last"]
    assert lines[0].startswith(b'{"text": "yyy') and lines[0].endswith(b'yyy"}')


def test_a_binary_column_is_written_as_its_text_or_as_base64(tmp_path: Path) -> None:
    """Into JSONL, a binary column (binary, large_binary, nested) was Python's repr,
    ``"b'ok'"``; into CSV, bytes that are not UTF-8 stopped the run. Bytes that are UTF-8
    are now their text, others base64, in JSONL and in CSV alike (Parquet keeps bytes)."""
    import base64

    import pyarrow as pa

    src = tmp_path / "in.parquet"
    raw = [b"ok", "café".encode(), b"\x00\xff", None]
    table = pa.table(
        {
            "text": ["The pizza"] * 4,
            "aspect": ["pizza"] * 4,
            "b": pa.array(raw, pa.binary()),
            "big": pa.array(raw, pa.large_binary()),
            "nested": pa.array([[v] for v in raw], pa.list_(pa.binary())),
        }
    )
    pq.write_table(table, src)
    text = ["ok", "café", base64.b64encode(b"\x00\xff").decode("ascii"), None]
    assert text[2] == "AP8="
    assert _shipped(src, tmp_path / "out.jsonl") == 0
    rows = _strict_jsonl(tmp_path / "out.jsonl")
    assert [r["b"] for r in rows] == [r["big"] for r in rows] == text
    assert [r["nested"] for r in rows] == [[v] for v in text]
    assert _shipped(src, tmp_path / "out.csv") == 0
    with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as f:
        cells = list(csv.DictReader(f))
    want = [v or "" for v in text]  # a null is an empty cell
    assert [r["b"] for r in cells] == [r["big"] for r in cells] == want
    assert [r["nested"] for r in cells] == [json.dumps([v], ensure_ascii=False) for v in text]
    assert _shipped(src, tmp_path / "out.parquet") == 0  # bytes as they were
    assert pq.read_table(tmp_path / "out.parquet").column("b").to_pylist() == raw


@pytest.mark.parametrize(
    ("into", "out"), [("parquet", "parquet"), ("jsonl", "jsonl"), ("csv", "csv")]
)
def test_an_output_that_cannot_be_created_is_refused_before_a_row_is_scored(
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    into: str,
    out: str,
) -> None:
    """A Parquet output was first opened when its first row group was full (65,536 rows,
    or the whole of a smaller input): a directory that cannot be written failed after that
    scoring, naming the ``.part``, not the output. JSONL and CSV (absa.scoring) named the
    ``.part`` too. (Made here by ``Path.touch`` refusing the ``.part``: root writes any
    directory.)"""
    import pyarrow as pa

    src = tmp_path / f"in.{into}"  # a bad row: scored, it is logged as a WARNING
    table = pa.table({"text": ["The pizza"], "aspect": ["wine"]})
    if into == "parquet":
        pq.write_table(table, src)
    elif into == "csv":
        src.write_text("text,aspect\nThe pizza,wine\n")
    else:
        src.write_text('{"text": "The pizza", "aspect": "wine"}\n')
    dst = tmp_path / f"out.{out}"

    def refused(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(Path, "touch", refused)
    with caplog.at_level("WARNING"):
        assert _shipped(src, dst) == 2
    err = _one_line_error(capsys)
    assert f"cannot write {dst}: " in err and ".part" not in err
    assert "wine" not in caplog.text  # refused before the row was scored
    assert sorted(tmp_path.iterdir()) == [src]
    assert "Permission denied" in err


#: output names a file system takes (NAME_MAX 255 bytes), though not with ``.<random>.part``
#: after them: 250 ASCII characters, and multi-byte characters near the limit
LONG_NAMES = {
    "ascii-parquet": "o" * 242 + ".parquet",
    "ascii-jsonl": "o" * 244 + ".jsonl",
    "two-byte-parquet": "é" * 123 + ".parquet",
    "three-byte-csv": "€" * 83 + ".csv",
}


@pytest.mark.parametrize("into", ["parquet", "jsonl"])
@pytest.mark.parametrize("name", LONG_NAMES.values(), ids=LONG_NAMES.keys())
def test_an_output_named_near_the_name_limit_is_written(
    tmp_path: Path, into: str, name: str
) -> None:
    """``OUT.<random>.part`` was 18 bytes over the output's name: an output named with 238
    bytes or more (valid by itself) failed before a row was scored, "File name too long"."""
    src = tmp_path / f"in.{into}"
    row = {"id": 1, "text": "The pizza", "aspect": "pizza"}
    if into == "parquet":
        write_parquet(src, [row])
    else:
        write_jsonl(src, [row])
    dst = tmp_path / name
    assert _shipped(src, dst) == 0
    assert sorted(tmp_path.iterdir()) == sorted([src, dst])  # under its full name, no .part
    if name.endswith(".parquet"):
        got = pq.read_table(dst).to_pylist()
    elif name.endswith(".csv"):
        with dst.open(newline="", encoding="utf-8") as f:
            got = list(csv.DictReader(f))
    else:
        got = read_jsonl(dst)
    assert len(got) == 1 and str(got[0]["id"]) == "1" and got[0]["pred_label"]


@pytest.mark.parametrize(
    ("into", "out", "cause"),
    [
        ("parquet", "parquet", "ENOSPC"),
        ("parquet", "jsonl", "ENOSPC"),
        ("parquet", "csv", "ENOSPC"),
        ("jsonl", "parquet", "ENOSPC"),
        ("parquet", "parquet", "EDQUOT"),
    ],
)
def test_a_full_disk_names_the_output_and_leaves_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    into: str,
    out: str,
    cause: str,
) -> None:
    """A disk that filled while pyarrow (or Python) wrote the output said "[Errno 28] Error
    writing bytes to file. Detail: [errno 28] No space left on device": no file named.
    ENOSPC: each .part is a link to /dev/full (the kernel's own error); EDQUOT: pyarrow's
    Parquet writes fail with it."""
    src = tmp_path / f"in.{into}"
    rows = [{"id": i, "text": "The pizza", "aspect": "pizza"} for i in range(3)]
    if into == "parquet":
        write_parquet(src, rows)
    else:
        write_jsonl(src, rows)
    dst = tmp_path / f"out.{out}"
    if cause == "ENOSPC":
        parts_on_a_full_disk(monkeypatch)
    else:

        def over_quota(*args: object, **kwargs: object) -> None:
            raise OSError(errno.EDQUOT, "Error writing bytes to file. Detail: [errno 122]")

        monkeypatch.setattr(pq.ParquetWriter, "write_table", over_quota)
    assert _shipped(src, dst) == 2
    err = _one_line_error(capsys)
    assert f"cannot write {dst}: {NO_ROOM[cause]}" in err and ".part" not in err
    assert os.strerror(getattr(errno, cause)) in err  # the system's own words too
    assert sorted(tmp_path.iterdir()) == [src]  # no .part, no partial output


def test_a_csv_record_over_pyarrows_block_is_read_for_parquet(tmp_path: Path) -> None:
    """pyarrow reads CSV in 1 MiB blocks and stopped the run on a record over two of them
    ("straddling object straddles two block boundaries (try to increase block size?)"),
    after the rows before it were scored; the JSONL and CSV outputs read it. It is read now
    with a block that holds it, every row once and in order."""
    note = "n" * 4000
    long_text = "The pizza was good and the wine was fine. " * 75_000  # 3.2 MB: 3 blocks
    src = tmp_path / "in.csv"
    with src.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "aspect", "note"])
        w.writerows([i, "The pizza was good", "pizza", note] for i in range(300))  # 1.2 MB
        w.writerow([300, long_text + "\nThe pizza", "pizza", ""])
        w.writerows([i, "The pizza was good", "pizza", note] for i in range(301, 310))
    assert _shipped(src, tmp_path / "out.parquet") == 1  # its one bad row: the long text's
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [r["id"] for r in rows] == [str(i) for i in range(310)]
    assert rows[300]["text"] == long_text + "\nThe pizza" and rows[299]["note"] == note
    # read whole, and refused as a row: past the text a file's row may have
    assert "a row scored from a file takes up to" in rows[300]["error"]
    assert all(r["error"] is None and r["pred_label"] for r in rows[:300] + rows[301:])


@pytest.mark.parametrize("damage", ["footer", "metadata", "page"])
def test_a_damaged_parquet_file_is_one_line_naming_it(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, damage: str
) -> None:
    """pyarrow reports a damaged file's metadata ("Couldn't deserialize thrift") as an
    OSError without the file's name, which the CLI printed as it was."""
    good = write_parquet(tmp_path / "good.parquet", [{"text": "the food", "aspect": "food"}] * 50)
    data = bytearray(good.read_bytes())
    if damage == "footer":  # cut short: no magic bytes at the end
        data = data[: len(data) // 2]
    elif damage == "metadata":  # the footer's thrift metadata overwritten
        size = int.from_bytes(data[-8:-4], "little")
        data[-8 - size : -8] = b"\xff" * size
    else:  # a column chunk's page header overwritten
        data[4:40] = b"\xff" * 36
    src = tmp_path / "in.parquet"
    src.write_bytes(bytes(data))
    assert _predict(artifact, src, tmp_path / "out.parquet") == 2
    line = _one_line_error(capsys)
    assert f"error: {src}: " in line, line
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("value", [{}, [{}], {"a": {}}], ids=["object", "in-list", "nested"])
def test_an_empty_object_into_parquet_is_one_line_naming_file_line_and_field(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, value: object
) -> None:
    """Parquet cannot store an object with no fields: pyarrow's "Cannot write struct type
    'x' with no child field" named neither the input nor its line. JSONL and CSV take it."""
    src = tmp_path / "in.jsonl"
    rows = [{"text": "the food", "aspect": "food"}, {"text": "the food", "aspect": "food"}]
    rows[1]["x"] = value
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _predict(artifact, src, tmp_path / "out.parquet") == 2
    line = _one_line_error(capsys)
    assert f"error: {src}:2: field 'x' " in line and "no fields" in line, line
    assert not (tmp_path / "out.parquet").exists()
    assert _predict(artifact, src, tmp_path / "out.jsonl") == 0


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ([{"b": 1}, {"a": {}}], 2),
        ([[], [{}]], 2),
        ([None, {}], 2),
    ],
    ids=["nested-after-a-field", "in-a-list-after-an-empty-list", "after-a-null"],
)
def test_the_line_named_for_an_empty_object_is_the_one_holding_it(
    artifact: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    values: list,
    line: int,
) -> None:
    src = tmp_path / "in.jsonl"
    rows = [{"text": "the food", "aspect": "food", "x": v} for v in values]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _predict(artifact, src, tmp_path / "out.parquet") == 2
    assert f"error: {src}:{line}: field 'x' " in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("values", "line"),
    [([None, None, {}], 3), ([{}, {}, {"a": {}}], 1)],
    ids=["after-a-row-group-of-nulls", "in-a-row-group-of-its-own"],
)
def test_an_empty_object_after_the_first_row_group_is_named_by_its_line(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list, line: int
) -> None:
    """Read ahead, a column's type is the whole file's: an object with no fields is refused
    where that type has none, wherever the row group it is in."""
    from absa.bulk import files

    monkeypatch.setattr(files, "ROW_GROUP", 2)
    src = tmp_path / "in.jsonl"
    rows = [{"text": "the food", "aspect": "food", "x": v} for v in values]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dst = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=f"^{re.escape(str(src))}:{line}: field 'x' holds an"):
        files.score_table_file(_predictor(artifact), src, dst, chunk=1, progress=False)
    assert sorted(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("row_group", [64, 16], ids=["one-row-group", "row-groups-of-their-own"])
@pytest.mark.parametrize("order", ["empty-first", "empty-later"])
def test_an_empty_object_beside_objects_with_fields_in_its_row_group_is_written(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str, row_group: int
) -> None:
    """{} in a column whose other rows have fields is stored as those fields null, as before
    the check: it refused such a file when {} came in a chunk of its own (the review's
    regression), and where the {} filled the first row group (the input is read ahead now:
    the column is of the file's type)."""
    import pyarrow.parquet as pq

    from absa.bulk import files

    monkeypatch.setattr(files, "ROW_GROUP", row_group)
    xs: list = [{}] * 40 + [{"a": 1}] * 40 if order == "empty-first" else [{"a": 1}] * 40 + [{}]
    src = tmp_path / "in.jsonl"
    rows = [{"text": "the food", "aspect": "food", "x": x} for x in xs]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    predictor = _predictor(artifact)
    files.score_table_file(predictor, src, tmp_path / "out.parquet", chunk=16, progress=False)
    got = pq.read_table(tmp_path / "out.parquet").column("x").to_pylist()
    assert got == [x or {"a": None} for x in xs]


def test_a_jsonl_error_field_first_seen_in_a_later_block_puts_every_rows_error_in_pred_error(
    artifact: Path, tmp_path: Path
) -> None:
    """JSONL into Parquet: the column a row's error goes in was chosen block by block, so
    the rows before the block where the input's own ``error`` field first appears had
    theirs in ``error`` and the rest in ``pred_error``; now one column for the whole file."""
    from absa.bulk.files import score_table_file

    good = {"text": "the food was great", "aspect": "food"}
    rows = [{**good, "id": i} for i in range(6)]
    rows[0]["aspect"] = "zzz"  # bad, in the first block
    rows[3]["error"] = "upstream timeout"  # the input's own field, in the second block
    rows[4]["aspect"] = "zzz"  # bad, in the second block
    src = write_jsonl(tmp_path / "late-error.jsonl", rows)
    dst = tmp_path / "out.parquet"
    stats = score_table_file(_predictor(artifact), src, dst, chunk=2, progress=False)
    got = pq.read_table(dst).to_pylist()
    assert [r["error"] for r in got] == [None, None, None, "upstream timeout", None, None]
    assert [r["pred_error"] is not None for r in got] == [True, False, False, False, True, False]
    assert (stats.rows, stats.scored, [line for line, _ in stats.bad]) == (6, 4, [1, 5])
