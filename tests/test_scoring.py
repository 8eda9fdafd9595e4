"""`absa predict`: one text, and streaming file scoring (JSONL and CSV) with bad rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from absa.cli import main
from tests.helpers import ARTIFACT_EXAMPLES as EXAMPLES

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
    assert rows[0]["id"] == 1 and rows[0]["label"] == B.label
    assert set(rows[0]["scores"]) == {"negative", "neutral", "positive"}
    assert "invalid JSON" in rows[1]["error"]
    assert "does not occur" in rows[2]["error"] and rows[2]["id"] == 3
    assert rows[3]["id"] == 4 and rows[3]["label"] in ("negative", "neutral", "positive")
    assert "not the term 'pizza'" in rows[4]["error"]
    assert "text is missing or empty" in rows[5]["error"]
    assert "JSON object" in rows[6]["error"]
    assert not (tmp_path / "out.jsonl.part").exists()


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
    assert rows[0]["label"] == A.label and rows[0]["error"] == ""
    assert (
        abs(sum(float(rows[0][f"score_{k}"]) for k in ("negative", "neutral", "positive")) - 1)
        < 1e-4
    )
    assert rows[1]["label"] == "" and "does not occur" in rows[1]["error"]


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
    rt.forward = lambda items: calls.append(len(items)) or real_run(items)  # type: ignore[method-assign]
    stats = score_file(rt, src, tmp_path / "big.out.jsonl", chunk=256, progress=False)
    assert stats.rows == stats.scored == n and not stats.bad
    assert max(calls) <= 256 and sum(calls) == n  # never more than a chunk in memory
    out = (tmp_path / "big.out.jsonl").read_text().splitlines()
    assert [json.loads(line)["i"] for line in out] == list(range(n))
