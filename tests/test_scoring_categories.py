"""`absa predict --input` with an aspect-category model: rows of ``{text, category}`` scored
from JSONL, CSV and Parquet through the CLI, as rows of aspect terms are (tests/test_scoring.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from absa.cli import main
from tests.helpers import category_examples, read_rows, write_rows

LABELS = ("negative", "neutral", "positive")
#: columns only aspect terms get
SPAN_COLUMNS = {"pred_start", "pred_end", "pred_occurrence", "pred_occurrences"}


def _rows() -> list[dict[str, Any]]:
    """Good rows (a category in another case too), then bad ones, each with an ``id`` and a
    gold ``label`` that must come through."""
    good = [
        {"id": i, "text": e.text, "category": e.category, "label": e.label}
        for i, e in enumerate(category_examples()[:6])
    ]
    good[1]["category"] = good[1]["category"].upper()  # the model's own in any case
    bad = [
        {"id": 10, "text": good[0]["text"], "category": "drinks", "label": "positive"},
        {"id": 11, "text": good[0]["text"], "category": "", "label": "positive"},
        {"id": 12, "text": good[0]["text"], "aspect": "pizza", "label": "positive"},
        {"id": 13, "text": "", "category": "food", "label": "positive"},
    ]
    return good + bad


def _read(path: Path) -> list[dict[str, Any]]:
    """An output's rows, empty CSV cells as None, and the scores as ``pred_scores`` in
    every format (the Parquet path writes ``pred_score_<label>`` columns, into JSONL too)."""
    rows = read_rows(path)
    for r in rows:
        if f"pred_score_{LABELS[0]}" in r:
            found = {k: r.pop(f"pred_score_{k}") for k in LABELS}
            r["pred_scores"] = None if found[LABELS[0]] is None else found
    return rows


def _predict(model: Path, src: Path, dst: Path) -> int:
    return main(["predict", "--model", str(model), "--input", str(src), "--output", str(dst),
                 "--quiet"])  # fmt: skip


@pytest.mark.parametrize(
    ("fmt_in", "fmt_out"),
    [
        ("jsonl", "jsonl"),
        ("csv", "csv"),
        ("jsonl", "csv"),
        ("jsonl", "parquet"),
        ("csv", "parquet"),
        ("parquet", "jsonl"),
    ],
)
def test_category_rows_are_scored_from_a_file_as_the_python_api_scores_them(
    category_artifact: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fmt_in: str,
    fmt_out: str,
) -> None:
    """A category model's file was refused ("scores files with aspect-term models only"):
    its rows are scored with the probabilities absa.load(DIR).batch gives, every input field
    kept, a bad row its error (the run going on past it) and no span columns."""
    rows = _rows()
    src = write_rows(tmp_path / f"in.{fmt_in}", rows)
    dst = tmp_path / f"out.{fmt_out}"
    with caplog.at_level(logging.WARNING, logger="absa"):
        assert _predict(category_artifact, src, dst) == 1  # bad rows, the run finished
    got = _read(dst)
    assert len(got) == len(rows) and not list(tmp_path.glob("*.part"))
    assert [str(r["id"]) for r in got] == [str(r["id"]) for r in rows]
    assert [r["label"] for r in got] == [r["label"] for r in rows]  # a gold label kept
    assert [r["category"] for r in got[:6]] == [r["category"] for r in rows[:6]]
    assert not SPAN_COLUMNS & set(got[0]), got[0]

    import absa

    good = rows[:6]
    answers = absa.load(str(category_artifact)).batch(
        [{"text": r["text"], "categories": [r["category"]]} for r in good]
    )
    for row, (answer,) in zip(got[:6], answers, strict=True):
        assert not row.get("error"), row
        assert row["pred_label"] == answer.label
        assert {k: float(v) for k, v in row["pred_scores"].items()} == answer.scores
        assert float(row["pred_score"]) == answer.score

    errors = [r["error"] for r in got[6:]]
    assert all(r.get("pred_label") is None for r in got[6:])
    assert errors[0] == "unknown category 'drinks'; known: ambience, food, service"
    assert errors[1] == "category is missing or empty"
    if fmt_in == "csv":  # the header names a category: this row left its cell empty
        assert errors[2] == "category is missing or empty"
    else:  # a row without one, but with an aspect: told which field a category model reads
        assert errors[2].startswith("category is missing or empty; the row has 'aspect': ")
        assert "aspect-category model" in errors[2] and "'category'" in errors[2]
    assert errors[3] == "text is missing or empty"
    line = {"jsonl": 7, "csv": 8}.get(fmt_in)  # the header is line 1 of a CSV
    where = f"{src}: row 7" if line is None else f"{src}:{line}"
    assert f"{where}: unknown category 'drinks'" in caplog.text


def test_a_jsonl_line_that_is_no_category_row_is_a_bad_row(
    category_artifact: Path, tmp_path: Path
) -> None:
    """Invalid JSON, a text that is not a string, a category that is not one: each row gets
    its error, the rows around them their scores."""
    text = category_examples()[0].text
    src = tmp_path / "in.jsonl"
    src.write_text(
        json.dumps({"text": text, "category": "food"}) + "\n"
        "not json\n"
        + json.dumps({"text": 7, "category": "food"}) + "\n"
        + json.dumps({"text": text, "category": ["food"]}) + "\n"
        + json.dumps({"text": text, "category": " Service "}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    dst = tmp_path / "out.jsonl"
    assert _predict(category_artifact, src, dst) == 1
    got = _read(dst)
    assert got[0]["pred_label"] in LABELS and got[4]["pred_label"] in LABELS
    assert got[1] == {"error": "invalid JSON: Expecting value", "line": 2}
    assert got[2]["error"] == "text must be a string, not int"
    assert got[3]["error"] == "category must be a string, not list"


@pytest.mark.parametrize("fmt_out", ["jsonl", "parquet"])
def test_a_category_row_taken_into_a_field_by_an_open_quote_is_told(
    category_artifact: Path, tmp_path: Path, fmt_out: str
) -> None:
    """A quote left open takes the next line, a row of its own, into the text: it is told
    by its category cell being one of the model's (a category is seldom in its text, and
    the check by the key found in the text let this row go, scored under the wrong one)."""
    if fmt_out == "parquet":
        pytest.importorskip("pyarrow")
    src = tmp_path / "in.csv"
    src.write_text(
        'text,category\n"Lovely place with candles,AMBIENCE\nThe staff was rude.",service\n'
        "The food was good.,food\n",
        encoding="utf-8",
    )
    dst = tmp_path / f"out.{fmt_out}"
    assert _predict(category_artifact, src, dst) == 1
    swallowed, good = _read(dst)
    assert "reads as a row of its own, inside a field" in swallowed["error"]
    assert swallowed.get("pred_label") is None and good["pred_label"] in LABELS


def test_each_kind_of_model_given_the_other_kinds_rows_is_told_which_it_needs(
    category_artifact: Path, artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Rows of categories given to a term model, and rows of aspects to a category model:
    a JSONL row's error and a CSV header's refusal say which kind of model scores them."""
    text = category_examples()[0].text
    cats = write_rows(tmp_path / "cats.jsonl", [{"text": text, "category": "food"}])
    assert _predict(artifact, cats, tmp_path / "o1.jsonl") == 1
    (row,) = _read(tmp_path / "o1.jsonl")
    assert row["error"].startswith("aspect is missing or empty; the row has 'category': ")
    assert "aspect-category model" in row["error"]

    terms = write_rows(tmp_path / "terms.csv", [{"text": text, "aspect": "food"}])
    assert _predict(category_artifact, terms, tmp_path / "o2.csv") == 2
    err = capsys.readouterr().err.strip()
    said = "the CSV header must name the columns text and category; it has 'aspect'"
    assert f"{terms}:1: {said}" in err
    assert len(err.splitlines()) == 1, err
    cats_csv = write_rows(tmp_path / "cats.csv", [{"text": text, "category": "food"}])
    for out in ("o3.csv", "o3.parquet"):
        assert _predict(artifact, cats_csv, tmp_path / out) == 2
        err = capsys.readouterr().err.strip()
        assert "it has 'category': " in err and "aspect-category model" in err, err
        assert len(err.splitlines()) == 1, err


def test_a_category_model_is_told_it_scores_files(
    category_artifact: Path, capsys: pytest.CaptureFixture
) -> None:
    """Where a category model is refused (asked with --aspect), it was told files are scored
    with aspect-term models only (CATEGORY_GOES); --engine ray's refusal:
    tests/bulk/test_ray_output.py."""
    argv = ["predict", "--model", str(category_artifact), "--text", "the food"]
    assert main([*argv, "--aspect", "food"]) == 2
    err = capsys.readouterr().err
    assert "--input" in err and "aspect-term models only" not in err, err
