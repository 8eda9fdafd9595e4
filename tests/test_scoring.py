"""`absa predict`: one text, and streaming file scoring (JSONL and CSV) with bad rows."""

from __future__ import annotations

import csv
import errno
import io
import json
import logging
import os
import stat
from pathlib import Path

import pytest

from absa.cli import main
from tests.helpers import ARTIFACT_EXAMPLES as EXAMPLES
from tests.helpers import NO_ROOM, parts_on_a_full_disk, read_jsonl

A, B = EXAMPLES[0], EXAMPLES[1]  # one training sentence, its two aspects (the model fits them)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_predict_one_text_prints_json(artifact: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(
        [
            "predict",
            "--model",
            str(artifact),
            "--text",
            A.text,
            "--aspect",
            A.term,
            "--aspect",
            B.term,
            "--explain",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    terms = [(r["term"], r["label"]) for r in out["results"]]
    assert terms == [(A.term, A.label), (B.term, B.label)]
    assert abs(sum(w["weight"] for w in out["results"][0]["attention"]) - 1) < 1e-3


def test_predict_takes_aspects_as_the_api_names_them(
    artifact: Path, capsys: pytest.CaptureFixture
) -> None:
    """``--aspects A B``, the REST body's field name, was "unrecognized arguments"; it is
    ``--aspect A --aspect B`` (which still works, and so does ``--aspect A B``)."""
    base = ["predict", "--model", str(artifact), "--text", A.text]
    answers = []
    for given in (["--aspect", A.term, "--aspect", B.term], ["--aspects", A.term, B.term]):
        assert main([*base, *given]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert [r["term"] for r in answers[0]["results"]] == [A.term, B.term]
    assert answers[1] == answers[0]


def test_predict_runs_the_threads_asked_for(
    artifact: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture,
) -> None:
    """ABSA_THREADS was read by absa serve alone: absa predict took every CPU on a machine
    shared with others, whatever the environment said. --threads wins over it."""
    base = ["predict", "--model", str(artifact), "--text", A.text, "--aspect", A.term]

    def loaded_with(argv: list[str]) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="absa.model.runtime"):
            assert main(argv) == 0
        return [m for r in caplog.records if "threads=" in (m := r.getMessage())]

    monkeypatch.setenv("ABSA_THREADS", "1")
    assert [m.endswith("threads=1)") for m in loaded_with(base)] == [True]
    assert [m.endswith("threads=2)") for m in loaded_with([*base, "--threads", "2"])] == [True]
    capsys.readouterr()
    assert main([*base, "--threads", "-1"]) == 2
    assert "--threads is a whole number >= 0" in capsys.readouterr().err
    ray = ["predict", "--engine", "ray", "--input", "x.jsonl", "--output", "o", "--threads", "1"]
    assert main(ray) == 2
    assert "--threads is for the local engine" in capsys.readouterr().err


def test_predict_unknown_aspect_is_a_clear_error(
    artifact: Path, capsys: pytest.CaptureFixture
) -> None:
    rc = main(
        ["predict", "--model", str(artifact), "--text", "the food was great", "--aspect", "pizza"]
    )
    assert rc == 2
    assert "'pizza' does not occur in the text" in capsys.readouterr().err


def test_jsonl_to_jsonl_one_row_per_input_row_in_order(artifact: Path, tmp_path: Path) -> None:
    src = _write(
        tmp_path / "in.jsonl",
        json.dumps({"text": B.text, "aspect": B.term, "id": 1}) + "\n"
        "not json\n"
        "\n"
        '{"text": "the pizza was okay", "aspect": "burger", "id": 3}\n'
        '{"text": "the pizza was okay", "aspect": "pizza", "start": 4, "end": 9, "id": 4}\n'
        '{"text": "the pizza was okay", "aspect": "pizza", "start": 0, "end": 3, "id": 5}\n'
        '{"text": "", "aspect": "pizza", "id": 6}\n'
        '["a", "list"]\n',
    )
    dst = tmp_path / "out.jsonl"
    rc = main(
        ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst), "--quiet"]
    )
    assert rc == 1  # some rows were bad; the run still finished
    rows = [json.loads(line) for line in dst.read_text().splitlines()]
    assert len(rows) == 7  # the blank line is not a row
    assert rows[0]["id"] == 1 and rows[0]["pred_label"] == B.label
    assert set(rows[0]["pred_scores"]) == {"negative", "neutral", "positive"}
    assert rows[0]["pred_score"] == max(rows[0]["pred_scores"].values())
    assert "invalid JSON" in rows[1]["error"]
    assert "does not occur" in rows[2]["error"] and rows[2]["id"] == 3
    assert rows[3]["id"] == 4 and rows[3]["pred_label"] in ("negative", "neutral", "positive")
    assert (rows[3]["pred_start"], rows[3]["pred_end"]) == (4, 9)
    assert "not the term 'pizza'" in rows[4]["error"]
    assert "text is missing or empty" in rows[5]["error"]
    assert "JSON object" in rows[6]["error"]
    assert not list(tmp_path.glob("*.part"))


def test_bad_rows_are_reported_with_line_numbers(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    src = _write(tmp_path / "in.jsonl", '{"text": "good food", "aspect": "food"}\n\n{oops\n')
    with caplog.at_level("WARNING"):
        main(
            [
                "predict",
                "--model",
                str(artifact),
                "--input",
                str(src),
                "--output",
                str(tmp_path / "o.jsonl"),
                "--quiet",
            ]
        )
    assert f"{src}:3: invalid JSON" in caplog.text


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_row_nested_too_deep_is_a_bad_row_not_the_end_of_the_run(
    artifact: Path, tmp_path: Path, suffix: str
) -> None:
    """A field nested 600 levels stopped the whole run with "maximum recursion depth
    exceeded", naming no file or line; 5,000 levels is past json's own limit."""
    good = '{"text": "good food", "aspect": "food"}'
    rows = [
        good,
        *('{"text": "t", "aspect": "t", "x": %s}' % ("[" * n + "]" * n) for n in (600, 5000)),
    ]
    rows.append('{"text": "good food", "aspect": "food", "x": %s}' % ("[" * 31 + "]" * 31))
    src = _write(tmp_path / "in.jsonl", "\n".join(rows) + "\n")
    out = tmp_path / f"o{suffix}"
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(out)]
    assert main([*argv, "--quiet"]) == 1  # bad rows
    if suffix == ".jsonl":
        got = [json.loads(line) for line in out.read_text().splitlines()]
    else:
        import pyarrow.parquet as pq

        got = pq.read_table(out).to_pylist()
    assert [r.get("error") for r in got][1:3] == ["nested deeper than 32 levels"] * 2
    # 32 levels are read, and make a Parquet file that reads back (60 did not: pyarrow reads
    # 100 schema levels, a list takes two)
    assert got[0].get("pred_label") and got[3].get("pred_label")


def test_csv_to_csv_keeps_columns_and_quoting(artifact: Path, tmp_path: Path) -> None:
    src = _write(
        tmp_path / "in.csv",
        f'id,text,aspect\n1,"{A.text}",{A.term}\n2,"multi\nline, text",pizza\n',
    )
    dst = tmp_path / "out.csv"
    main(
        ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst), "--quiet"]
    )
    with dst.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["1", "2"]
    assert rows[0]["pred_label"] == A.label and rows[0]["error"] == ""
    labels = ("negative", "neutral", "positive")
    assert abs(sum(float(rows[0][f"pred_score_{k}"]) for k in labels) - 1) < 1e-4
    # the label's probability written as its own column is: six places (it was "0.80835")
    assert rows[0]["pred_score"] == rows[0][f"pred_score_{A.label}"]
    assert len(rows[0]["pred_score"].split(".")[1]) == 6
    assert rows[1]["pred_label"] == "" and "does not occur" in rows[1]["error"]
    assert rows[1]["text"] == "multi\nline, text"


