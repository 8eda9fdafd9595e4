"""`absa predict --input FILE --extractor DIR|shipped`: rows of texts alone, each text's
aspects found by the extractor and scored, from JSONL, CSV and Parquet through the CLI, as
one ``--text`` is answered (the shipped models, read only)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from absa.cli import main
from absa.model.extractor import DEFAULT_EXTRACTOR_DIR
from tests.helpers import read_rows, write_rows

TEXTS = (
    "The pizza was great but the service was slow.",
    "I would come back.",  # no aspect
    "Friendly staff. The wine list is short, and the desserts were stale.",
    "the fries were cold. the burger was fine though",  # lower case, two sentences
)


def _rows() -> list[dict[str, Any]]:
    """Texts (one without an aspect), then bad rows; each with an ``id`` and a ``note``
    that must come through."""
    good = [{"id": i, "text": t, "note": f"n{i}"} for i, t in enumerate(TEXTS)]
    bad = [
        {"id": 10, "text": "", "note": "empty"},
        {"id": 11, "text": TEXTS[0], "aspect": "pizza", "note": "named"},
        {"id": 12, "note": "no text"},
    ]
    return good + bad


def _read(path: Path) -> list[dict[str, Any]]:
    """An output's rows, ``pred_aspects`` as a list (a CSV's JSON text parsed, an empty cell
    None) and ``pred_n_aspects`` an int, in every format."""
    rows = read_rows(path)
    for r in rows if path.suffix == ".csv" else ():
        if r.get("pred_aspects") is not None:
            r["pred_aspects"] = json.loads(r["pred_aspects"])
            r["pred_n_aspects"] = int(r["pred_n_aspects"])
    return rows


def _extract(src: Path, dst: Path, *more: str) -> int:
    return main(["predict", "--input", str(src), "--output", str(dst), "--extractor",
                 "shipped", "--quiet", *more])  # fmt: skip


@pytest.fixture(scope="module")
def one_text_answers() -> list[list[dict[str, Any]]]:
    """Each of TEXTS as the Python API answers it with the shipped extractor."""
    import absa

    clf = absa.load(extractor="shipped")
    return [[a.to_dict() for a in clf(t, aspects=None)] for t in TEXTS]


@pytest.mark.parametrize(
    ("fmt_in", "fmt_out"),
    [
        ("jsonl", "jsonl"),
        ("csv", "csv"),
        ("parquet", "parquet"),
        ("jsonl", "parquet"),
        ("parquet", "jsonl"),
        ("csv", "jsonl"),
    ],
)
def test_texts_of_a_file_are_extracted_and_scored_as_one_text_is(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    one_text_answers: list[list[dict[str, Any]]],
    fmt_in: str,
    fmt_out: str,
) -> None:
    """A file of texts without aspects was refused (--extractor with --input) or got
    "aspect is missing" on every row: each text's aspects are found and scored, in
    ``pred_aspects`` as one --text is answered, a text without any an empty list, every
    input field kept, a bad row its error (the run going on past it)."""
    pytest.importorskip("pyarrow")
    rows = _rows()
    src = write_rows(tmp_path / f"in.{fmt_in}", rows)
    dst = tmp_path / f"out.{fmt_out}"
    with caplog.at_level(logging.WARNING, logger="absa"):
        assert _extract(src, dst) == 1  # bad rows, the run finished
    got = _read(dst)
    assert len(got) == len(rows) and not list(tmp_path.glob("*.part"))
    assert [str(r["id"]) for r in got] == [str(r["id"]) for r in rows]
    assert [r["note"] for r in got] == [r["note"] for r in rows]  # input fields kept
    assert not {"pred_label", "pred_score", "pred_start"} & set(got[0]), got[0]

    n = len(TEXTS)
    for row, want in zip(got[:n], one_text_answers, strict=True):
        assert not row.get("error"), row
        assert row["pred_aspects"] == want  # the same floats: rounded to 6 places on both
        assert row["pred_n_aspects"] == len(want)
    assert got[1]["pred_aspects"] == [] and got[1]["pred_n_aspects"] == 0
    assert all(len(w) >= 2 for i, w in enumerate(one_text_answers) if i != 1)

    errors = [r["error"] for r in got[n:]]
    assert all(r.get("pred_aspects") is None for r in got[n:])  # null, not an empty list
    assert errors[0] == "text is missing or empty"
    assert errors[1].startswith("the row names an aspect ('pizza'), where --extractor finds")
    assert "without --extractor" in errors[1]
    assert errors[2] == "text is missing or empty"
    line = {"jsonl": n + 2, "csv": n + 3}.get(fmt_in)  # the header is line 1 of a CSV
    where = f"{src}: row {n + 2}" if line is None else f"{src}:{line}"
    assert f"{where}: the row names an aspect" in caplog.text


def test_one_text_on_the_command_line_is_answered_as_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`absa predict --text T --extractor shipped` and the row of T in a file: one answer."""
    assert main(["predict", "--text", TEXTS[2], "--extractor", "shipped"]) == 0
    said = json.loads(capsys.readouterr().out)
    src = write_rows(tmp_path / "in.jsonl", [{"text": TEXTS[2]}])
    assert _extract(src, tmp_path / "out.jsonl") == 0
    (row,) = _read(tmp_path / "out.jsonl")
    assert row == {"text": TEXTS[2], "pred_aspects": said["results"], "pred_n_aspects": 3}