def test_csv_without_the_needed_columns_names_the_file(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    src = _write(tmp_path / "in.csv", "sentence,term\nx,y\n")
    rc = main(
        [
            "predict",
            "--model",
            str(artifact),
            "--input",
            str(src),
            "--output",
            str(tmp_path / "o.csv"),
            "--quiet",
        ]
    )
    assert rc == 2
    assert f"{src}:1:" in capsys.readouterr().err


@pytest.mark.parametrize("out", ["o.csv", "o.jsonl"])
def test_a_csv_header_that_is_not_utf8_says_so(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, out: str
) -> None:
    """A UTF-16 CSV (a spreadsheet's "Unicode text" export) was told its header must name the
    columns text and aspect, which it does; written as Parquet it was told it is not UTF-8."""
    src = tmp_path / "in.csv"
    src.write_text("text,aspect\nthe food,food\n", encoding="utf-16")
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--quiet", "--output"]
    assert main([*argv, str(tmp_path / out)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"absa predict: error: {src}:1: the line is not valid UTF-8 (byte 0xff at character 1)"
    )


def test_many_rows_are_scored_in_chunks(artifact: Path, tmp_path: Path) -> None:
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.scoring import score_file

    n = 2000
    src = tmp_path / "big.jsonl"
    with src.open("w") as f:
        for i in range(n):
            f.write(
                json.dumps({"text": f"the food was great {i}", "aspect": "food", "i": i}) + "\n"
            )
    calls: list[int] = []
    rt = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    real_run = rt.forward
    rt.forward = lambda items, *a: calls.append(len(items)) or real_run(items, *a)  # type: ignore[method-assign]
    stats = score_file(rt, src, tmp_path / "big.out.jsonl", chunk=256, progress=False)
    assert stats.rows == stats.scored == n and not stats.bad
    assert max(calls) <= 256 and sum(calls) == n  # never more than a chunk in memory
    out = (tmp_path / "big.out.jsonl").read_text().splitlines()
    assert [json.loads(line)["i"] for line in out] == list(range(n))


# --------------------------------------------------------------------------- issue #13, item 8


def test_a_byte_that_is_not_utf8_fails_its_row_only(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The file goes on; the row gets an error naming the field; the log names file and line."""
    good = json.dumps({"text": "the food was great", "aspect": "food", "id": 1}).encode()
    bad = b'{"text": "the caf\xe9 food was great", "aspect": "food", "id": 2}'
    src = tmp_path / "in.jsonl"
    src.write_bytes(good + b"\n" + bad + b"\n" + good.replace(b"1}", b"3}") + b"\n")
    dst = tmp_path / "out.jsonl"
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--quiet"]) == 1  # some rows bad, the run finished
    rows = [json.loads(line) for line in dst.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert "pred_label" in rows[0] and "pred_label" in rows[2]
    assert "not valid UTF-8" in rows[1]["error"] and "0xe9" in rows[1]["error"]
    assert "'text'" in rows[1]["error"] and "pred_label" not in rows[1]
    assert f"{src}:2: field 'text' is not valid UTF-8" in caplog.text


def test_a_byte_that_is_not_utf8_in_a_csv_fails_its_row_only(
    artifact: Path, tmp_path: Path
) -> None:
    src = tmp_path / "in.csv"
    src.write_bytes(
        b"id,text,aspect\n1,the food was great,food\n2,caf\xe9 food,food\n3,good food,food\n"
    )
    dst = tmp_path / "out.csv"
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 1
    with dst.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["1", "2", "3"]
    assert rows[0]["pred_label"] and rows[2]["pred_label"] and not rows[1]["pred_label"]
    assert "not valid UTF-8" in rows[1]["error"]


def test_every_input_column_is_kept_and_predictions_get_their_own(
    artifact: Path, tmp_path: Path
) -> None:
    """An input ``label`` (e.g. the gold label) is not overwritten by the prediction."""
    rows_in = [
        {"text": A.text, "aspect": A.term, "label": "gold-a", "score": "7", "scores": [1]},
        {"text": B.text, "aspect": B.term, "label": "gold-b", "score": "8", "scores": [2]},
    ]
    src = _write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows_in))
    dst = tmp_path / "out.jsonl"
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 0
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    for given, got in zip(rows_in, out, strict=True):
        assert {k: got[k] for k in given} == given  # every input field, untouched
    assert [o["pred_label"] for o in out] == [A.label, B.label]

    src = _write(tmp_path / "in.csv", f"text,aspect,label\n{A.text},{A.term},gold-a\n")
    dst = tmp_path / "out.csv"
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 0
    with dst.open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["label"] == "gold-a" and row["pred_label"] == A.label


def test_an_input_column_named_like_an_output_column_is_refused(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    src = _write(tmp_path / "in.csv", "text,aspect,pred_label\ngood food,food,x\n")
    argv = ["predict", "--model", str(artifact), "--input", str(src)]
    assert main([*argv, "--output", str(tmp_path / "o.csv"), "--quiet"]) == 2
    assert f"{src}:1: column 'pred_label'" in capsys.readouterr().err


def test_a_repeated_aspect_says_which_occurrence_was_scored(artifact: Path, tmp_path: Path) -> None:
    text = "the food was cold but the dessert and the food of the day were great"
    second = text.index("food", 5)
    rows_in = [
        {"text": text, "aspect": "food"},
        {"text": text, "aspect": "food", "start": second, "end": second + 4},
        {"text": text, "aspect": "dessert"},
    ]
    src = _write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows_in))
    dst = tmp_path / "out.jsonl"
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 0
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    spans = [(o["pred_start"], o["pred_end"]) for o in out]
    assert spans == [(4, 8), (second, second + 4), (26, 33)]
    assert [(o["pred_occurrence"], o["pred_occurrences"]) for o in out] == [(1, 2), (2, 2), (1, 1)]


def test_the_progress_bar_counts_rows(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import absa.scoring
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    bars: list[dict] = []

    class Bar:
        def __init__(self, **kwargs: object) -> None:
            self.kwargs, self.count = kwargs, 0
            bars.append(self.__dict__)

        def __enter__(self) -> Bar:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def update(self, n: int = 1) -> None:
            self.count += n

        def refresh(self) -> None:
            pass

    monkeypatch.setattr(absa.scoring, "tqdm", Bar)
    long = "the food was great " + "and so on " * 40  # rows far longer than a byte each
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": long, "aspect": "food"}) + "\n" for _ in range(7)))
    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    absa.scoring.score_file(predictor, src, tmp_path / "o.jsonl", chunk=3)
    (bar,) = bars
    assert bar["count"] == 7 and "row" in str(bar["kwargs"]["unit"])
    assert "B" not in str(bar["kwargs"]["unit"])


def test_no_progress_bar_when_stderr_is_not_a_terminal(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Logs (a CronJob, CI) get no bars; ``--quiet`` is not needed for that."""
    src = _write(tmp_path / "in.jsonl", json.dumps({"text": "good food", "aspect": "food"}) + "\n")
    argv = ["predict", "--model", str(artifact), "--input", str(src)]
    assert main([*argv, "--output", str(tmp_path / "o.jsonl")]) == 0  # no --quiet
    err = capsys.readouterr().err
    assert "it/s" not in err and "rows/s" not in err and "%|" not in err and "\r" not in err


def _score(artifact: Path, src: Path, dst: Path) -> int:
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    return main([*argv, "--quiet"])


def test_a_jsonl_line_giving_a_key_twice_is_a_bad_row(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``{"text": "a", "text": "b", ...}`` was scored as its last "text" without a word,
    where the training readers refuse a key given twice: which one was meant, no one knows."""
    good = json.dumps({"text": A.text, "aspect": A.term, "id": 1})
    text, term = json.dumps(A.text), json.dumps(A.term)
    twice = f'{{"text": {text}, "text": "the pizza was okay", "aspect": "pizza"}}'
    nested = f'{{"text": {text}, "aspect": {term}, "meta": {{"k": 1, "k": 2}}}}'
    src = _write(tmp_path / "in.jsonl", f"{good}\n{twice}\n{nested}\n{good}\n")
    dst = tmp_path / "out.jsonl"
    with caplog.at_level("WARNING"):
        assert _score(artifact, src, dst) == 1  # some rows were bad; the run still finished
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    assert len(rows) == 4
    message = "the key {!r} is given twice in one object"  # JSON, but which value is meant?
    assert rows[1] == {"error": message.format("text"), "line": 2}
    assert rows[2] == {"error": message.format("k"), "line": 3}
    assert rows[0]["pred_label"] == rows[3]["pred_label"] == A.label
    assert f"{src}:2: {message.format('text')}" in caplog.text
    assert f"{src}:3: {message.format('k')}" in caplog.text


def test_a_text_past_the_file_limit_is_a_bad_row_not_gigabytes(
    artifact: Path, tmp_path: Path
) -> None:
    """File scoring had no limit on a text: one row of 20 MB took 1.7 GB to encode (a
    document, not a review), where the run is to take constant memory. A row's text over
    MAX_ROW_TEXT_CHARS is that row's error; the others are scored."""
    from absa.scoring import MAX_ROW_TEXT_CHARS

    long = "the food " * (MAX_ROW_TEXT_CHARS // 9 + 1)
    rows = [{"text": long, "aspect": "food"}, {"text": A.text, "aspect": A.term}]
    src = _write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert _score(artifact, src, tmp_path / "out.jsonl") == 1
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert out[0]["error"] == (
        f"text has {len(long):,} characters; a row scored from a file takes up to "
        f"{MAX_ROW_TEXT_CHARS:,} (a review, not a document): split it"
    )
    assert out[1]["pred_label"] == A.label


def test_the_output_cannot_be_the_input(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    src = _write(tmp_path / "same.jsonl", json.dumps({"text": A.text, "aspect": A.term}) + "\n")
    before = src.read_bytes()
    assert _score(artifact, src, tmp_path / "." / "same.jsonl") == 2
    assert "would replace the input" in capsys.readouterr().err
    assert src.read_bytes() == before
    # the same file under another name (a hard link here; a bind mount, or another case of
    # the name on a file system that ignores case): the names were compared, so a bind
    # mount's input was replaced by the output. The file is compared (device and inode)
    (tmp_path / "elsewhere").mkdir()
    other = tmp_path / "elsewhere" / "same.jsonl"
    os.link(src, other)
    assert _score(artifact, src, other) == 2
    assert "would replace the input" in capsys.readouterr().err
    assert src.read_bytes() == before == other.read_bytes()


def test_jsonl_to_csv_keeps_every_rows_fields_and_its_own_error_field(
    artifact: Path, tmp_path: Path
) -> None:
    """The CSV columns are every field of every row (a bad first line used to leave none
    but the predictions', a field first seen in row 3 was dropped), and an input field
    "error" keeps its value, the row's error going beside it (pred_error), as in JSONL."""
    lines = [
        "not json",
        json.dumps({"text": A.text, "aspect": A.term, "id": 1}),
        json.dumps({"text": A.text, "aspect": B.term, "note": "x", "error": "upstream"}),
        json.dumps({"text": A.text, "aspect": "pizza", "error": "upstream too"}),
    ]
    src = _write(tmp_path / "in.jsonl", "\n".join(lines) + "\n")
    dst = tmp_path / "out.csv"
    assert _score(artifact, src, dst) == 1
    with dst.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames is not None
    assert reader.fieldnames[:5] == ["text", "aspect", "id", "note", "error"]
    assert reader.fieldnames[-1] == "pred_error"
    assert "invalid JSON" in rows[0]["pred_error"]
    assert rows[1]["id"] == "1" and rows[1]["pred_label"] == A.label
    assert rows[2]["note"] == "x" and rows[2]["error"] == "upstream"
    assert rows[2]["pred_label"] == B.label and rows[2]["pred_error"] == ""
    assert rows[3]["error"] == "upstream too" and "does not occur" in rows[3]["pred_error"]


def test_an_input_with_both_error_fields_never_mixes_them_with_the_rows_error(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A JSONL input with "error" and "pred_error" fields of its own: into CSV, its
    pred_error values filled the column of the rows' errors (a scored row read as failed);
    into JSONL, a bad row's error replaced its pred_error. Refused up front into CSV (the
    header is known); into JSONL a scored row keeps both, and a bad one is written as an
    unread line is (its error and line), since its error has no field left to go in."""
    both = {"error": "up", "pred_error": "mine"}
    lines = [
        json.dumps({"text": A.text, "aspect": A.term}),
        json.dumps({"text": A.text, "aspect": A.term, **both}),
        json.dumps({"text": A.text, "aspect": "pizza", **both}),
    ]
    src = _write(tmp_path / "in.jsonl", "\n".join(lines) + "\n")
    assert _score(artifact, src, tmp_path / "out.csv") == 2
    err = capsys.readouterr().err
    assert f"{src}: fields 'error' and 'pred_error'" in err and "rename one" in err, err
    assert not (tmp_path / "out.csv").exists()
    assert _score(artifact, src, tmp_path / "out.jsonl") == 1
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert rows[0]["pred_label"] == rows[1]["pred_label"] == A.label
    assert (rows[1]["error"], rows[1]["pred_error"]) == ("up", "mine")
    assert set(rows[2]) == {"error", "line"} and rows[2]["line"] == 3, rows[2]
    assert "does not occur" in rows[2]["error"] and "rename one" in rows[2]["error"]


def test_a_ragged_csv_row_is_a_bad_row_not_cut(artifact: Path, tmp_path: Path) -> None:
    src = _write(
        tmp_path / "in.csv",
        f"text,aspect,id\n{A.text},{A.term},1,EXTRA,MORE\n{A.text},{A.term}\n{A.text},{B.term},3\n",
    )
    dst = tmp_path / "out.jsonl"
    assert _score(artifact, src, dst) == 1
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    assert rows[0]["error"] == "the row has 5 fields; the header names 3"
    assert rows[1]["error"] == "the row has 2 fields; the header names 3"
    assert "null" not in rows[0] and rows[2]["pred_label"] == B.label


def test_a_csv_with_a_byte_order_mark_reads_its_first_column(
    artifact: Path, tmp_path: Path
) -> None:
    src = tmp_path / "bom.csv"
    src.write_bytes(f"\ufefftext,aspect,id\n{A.text},{A.term},007\n".encode())
    dst = tmp_path / "out.csv"
    assert _score(artifact, src, dst) == 0
    with dst.open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["text"] == A.text and row["id"] == "007" and row["pred_label"] == A.label


def test_offsets_that_are_not_whole_numbers_are_bad_rows(artifact: Path, tmp_path: Path) -> None:
    """5.9 used to be read as 5 and true as 1: the row scored at a span nobody gave."""
    at = A.text.index(A.term)
    rows = [
        {"text": A.text, "aspect": A.term, "start": at + 0.9, "end": at + len(A.term)},
        {"text": A.text, "aspect": A.term, "start": True, "end": at + len(A.term)},
        {"text": A.text, "aspect": A.term, "start": at, "end": at + len(A.term)},
    ]
    src = _write(tmp_path / "in.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    dst = tmp_path / "out.jsonl"
    assert _score(artifact, src, dst) == 1
    got = [json.loads(x) for x in dst.read_text().splitlines()]
    assert "start/end must be integers" in got[0]["error"]
    assert "start/end must be integers" in got[1]["error"]
    assert got[2]["pred_label"] == A.label


def _counting_predictor(artifact: Path) -> tuple[object, list[int]]:
    """A predictor that records how many rows each ``predict_many`` call scored."""
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    calls: list[int] = []
    real = predictor.predict_many
    predictor.predict_many = lambda items: calls.append(len(items)) or real(items)  # type: ignore[method-assign]
    return predictor, calls


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_output_that_is_a_directory_is_refused_before_scoring(
    artifact: Path, tmp_path: Path, suffix: str
) -> None:
    """It used to score the whole input, then fail moving ``OUT.part`` onto the directory
    ([Errno 21] naming the .part) and leave the .part behind."""
    from absa.scoring import score_file

    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    src = _write(tmp_path / "in.jsonl", json.dumps({"text": A.text, "aspect": A.term}) + "\n")
    dst = tmp_path / f"out{suffix}"
    dst.mkdir()
    predictor, calls = _counting_predictor(artifact)
    with pytest.raises(ValueError, match=f"^{dst}: is a directory") as e:
        score_file(predictor, src, dst, progress=False)  # type: ignore[arg-type]
    assert ".part" not in str(e.value) and calls == []  # nothing was scored
    assert set(tmp_path.iterdir()) == {src, dst} and list(dst.iterdir()) == []  # no .part


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_an_output_in_a_directory_that_does_not_exist_names_the_users_path(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, suffix: str
) -> None:
    """The error named ``OUT.part`` (and on Parquet came only after scoring)."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    src = _write(tmp_path / "in.jsonl", json.dumps({"text": A.text, "aspect": A.term}) + "\n")
    dst = tmp_path / "nowhere" / f"out{suffix}"
    assert _score(artifact, src, dst) == 2
    err = capsys.readouterr().err
    assert f"{dst}: no such directory {dst.parent}" in err and ".part" not in err


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_missing_input_is_no_such_file(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture, suffix: str
) -> None:
    """As the other commands say it, not ``[Errno 2] No such file or directory: ...``."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    src = tmp_path / "missing.jsonl"
    assert _score(artifact, src, tmp_path / f"out{suffix}") == 2
    err = capsys.readouterr().err
    assert f"absa predict: error: {src}: no such file\n" in err and "Errno" not in err
    assert list(tmp_path.iterdir()) == []


def test_no_part_file_is_left_when_the_output_cannot_be_moved_into_place(
    artifact: Path, tmp_path: Path
) -> None:
    """The final move was outside the clean-up: an output path that became a directory
    while the file was scored failed the move and left ``OUT.part``."""
    from absa.scoring import score_file

    src = _write(tmp_path / "in.jsonl", json.dumps({"text": A.text, "aspect": A.term}) + "\n")
    dst = tmp_path / "out.jsonl"
    predictor, calls = _counting_predictor(artifact)
    real = predictor.predict_many  # type: ignore[attr-defined]

    def while_scoring(items: list) -> list:
        dst.mkdir(exist_ok=True)  # someone else takes the name meanwhile
        return real(items)

    predictor.predict_many = while_scoring  # type: ignore[attr-defined]
    with pytest.raises(IsADirectoryError):
        score_file(predictor, src, dst, progress=False)  # type: ignore[arg-type]
    assert calls == [1] and not list(tmp_path.glob("*.part"))


def test_a_jsonl_line_that_cannot_be_read_says_its_line(artifact: Path, tmp_path: Path) -> None:
    """Its output row was ``{"error": ...}`` alone: nothing to find the input line by (blank
    lines are skipped, so counting output rows does not say it either)."""
    good = json.dumps({"text": A.text, "aspect": A.term, "id": 1})
    src = _write(tmp_path / "in.jsonl", f"{good}\n\nnot json\n[1, 2]\n{good}\n")
    dst = tmp_path / "out.jsonl"
    assert _score(artifact, src, dst) == 1
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    assert rows[1] == {"error": "invalid JSON: Expecting value", "line": 3}
    assert rows[2] == {"error": "a row must be a JSON object", "line": 4}
    assert "line" not in rows[0] and "line" not in rows[3]  # rows that were read: as before
    # CSV columns come from the header: no column of its own there
    assert _score(artifact, _write(tmp_path / "x.jsonl", "not json\n"), tmp_path / "x.csv") == 1
    assert (tmp_path / "x.csv").read_text().splitlines()[0].split(",")[-1] == "error"


def test_a_csv_row_after_blank_lines_is_logged_with_its_own_line(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The row was named by the blank line before it (line 4, the row is on line 5)."""
    src = _write(
        tmp_path / "in.csv",
        f'text,aspect\n"{A.text}\nsecond line",{A.term}\n\n{A.text},pizza\n',
    )
    with caplog.at_level("WARNING"):
        assert _score(artifact, src, tmp_path / "out.jsonl") == 1
    assert f"{src}:5: aspect 'pizza' does not occur" in caplog.text


def test_a_json_array_is_refused_before_scoring(artifact: Path, tmp_path: Path) -> None:
    """An indented JSON array in a .json file was read as JSONL: every line a bad row."""
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.scoring import score_file

    src = tmp_path / "rows.json"
    src.write_text(json.dumps([{"text": "the food", "aspect": "food"}], indent=2))
    predictor = Predictor(Runtime.load(artifact, device="cpu"))
    with pytest.raises(ValueError, match="a JSON array; write one JSON object per line"):
        score_file(predictor, src, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


# ------------------------------------------------- file scoring review: bad cells, bad files


def _shipped(src: Path, dst: Path) -> int:
    """``absa predict`` on a file with the shipped model (no --model)."""
    return main(["predict", "--input", str(src), "--output", str(dst), "--quiet"])


def _strict_json(line: str) -> dict:
    """A JSONL output line as a strict JSON reader reads it (no NaN, no Infinity)."""

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def test_an_offset_that_only_looks_like_digits_is_a_bad_row(tmp_path: Path) -> None:
    """``"--4".lstrip("-")`` and ``"²"`` pass ``isdigit()``, ``int()`` then raised and the
    whole file stopped without naming it (so did 5,000 digits, past int()'s limit)."""
    src = _write(
        tmp_path / "in.csv",
        "id,text,aspect,start,end\n"
        "1,The pizza,pizza,--4,9\n"
        "2,The pizza,pizza,²,9\n"
        f"3,The pizza,pizza,{'1' * 5000},9\n"
        "4,The pizza,pizza, 4 ,9\n",
    )
    dst = tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 1  # the run finished; some rows were bad
    rows = read_jsonl(dst)
    assert [r["id"] for r in rows] == ["1", "2", "3", "4"]
    for r in rows[:3]:
        assert r["error"].startswith("start/end must be integers") and "pred_label" not in r
    assert (rows[3]["pred_start"], rows[3]["pred_end"]) == (4, 9)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_csv_field_over_the_csv_modules_default_limit_is_read(
    tmp_path: Path, suffix: str
) -> None:
    """A text over 131,072 characters stopped the file with a raw ``_csv.Error``; it is read
    now and scored as the Parquet path scores it, the text written back whole."""
    long_text = "The pizza was good. " * 8000  # 160,000 characters
    src = _write(tmp_path / "in.csv", f'id,text,aspect\n1,"{long_text}",pizza\n2,The pizza,pizza\n')
    dst = tmp_path / f"out{suffix}"
    assert _shipped(src, dst) == 0
    if suffix == ".csv":
        with dst.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    else:
        rows = read_jsonl(dst)
    assert rows[0]["text"] == long_text and rows[0]["pred_label"]
    pq = pytest.importorskip("pyarrow.parquet")
    assert _shipped(src, tmp_path / "out.parquet") == 0
    as_parquet = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [r["pred_label"] for r in rows] == [r["pred_label"] for r in as_parquet]


def test_a_csv_the_csv_module_cannot_read_is_one_line_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any ``csv.Error`` came out as a traceback; it is one line naming the file and line."""
    from absa.model import csvio

    src = _write(tmp_path / "in.csv", f"text,aspect\nThe pizza,pizza\n{'x' * 300},pizza\n")
    monkeypatch.setattr(csvio, "CSV_FIELD_LIMIT", 100)
    before = csv.field_size_limit(50)
    try:
        assert _shipped(src, tmp_path / "out.jsonl") == 2
    finally:
        csv.field_size_limit(before)
    err = capsys.readouterr().err
    assert f"absa predict: error: {src}:3: field larger than field limit (100)" in err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_lone_surrogate_is_a_bad_row_and_the_output_is_written(
    tmp_path: Path, suffix: str
) -> None:
    """A JSON escape such as ``"\\ud800"`` was scored, then writing the output raised
    UnicodeEncodeError and the whole run was lost."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    src = _write(
        tmp_path / "in.jsonl",
        '{"id": "1", "text": "The pizza \\ud800 was good", "aspect": "pizza"}\n'
        '{"id": "2", "text": "The pizza was good", "aspect": "pi\\udfffzza"}\n'
        '{"id": "3\\ud800", "text": "The pizza was good", "aspect": "pizza"}\n'
        '{"id": "4", "text": "The pizza was good", "aspect": "pizza"}\n',
    )
    dst = tmp_path / f"out{suffix}"
    assert _shipped(src, dst) == 1
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(dst).to_pylist()
    elif suffix == ".csv":
        with dst.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    else:
        rows = read_jsonl(dst)
    assert rows[0]["error"] == "the text holds a lone surrogate (U+D800 at 10): not valid Unicode"
    assert rows[1]["error"] == "the aspect holds a lone surrogate (U+DFFF at 2): not valid Unicode"
    assert rows[2]["error"].startswith("field 'id' holds a lone surrogate (U+D800 at 1)")
    assert rows[0]["text"] == "The pizza \ufffd was good"  # written as UTF-8 can hold it
    assert rows[3]["pred_label"] and not rows[3].get("error")


def test_a_field_name_utf8_cannot_hold_does_not_stop_jsonl_written_as_csv(
    tmp_path: Path,
) -> None:
    """The CSV header took the names as read, and writing it raised UnicodeEncodeError (a
    lone surrogate, or a byte that is not UTF-8, in a field name): the run was lost."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        b'{"text": "The pizza", "aspect": "pizza", "a\\ud800": 1}\n'
        b'{"text": "The pizza", "aspect": "pizza", "b\xff": 2}\n'
        b'{"text": "The pizza", "aspect": "pizza"}\n'
    )
    dst = tmp_path / "out.csv"
    assert _shipped(src, dst) == 1
    with dst.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert (rows[0]["a\ufffd"], rows[1]["b\ufffd"]) == ("1", "2")
    assert "lone surrogate" in rows[0]["error"] and "not valid UTF-8" in rows[1]["error"]
    assert rows[2]["pred_label"] and not rows[2]["error"]


def test_prepare_row_refuses_a_lone_surrogate_as_the_api_does() -> None:
    """Rows that reach ``prepare_row`` unchecked (a table scored from Python) are refused as
    ``Predictor`` refuses such a text, not encoded."""
    from absa import load
    from absa.scoring import try_prepare

    predictor = load().predictor
    prep, err = try_prepare(predictor, {"text": "The pizza \ud800", "aspect": "pizza"})
    assert prep is None and err.startswith("the text holds a lone surrogate (U+D800 at 10)")
    prep, err = try_prepare(predictor, {"text": "The pizza", "aspect": "\udc00"})
    assert prep is None and err.startswith("the aspect holds a lone surrogate")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_csv_column_named_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, suffix: str
) -> None:
    """``text,aspect,text`` scored the second text and dropped the first from the output."""
    src = _write(tmp_path / "in.csv", "text,aspect,text\nThe pizza was good,pizza,The burger\n")
    assert _shipped(src, tmp_path / f"out{suffix}") == 2
    err = capsys.readouterr().err
    assert f"absa predict: error: {src}:1: column 'text' appears twice\n" in err
    assert list(tmp_path.iterdir()) == [src]
    # empty cells after the last column, as a spreadsheet's export leaves them: said so
    src.write_text("text,aspect,,\nThe pizza was good,pizza,,\n", encoding="utf-8")
    assert _shipped(src, tmp_path / f"out{suffix}") == 2
    err = capsys.readouterr().err
    assert f"{src}:1: more than one column has no name (empty header cells" in err
    assert "appears twice" not in err


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_csv_header_is_read_as_the_training_readers_read_it(
    artifact: Path, tmp_path: Path, suffix: str
) -> None:
    """``Text, Aspect ,Start,end`` (a spreadsheet's, or spaces after the commas) trains, but
    scoring said the header "must name the columns text and aspect". The columns are read
    by their names stripped and in lower case; the output keeps the input's names as given."""
    header = "id,Text, Aspect ,Start,end"
    src = _write(tmp_path / "in.csv", f'{header}\n1,"{A.text}",{A.term},{A.start},{A.end}\n')
    dst = tmp_path / f"out{suffix}"
    assert _score(artifact, src, dst) == 0
    if suffix == ".csv":
        with dst.open(newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
        assert reader.fieldnames is not None
        assert reader.fieldnames[:5] == header.split(",")
    else:
        rows = [json.loads(x) for x in dst.read_text().splitlines()]
        assert list(rows[0])[:5] == header.split(",")
    assert rows[0]["pred_label"] == A.label and not rows[0].get("error")
    assert (int(rows[0]["pred_start"]), int(rows[0]["pred_end"])) == (A.start, A.end)


def test_two_columns_read_as_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Without a column named "text", "Text" and " text" could each be it; with one, it is
    the text (the others are carried through, as any column is)."""
    src = _write(tmp_path / "in.csv", "Text,aspect, text\nThe pizza was good,pizza,The burger\n")
    assert _shipped(src, tmp_path / "out.csv") == 2
    err = capsys.readouterr().err
    assert f"absa predict: error: {src}:1: columns 'Text' and ' text' are both read as text" in err
    assert list(tmp_path.iterdir()) == [src]


def test_nan_in_jsonl_input_is_no_pin_and_null_in_the_output(tmp_path: Path) -> None:
    """Python's JSON reader takes NaN: it was written back bare (the output line was no
    longer JSON), and a NaN start failed the row instead of meaning "not pinned"."""
    src = _write(
        tmp_path / "in.jsonl",
        '{"id": 1, "text": "The pizza", "aspect": "pizza", "start": NaN, "end": null}\n'
        '{"id": 2, "text": "The pizza", "aspect": "pizza", "start": 4.0, "end": 9.0,'
        ' "w": [Infinity, 1.5]}\n'
        '{"id": 3, "text": "The pizza", "aspect": "pizza", "start": 4.5, "end": 9}\n',
    )
    dst = tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 1
    rows = [_strict_json(x) for x in dst.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["start"] is None and (rows[0]["pred_start"], rows[0]["pred_end"]) == (4, 9)
    assert (rows[1]["pred_start"], rows[1]["pred_end"]) == (4, 9) and rows[1]["w"] == [None, 1.5]
    assert rows[2]["error"] == "start/end must be integers, got 4.5/9"  # not cut to 4


def test_jsonl_values_written_as_csv_are_json_not_python(tmp_path: Path) -> None:
    """A list came out as ``['pizza']``, true as ``True``, NaN as ``nan``."""
    src = _write(
        tmp_path / "in.jsonl",
        '{"text": "The pizza", "aspect": "pizza", "tags": ["pizza", "é"], "ok": true,'
        ' "meta": {"k": 1}, "n": 3, "x": 4.5, "gone": NaN, "none": null, "s": "as is"}\n',
    )
    dst = tmp_path / "out.csv"
    assert _shipped(src, dst) == 0
    with dst.open(newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["tags"] == '["pizza", "é"]' and json.loads(row["tags"]) == ["pizza", "é"]
    assert (row["ok"], row["meta"], row["n"], row["x"]) == ("true", '{"k": 1}', "3", "4.5")
    assert (row["gone"], row["none"], row["s"]) == ("", "", "as is")
    assert row["pred_label"]


def test_a_text_or_aspect_of_another_type_says_which_type(tmp_path: Path) -> None:
    """A number or a list was reported as "missing or empty"."""
    src = _write(
        tmp_path / "in.jsonl",
        '{"text": 123, "aspect": "1"}\n'
        '{"text": "The pizza", "aspect": ["pizza"]}\n'
        '{"text": null, "aspect": "pizza"}\n'
        '{"text": "The pizza", "aspect": " "}\n',
    )
    dst = tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 1
    errors = [json.loads(x)["error"] for x in dst.read_text(encoding="utf-8").splitlines()]
    assert errors == [
        "text must be a string, not int",
        "aspect must be a string, not list",
        "text is missing or empty",
        "aspect is missing or empty",
    ]


@pytest.mark.parametrize("output", ["out.jsonl", "out.csv"])
def test_a_carriage_return_alone_does_not_split_a_jsonl_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, output: str
) -> None:
    """JSONL lines end at ``\\n``: a lone ``\\r`` (JSON whitespace between two fields, or
    a raw one in a string) split one input line into two bad output rows, lost the row
    and put every later line number off by one (the Parquet path splits on ``\\n``)."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        b'{"text": "The pizza was great",\r"aspect": "pizza", "id": 1}\n'
        b'{"text": "The pizza\rwas great", "aspect": "pizza", "id": 2}\r\n'
        b"not json\n"
        b'{"text": "The pizza was great", "aspect": "pizza", "id": 4}'
    )
    dst = tmp_path / output
    with caplog.at_level("WARNING"):
        assert _shipped(src, dst) == 1
    if output.endswith(".csv"):
        with dst.open(newline="", encoding="utf-8") as f:
            rows: list[dict] = list(csv.DictReader(f))
    else:
        rows = read_jsonl(dst)
    assert len(rows) == 4  # one output row per input line
    assert str(rows[0]["id"]) == "1" and rows[0]["pred_label"]
    assert "invalid JSON" in rows[1]["error"] and "invalid JSON" in rows[2]["error"]
    assert str(rows[3]["id"]) == "4" and rows[3]["pred_label"]
    assert [m.split(": ")[0] for m in caplog.messages if "invalid JSON" in m] == [
        f"{src}:2",
        f"{src}:3",
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_two_runs_onto_one_output_do_not_mix(tmp_path: Path, suffix: str) -> None:
    """Both wrote ``OUT.part``: the second run truncated the first one's file and both wrote
    into it, then the first moved it into place while the second still wrote there (and
    failed its own move): the output under the final name held rows of both. Each run now
    writes a ``.part`` of its own; the last to finish leaves its whole output."""
    from absa import load
    from absa.scoring import score_file

    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    row = {"text": "The pizza was great", "aspect": "pizza"}
    first = _write(tmp_path / "first.jsonl", json.dumps({"id": "a", **row}) + "\n")
    second = _write(
        tmp_path / "second.jsonl",
        "".join(json.dumps({"id": f"b{i}", **row}) + "\n" for i in (1, 2, 3)),
    )
    dst = tmp_path / f"out{suffix}"
    predictor = load().predictor
    real = predictor.predict_many
    others: list[object] = []

    def while_scoring(items: list) -> list:
        if not others:  # another run onto the same output, begun and finished meanwhile
            others.append(None)
            others[0] = score_file(predictor, second, dst, progress=False)
        return real(items)

    predictor.predict_many = while_scoring  # type: ignore[method-assign]
    stats = score_file(predictor, first, dst, progress=False)
    assert stats.rows == stats.scored == 1 and others[0].scored == 3  # type: ignore[attr-defined]
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        ids = pq.read_table(dst).column("id").to_pylist()
    elif suffix == ".csv":
        with dst.open(newline="", encoding="utf-8") as f:
            ids = [r["id"] for r in csv.DictReader(f)]
    else:
        ids = [json.loads(x)["id"] for x in dst.read_text(encoding="utf-8").splitlines()]
    assert ids == ["a"]  # the run that finished last, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["first.jsonl", "second.jsonl", dst.name]
    )  # no .part of either run is left


# ------------------------------------------------- file scoring review: long names, full disks

#: output names a file system takes (NAME_MAX 255 bytes), though not with ``.<random>.part``
#: after them: 250 ASCII characters, and two-byte and three-byte characters near the limit
LONG_NAMES = {
    "ascii-jsonl": "o" * 244 + ".jsonl",
    "ascii-csv": "o" * 246 + ".csv",
    "two-byte-jsonl": "é" * 124 + ".jsonl",
    "three-byte-csv": "€" * 83 + ".csv",
}


@pytest.mark.parametrize("name", LONG_NAMES.values(), ids=LONG_NAMES.keys())
def test_a_part_file_fits_the_name_limit(tmp_path: Path, name: str) -> None:
    """``OUT.<random>.part`` was 18 bytes over the output's name: one of 238 bytes or more,
    a valid name, could not be written. The kept part of the name is cut to fit, at a
    character boundary; it is still this run's own, beside the output and named after it."""
    from absa.scoring_paths import part_path

    dst = tmp_path / name
    assert len(os.fsencode(name)) <= 255  # the output's name is valid
    parts = [part_path(dst) for _ in range(3)]
    assert len(set(parts)) == 3  # each run its own
    for part in parts:
        assert part.parent == tmp_path and part.name.endswith(".part")
        assert len(os.fsencode(part.name)) <= 255
        part.name.encode("utf-8")  # no character cut in half (a lone surrogate fails here)
        assert part.name.startswith(name[:60])  # recognisably the output's
    short = part_path(tmp_path / "out.jsonl").name  # a name that fits keeps all of it
    assert short.startswith("out.jsonl.") and len(short) == len("out.jsonl.") + 12 + 5


@pytest.mark.parametrize("name", LONG_NAMES.values(), ids=LONG_NAMES.keys())
def test_an_output_named_near_the_name_limit_is_written(tmp_path: Path, name: str) -> None:
    """It failed before a row was scored: "cannot write OUT: File name too long"."""
    from absa import load
    from absa.scoring import score_file

    src = _write(tmp_path / "in.jsonl", json.dumps({"text": "The pizza", "aspect": "pizza"}) + "\n")
    dst = tmp_path / name
    predictor = load().predictor
    real = predictor.predict_many
    seen: list[str] = []

    def while_scoring(items: list) -> list:
        seen.extend(p.name for p in tmp_path.iterdir() if p.name.endswith(".part"))
        return real(items)

    predictor.predict_many = while_scoring  # type: ignore[method-assign]
    stats = score_file(predictor, src, dst, progress=False)
    assert stats.rows == stats.scored == 1
    assert len(seen) == 1 and seen[0].startswith(name[:60])  # its .part, named after it
    assert sorted(tmp_path.iterdir()) == sorted([src, dst])  # under its full name, no .part
    text = dst.read_text(encoding="utf-8")
    if name.endswith(".csv"):
        assert text.startswith("text,aspect,pred_label") and ",pizza," in text
    else:
        assert json.loads(text)["pred_label"]


class _OverQuota(io.TextIOWrapper):
    """A text file whose every write fails as when the user's disk quota is used up."""

    def write(self, s: str) -> int:
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))


@pytest.mark.parametrize(
    ("output", "cause"),
    [("out.jsonl", "ENOSPC"), ("out.csv", "ENOSPC"), ("out.jsonl", "EDQUOT")],
)
def test_a_full_disk_names_the_output_and_leaves_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    output: str,
    cause: str,
) -> None:
    """A disk that filled while the output was written said only "[Errno 28] No space left
    on device": no file named, nor that the disk is full. ENOSPC: each .part is a link to
    /dev/full (the kernel's own error); EDQUOT: the .part's writes fail with it."""
    src = _write(tmp_path / "in.jsonl", json.dumps({"text": "The pizza", "aspect": "pizza"}) + "\n")
    dst = tmp_path / output
    if cause == "ENOSPC":
        parts_on_a_full_disk(monkeypatch)
    else:
        opened = Path.open

        def over_quota(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
            if self.name.endswith(".part") and "w" in mode:
                return _OverQuota(opened(self, "wb"), encoding="utf-8", newline="")
            return opened(self, mode, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Path, "open", over_quota)
    assert _shipped(src, dst) == 2
    err = capsys.readouterr().err
    assert f"cannot write {dst}: {NO_ROOM[cause]}" in err and ".part" not in err, err
    assert os.strerror(getattr(errno, cause)) in err  # the system's own words too
    assert sorted(tmp_path.iterdir()) == [src]  # no .part, no partial output
    if cause == "ENOSPC":
        assert Path("/dev/full").is_char_device()  # the link was removed, not what it named


def test_json_offsets_that_are_not_numbers_are_shown_as_json_writes_them(tmp_path: Path) -> None:
    """The error spelt a JSON ``true`` and ``null`` as Python's ``True`` and ``None``."""
    src = _write(
        tmp_path / "in.jsonl",
        '{"text": "The pizza", "aspect": "pizza", "start": true, "end": 9}\n'
        '{"text": "The pizza", "aspect": "pizza", "start": 4, "end": null}\n'
        '{"text": "The pizza", "aspect": "pizza", "start": false, "end": "9"}\n',
    )
    dst = tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 1
    rows = read_jsonl(dst)
    assert [r["error"] for r in rows] == [
        "start/end must be integers, got true/9",
        "start/end must be integers, got 4/null",
        "start/end must be integers, got false/'9'",
    ]


@pytest.mark.parametrize("out", ["out.jsonl", "out.csv", "out.parquet"])
def test_a_jsonl_row_with_a_field_named_like_an_output_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, out: str
) -> None:
    """Into JSONL or CSV such a row got its error and kept the input's ``pred_label`` and
    ``pred_score``, which read as absa's prediction; the file is refused, naming the
    line, as into Parquet, and nothing is written."""
    src = _write(
        tmp_path / "in.jsonl",
        '{"text": "nice food", "aspect": "food"}\n'
        '{"text": "nice food", "aspect": "food", "pred_label": "positive", "pred_score": 0.99}\n',
    )
    assert _shipped(src, tmp_path / out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"absa predict: error: {src}")
    assert err.endswith("'pred_label' is one the output adds; rename it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_csv_offsets_as_pandas_writes_them_pin(tmp_path: Path) -> None:
    """pandas writes an integer column with gaps as floats, ``17.0`` and an empty cell: the
    same frame pinned its spans as JSONL or Parquet and failed every pinned row as CSV
    ("start/end must be integers, got '17.0'/'21.0'"). A fraction is still no offset."""
    src = _write(
        tmp_path / "in.csv",
        "id,text,aspect,start,end\n"
        "1,The pizza and the pizza,pizza,,\n"
        "2,The pizza and the pizza,pizza,18.0,23.0\n"
        "3,The pizza and the pizza,pizza,-0.00,\n"
        "4,The pizza and the pizza,pizza,4.5,9.0\n",
    )
    dst = tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 1
    rows = read_jsonl(dst)
    assert (rows[0]["pred_start"], rows[0]["pred_occurrence"]) == (4, 1)
    assert (rows[1]["pred_start"], rows[1]["pred_end"], rows[1]["pred_occurrence"]) == (18, 23, 2)
    assert rows[2]["error"] == "start/end must be integers, got '-0.00'/''"
    assert rows[3]["error"] == "start/end must be integers, got '4.5'/'9.0'"


@pytest.mark.parametrize(
    ("line_4", "ids", "fields", "ends"),
    [
        ("4,The pizza,pizza\n", ["1"], 2, 6),  # never closed: the rest of the file
        ('4,The pizza",pizza,extra\n', ["1", "5"], 4, 5),  # closed by a later quote
    ],
    ids=["never-closed", "closed-later"],
)
def test_a_quote_left_open_in_a_csv_says_where_its_row_ends(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    line_4: str,
    ids: list[str],
    fields: int,
    ends: int,
) -> None:
    """A quote not closed takes the lines after it into one field: the rest of the file was
    one bad row, "the row has 2 fields; the header names 3", that did not say why the run
    counted 1 row of 5, nor where the row ended. Closed by a quote some lines on, the row had
    too many fields, and the error said only that: the good rows it took went without a
    word."""
    src = _write(
        tmp_path / "in.csv",
        'id,text,aspect\n1,"The pizza,pizza\n2,The pizza,pizza\n3,The pizza,pizza\n'
        f"{line_4}5,The pizza,pizza\n",
    )
    dst = tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 1
    rows = read_jsonl(dst)
    want = (
        f"the row has {fields} fields; the header names 3 (it runs from line 2 to line {ends}: "
        "a quote not closed?)"
    )
    assert [r["id"] for r in rows] == ids and rows[0]["error"] == want
    assert f"{src}:2: {want}" in caplog.text


@pytest.mark.parametrize("out", ["out.jsonl", "out.parquet"])
def test_a_row_a_quote_took_into_a_field_of_the_right_width_is_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, out: str
) -> None:
    """A quote left open and closed by a quote that ends a field made one record of the
    header's width: the row in between was scored as part of a text, gone without a word.
    A text over two lines whose lines are no rows (commas and all) is scored as it is."""
    src = _write(
        tmp_path / "in.csv",
        'text,aspect\n"The pizza was great,pizza\nThe wine",wine\n'
        '"The pizza, the wine, and the view\nwere fine",view\n',
    )
    dst = tmp_path / out
    assert _shipped(src, dst) == 1
    swallowed, paragraphs = read_jsonl(dst) if out.endswith("jsonl") else _parquet_rows(dst)
    where = "line 2" if out.endswith("jsonl") else "line 1 of the row"
    said = f"{where} reads as a row of its own, inside a field: a quote not closed?"
    assert swallowed["error"].startswith(said) and swallowed.get("pred_label") is None
    assert f"{src}:2: {said}" in caplog.text
    assert paragraphs.get("error") is None and paragraphs["pred_label"] is not None


def _parquet_rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_a_utf16_jsonl_is_refused_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture, encoding: str
) -> None:
    """A JSONL file written as UTF-16 (PowerShell's ``>``) was read as UTF-8: every line a
    bad row ("not valid UTF-8", "invalid JSON"), one more row than it has, and exit 1,
    where a CSV in UTF-16 is refused. It is refused too, naming the file, before a row is
    scored."""
    rows = [{"text": "The pizza was good", "aspect": "pizza"}] * 2
    src = tmp_path / "in.jsonl"
    src.write_bytes(("\ufeff" + "".join(json.dumps(r) + "\n" for r in rows)).encode(encoding))
    for out in ("out.jsonl", "out.parquet"):
        assert _shipped(src, tmp_path / out) == 2
        err = capsys.readouterr().err
        said = "UTF-16 or UTF-32 text (its byte-order mark says so); write it as UTF-8"
        assert f"error: {src}: {said}" in err
        assert not (tmp_path / out).exists()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_file_of_bad_rows_is_logged_and_kept_in_part(
    artifact: Path,
    tmp_path: Path,
    suffix: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture,
) -> None:
    """Every row of a file with the wrong field name is bad: each was a log line and an
    entry kept in memory, for ever more rows ("constant memory" held for scored rows only).
    The first ones are logged, the first KEPT_BAD kept; the count and the output's error
    column say the rest."""
    from absa.scoring import KEPT_BAD, LOGGED_BAD

    n = KEPT_BAD + 500
    rows = [{"review": f"the food was great {i}", "aspect": "food"} for i in range(n)]
    src = tmp_path / f"in{suffix}"
    if suffix == ".jsonl":
        _write(src, "".join(json.dumps(r) + "\n" for r in rows))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist([{"text": None, **r} for r in rows]), src)
    out = tmp_path / f"out{suffix}"
    with caplog.at_level("WARNING"):
        code = main(
            [
                "predict",
                "--model",
                str(artifact),
                "--input",
                str(src),
                "--output",
                str(out),
                "--quiet",
            ]
        )
    assert code == 1
    assert f"{n} rows: 0 scored, {n} bad" in capsys.readouterr().out
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == LOGGED_BAD + 1
    assert "further bad rows are not logged one by one" in warned[-1]
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.scoring import score_file

    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    stats = score_file(predictor, src, tmp_path / f"again{suffix}", progress=False)
    assert (stats.rows, stats.scored, len(stats.bad)) == (n, 0, KEPT_BAD)
    assert [at for at, _ in stats.bad[:3]] == [1, 2, 3]  # the first ones, by line or row


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_the_output_is_on_disk_before_it_is_renamed_into_place(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """The .part was renamed without an fsync: after a power cut the output could be there,
    empty or short, where the run had said it was whole. Now the file's data are synced
    before the rename, and the directory (the rename) after it."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    src = _write(tmp_path / "in.jsonl", json.dumps({"text": B.text, "aspect": B.term}) + "\n")
    dst = tmp_path / "out" / f"scored{suffix}"
    dst.parent.mkdir()
    synced: list[tuple[str, bool]] = []  # (what the descriptor is, the output there yet)
    real = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced.append((path, dst.exists()))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 0
    part = [(p, there) for p, there in synced if p.endswith(".part")]
    assert part and not any(there for _, there in part)  # the whole .part, before the rename
    assert synced[-1] == (str(dst.parent), True)  # then the rename itself


@pytest.mark.parametrize("code", ["EINVAL", "EIO"])
def test_a_directory_that_cannot_be_synced_does_not_fail_a_run_already_in_place(
    artifact: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    code: str,
) -> None:
    """Some file systems (FUSE, network mounts) refuse fsync on a directory (EINVAL), and a
    failing disk may answer EIO. It comes after the rename: the run said it failed (exit 2)
    where the old output was already replaced, against "a run that fails leaves it as it
    was". Now EINVAL is a file system that does not sync directories, EIO a warning."""
    import errno

    src = _write(tmp_path / "in.jsonl", json.dumps({"text": B.text, "aspect": B.term}) + "\n")
    dst = tmp_path / "out" / "scored.jsonl"
    dst.parent.mkdir()
    dst.write_text("OLD OUTPUT\n")
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 0
    assert json.loads(dst.read_text())["pred_label"]  # the new output, whole
    warned = f"{dst}: written, but its directory could not be synced" in caplog.text
    assert warned == (code == "EIO")


def test_a_named_pipe_as_input_is_refused_not_waited_on(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The input is opened more than once (its first bytes are looked at first): a named
    pipe's first look took the writer's data, and the run then waited for ever."""
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    argv = ["predict", "--model", str(artifact), "--input", str(fifo)]
    assert main([*argv, "--output", str(tmp_path / "out.jsonl"), "--quiet"]) == 2
    assert f"{fifo}: not a regular file" in capsys.readouterr().err


def test_a_term_field_is_named_where_the_aspect_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Training and ``absa evaluate`` read a row's aspect from ``term`` too; scoring reads
    ``aspect`` alone and said only that it was missing, every row of such a file."""
    src = _write(tmp_path / "in.jsonl", '{"text": "The food was good", "term": "food"}\n')
    assert _shipped(src, tmp_path / "out.jsonl") == 1
    (row,) = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert (
        "aspect is missing or empty; the row has 'term': name that field 'aspect'" in (row["error"])
    )
    src = _write(tmp_path / "in.csv", "text,Term\nThe food was good,food\n")
    assert _shipped(src, tmp_path / "out.csv") == 2
    err = capsys.readouterr().err
    assert "must name the columns text and aspect; it has 'Term': name that column 'aspect'" in err
    src = _write(tmp_path / "in.csv", "text;aspect\nThe food was good;food\n")  # a locale's CSV
    assert _shipped(src, tmp_path / "out.csv") == 2
    err = capsys.readouterr().err
    assert "the header is one column, 'text;aspect', split by semicolons: separate" in err


def test_rows_without_an_aspect_are_told_of_the_extractor(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A file of texts alone got "aspect is missing or empty" on every row (and a CSV's
    header refused), ABSA_EXTRACTOR set or not: files are scored by the aspects they name,
    or, given --extractor, by the aspects it finds (tests/test_scoring_extracted.py)."""
    src = _write(tmp_path / "in.jsonl", '{"text": "The food was good"}\n')
    assert _shipped(src, tmp_path / "out.jsonl") == 1
    (row,) = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert row["error"].startswith("aspect is missing or empty (a file's rows name their aspects")
    src = _write(tmp_path / "in.csv", "text\nThe food was good\n")
    assert _shipped(src, tmp_path / "out.csv") == 2
    assert "give absa predict --extractor DIR|shipped" in capsys.readouterr().err
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["The food was good"]}), tmp_path / "in.parquet")
    assert _shipped(tmp_path / "in.parquet", tmp_path / "out.parquet") == 2
    assert "give absa predict --extractor DIR|shipped" in capsys.readouterr().err


def test_the_http_apis_names_are_named_where_a_field_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A row with the HTTP API's "aspects" (or "sentence" for the text) got "aspect is
    missing or empty" with no hint, as a CSV header or a Parquet file with them did: each
    names the field it has and the one scoring reads, as 'term' was named."""
    rows = [
        {"text": "The food was good", "aspects": ["food"]},
        {"sentence": "The food was good", "aspect": "food"},
        {"text": "The food was good", "aspect": "food", "aspects": ["food"]},
    ]
    src = _write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert _shipped(src, tmp_path / "out.jsonl") == 1
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert out[0]["error"] == (
        "aspect is missing or empty; the row has 'aspects': name that field 'aspect' "
        "(one aspect a row)"
    )
    assert out[1]["error"] == (
        "text is missing or empty; the row has 'sentence': name that field 'text'"
    )
    assert out[2]["pred_label"] == "positive"  # scored: the other name is only a hint
    pytest.importorskip("pyarrow")
    assert _shipped(src, tmp_path / "out.parquet") == 1  # a table's row: the same hints
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [r["error"] for r in table] == [r.get("error") for r in out]
    src = _write(tmp_path / "in.csv", "sentence,aspect\nThe food was good,food\n")
    assert _shipped(src, tmp_path / "out.csv") == 2
    err = capsys.readouterr().err
    assert "must name the columns text and aspect; it has 'sentence': name that column 'text'" in (
        err
    )
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"text": ["The food was good"], "term": ["food"]}), tmp_path / "t.parquet"
    )
    assert _shipped(tmp_path / "t.parquet", tmp_path / "out.parquet") == 2
    err = capsys.readouterr().err
    assert "no column 'aspect' (the input needs text and aspect); it has 'term': name that " in err


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_output_that_is_a_symlink_or_private_is_replaced_as_it_was_given(
    tmp_path: Path, suffix: str
) -> None:
    """The output replaced a symbolic link with a file of its own (the file it pointed to
    kept the old rows), and a private output (0600) came back readable by all (0644)."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    src = _write(tmp_path / "in.jsonl", '{"text": "The pizza was great", "aspect": "pizza"}\n')
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / f"out{suffix}"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    assert _shipped(src, link) == 0
    assert link.is_symlink() and target.read_bytes() != b"old"
    assert oct(target.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == [target.name]  # no .part


def test_an_output_that_is_a_named_pipe_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A named pipe as the output was replaced by a plain file (a reader waiting on it waited
    for ever); it is refused as one given as the input is."""
    src = _write(tmp_path / "in.jsonl", '{"text": "The pizza was great", "aspect": "pizza"}\n')
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    assert _shipped(src, fifo) == 2
    assert f"{fifo}: not a regular file (a named pipe or a device)" in capsys.readouterr().err
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_huge_start_value_is_not_echoed_whole(tmp_path: Path) -> None:
    """A 200,000-character "start" cell was quoted whole in the log line and the row's error
    (and up to 1,000 such errors kept in memory): now cut as terms and texts are."""
    src = tmp_path / "in.csv"
    src.write_text(f"text,aspect,start,end\nnice pizza,pizza,{'1' * 200_000},9\n", encoding="utf-8")
    assert _shipped(src, tmp_path / "out.jsonl") == 1
    (row,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert (
        row["error"].startswith("start/end must be integers, got '111") and len(row["error"]) < 200
    )


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("pretty.json", b'{\n  "text": "nice pizza",\n  "aspect": "pizza"\n}\n', "pretty-printed"),
        ("rows.jsonl", None, "compressed (gzip); decompress it first"),
        ("rows.csv", None, "compressed (gzip); decompress it first"),
    ],
)
def test_a_pretty_printed_or_compressed_input_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, name: str, data: bytes | None, says: str
) -> None:
    """A pretty-printed JSON object became a bad row per line, and a gzipped file a bad row
    per line of bytes, each run "finished" with exit 1 and an output of errors; a JSON array
    was refused in one line already."""
    import gzip

    src = tmp_path / name
    if data is None:
        plain = '{"text": "nice pizza", "aspect": "pizza"}\n'
        if name.endswith(".csv"):
            plain = "text,aspect\nnice pizza,pizza\n"
        data = gzip.compress(plain.encode())
    src.write_bytes(data)
    assert _shipped(src, tmp_path / "out.jsonl") == 2
    err = capsys.readouterr().err
    assert f"absa predict: error: {src}: " in err and says in err, err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(("name", "content"), [("in.jsonl", ""), ("in.jsonl", "\n\n")])
def test_an_input_without_rows_succeeds_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str
) -> None:
    """ "0 rows: 0 scored, 0 bad", exit 0 and nothing else: a wrong file or an export cut to
    nothing read the same as a day without reviews. It still succeeds, with a warning."""
    src, dst = _write(tmp_path / name, content), tmp_path / "out.jsonl"
    assert _shipped(src, dst) == 0
    assert dst.read_text() == ""
    err = capsys.readouterr().err
    assert f"absa predict: warning: {src} holds no rows to score\n" in err
    assert (
        _shipped(
            _write(tmp_path / "one.jsonl", '{"text": "The food was great", "aspect": "food"}\n'),
            dst.with_name("o.jsonl"),
        )
        == 0
    )
    assert "holds no rows" not in capsys.readouterr().err


@pytest.mark.parametrize("out_name", ["out.jsonl", "out.parquet"])
def test_a_signal_just_after_the_part_is_made_leaves_no_part(
    artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out_name: str
) -> None:
    """CI met it: SIGHUP right after `absa predict --input` made OUT.<random>.part, before
    the block that removes it on failure, exited 129 and left the .part. A signal is an
    exception raised between two statements: here, the moment the file exists."""
    src = _write(tmp_path / "in.jsonl", json.dumps({"text": A.text, "aspect": A.term}) + "\n")
    touch = Path.touch

    def touched_then_stopped(self: Path, *args: object, **kw: object) -> None:
        touch(self, *args, **kw)  # type: ignore[arg-type]
        if self.name.endswith(".part"):
            raise KeyboardInterrupt  # as the signal's handler raises, once the file is there

    monkeypatch.setattr(Path, "touch", touched_then_stopped)
    dst = tmp_path / out_name
    argv = ["predict", "--model", str(artifact), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no .part, no output