def test_bad_rows_get_their_error_and_the_rest_are_scored(tmp_path: Path) -> None:
    """Invalid JSON, a text that is not a string or too long, an aspect named (a list too):
    each row its error; an aspect null or empty names none, and the text is extracted."""
    src = tmp_path / "in.jsonl"
    lines = [
        json.dumps({"text": TEXTS[0]}),
        "not json",
        json.dumps({"text": 7}),
        json.dumps({"text": "x" * 1_000_001}),
        json.dumps({"text": TEXTS[0], "aspect": ["pizza"]}),
        json.dumps({"text": TEXTS[0], "aspect": None}),
        json.dumps({"text": TEXTS[0], "aspect": " "}),
    ]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dst = tmp_path / "out.jsonl"
    assert _extract(src, dst) == 1
    got = _read(dst)
    assert got[0]["pred_n_aspects"] == 2
    assert got[1] == {"error": "invalid JSON: Expecting value", "line": 2}
    assert got[2]["error"] == "text must be a string, not int"
    assert got[3]["error"].startswith("text has 1,000,001 characters")
    assert got[4]["error"].startswith("the row names an aspect (['pizza'])")
    assert got[5]["pred_aspects"] == got[6]["pred_aspects"] == got[0]["pred_aspects"]


def test_a_csv_with_an_aspect_column_extracts_the_rows_that_leave_it_empty(
    tmp_path: Path,
) -> None:
    """A row naming an aspect is refused (without --extractor it would be scored), one
    that leaves the cell empty is extracted: no row is scored in a way it did not ask."""
    src = write_rows(
        tmp_path / "in.csv",
        [{"Text": TEXTS[0], "Aspect": "service"}, {"Text": TEXTS[0], "Aspect": None}],
    )
    assert _extract(src, tmp_path / "out.csv") == 1
    named, empty = _read(tmp_path / "out.csv")
    assert named["error"].startswith("the row names an aspect ('service')")
    assert named["Aspect"] == "service" and named["pred_aspects"] is None
    assert [a["term"] for a in empty["pred_aspects"]] == ["pizza", "service"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_an_aspect_named_otherwise_or_a_pinned_span_is_refused_too(
    tmp_path: Path, fmt: str
) -> None:
    """A row naming its aspect as the HTTP API (``aspects``) or the training data (``term``)
    do, or pinning a span, asked for that aspect: each is refused as one naming ``aspect``
    (they were answered with every aspect found); empty ones name none."""
    pytest.importorskip("pyarrow") if fmt == "parquet" else None
    rows = [
        {"text": TEXTS[0], "aspects": "pizza", "Term": None, "start": None, "end": None},
        {"text": TEXTS[0], "aspects": None, "Term": "pizza", "start": None, "end": None},
        {"text": TEXTS[0], "aspects": None, "Term": None, "start": 4, "end": 9},
        {"text": TEXTS[0], "aspects": "", "Term": None, "start": None, "end": None},
    ]
    src = write_rows(tmp_path / f"in.{fmt}", rows)
    assert _extract(src, tmp_path / "out.jsonl") == 1
    got = _read(tmp_path / "out.jsonl")
    assert got[0]["error"].startswith("the row names an aspect (aspects 'pizza')")
    assert got[1]["error"].startswith("the row names an aspect (Term 'pizza')")
    pinned = "the row names an aspect (a span, start/end 4/9)"
    assert got[2]["error"].startswith(pinned.replace("4/9", "'4'/'9'") if fmt == "csv" else pinned)
    assert [a["term"] for a in got[3]["pred_aspects"]] == ["pizza", "service"]


def test_a_chunk_of_texts_is_extracted_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extractor takes the chunk's texts at once, a sentence at a time (as one text's
    are), not a call per row."""
    from absa.model.extractor import Extractor

    calls: list[tuple[int, bool]] = []
    extract = Extractor.extract

    def counted(self: Extractor, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append((len(texts), kwargs.get("by_sentence", False)))
        return extract(self, texts, *args, **kwargs)

    monkeypatch.setattr(Extractor, "extract", counted)
    src = write_rows(tmp_path / "in.jsonl", [{"text": t} for t in TEXTS * 10])
    assert _extract(src, tmp_path / "out.jsonl") == 0
    assert calls[0] == (len(TEXTS) * 10, True), calls  # the first: per_sentence's own after it
    assert len(_read(tmp_path / "out.jsonl")) == len(TEXTS) * 10


def test_a_file_without_a_text_column_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    src = write_rows(tmp_path / "in.csv", [{"review": TEXTS[0]}])
    assert _extract(src, tmp_path / "out.csv") == 2
    err = capsys.readouterr().err.strip()
    assert f"{src}:1: the CSV header must name the column text" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "out.csv").exists()


#: the shipped artifacts (read only): term, category and extractor models
SHIPPED = DEFAULT_EXTRACTOR_DIR.parent


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--engine", "ray"], "--extractor with --input runs on the local engine"),
        (["--model", str(SHIPPED / "category")], "an aspect-category model scores its rows'"),
        (["--model", str(SHIPPED / "default")], ""),
    ],
)
def test_what_extraction_from_a_file_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], words: str
) -> None:
    """Ray's actors load no extractor: refused in one line (the local engine named), as is
    a category model, whose rows name categories; the shipped term model named: scored."""
    src = write_rows(tmp_path / "in.jsonl", [{"text": TEXTS[0]}])
    dst = tmp_path / "out.jsonl"
    code = _extract(src, dst, *extra)
    err = capsys.readouterr().err.strip()
    if not words:
        assert code == 0 and _read(dst)[0]["pred_n_aspects"] == 2
        return
    assert code == 2 and words in err and len(err.splitlines()) == 1, err
    assert not dst.exists()
