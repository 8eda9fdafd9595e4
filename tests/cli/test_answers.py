"""absa answers: the labelled lines of answer samples (the service's own, from two workers'
files) into one training file, each answer once, with how often the model was right."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from absa.cli import main
from absa.service.app import create_app
from absa.training.readers import read_examples
from tests.service.conftest import make_settings
from tests.service.test_sampling import sample_lines

TEXTS = ["the food was awful", "the staff was lovely", "the wine list was long"]


def served_sample(artifact: Path, path: Path, texts: list[str]) -> list[dict]:
    """The lines the real service keeps of ``texts`` (every request: rate 1)."""
    settings = make_settings(artifact, sample_path=path, sample_rate=1.0, sample_below=0.0)
    with TestClient(create_app(settings)) as c:
        for text in texts:
            aspect = text.split()[1]
            assert c.post("/v1/predict", json={"text": text, "aspects": [aspect]}).is_success
        deadline = time.monotonic() + 10
        while sample_lines(c, {"kind": "term", "result": "written"}) < len(texts):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, rows: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def test_labelled_samples_of_two_workers_become_one_training_file(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = served_sample(artifact, tmp_path / "answers-a.jsonl", TEXTS)
    b = served_sample(artifact, tmp_path / "answers-b.jsonl", TEXTS[:1])  # the other pod
    gold = {"food": "negative", "staff": "positive"}  # the wine list: not checked yet
    for line in (*a, *b):
        if line["aspect"] in gold:
            line["label"] = gold[line["aspect"]].title()  # as a person may write it
    files = [write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)]
    out = tmp_path / "train.jsonl"
    assert main(["answers", *map(str, files), "--out", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    examples = read_examples(out).examples  # a training file as any other
    assert sorted((e.text, e.label) for e in examples) == [
        (TEXTS[0], "negative"),
        (TEXTS[1], "positive"),
    ]
    assert (rep["lines"], rep["labelled"], rep["unlabelled"], rep["repeats"]) == (4, 3, 1, 1)
    assert rep["written"] == 2 and rep["labels"] == {"negative": 1, "positive": 1}
    (model,) = rep["accuracy"]
    right = sum(g["predicted"] == gold[g["aspect"]] for g in (*a, *b) if g["aspect"] in gold)
    assert rep["accuracy"][model]["random"]["n"] == 3
    assert rep["accuracy"][model]["random"]["accuracy"] == round(right / 3, 4)
    lo, hi = rep["accuracy"][model]["random"]["interval_95"]
    assert 0 <= lo <= right / 3 <= hi <= 1


def line(aspect: str, label: str | None = None, **more: object) -> dict:
    text = f"the {aspect} was fine"
    row = {"text": text, "aspect": aspect, "start": 4, "end": 4 + len(aspect),
           "predicted": "positive", "model": "m:1", "kept": "random", **more}  # fmt: skip
    return row if label is None else {**row, "label": label}


def test_labels_that_disagree_leave_the_answer_out_and_say_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    f = write(tmp_path / "s.jsonl", [line("food", "positive"), line("food", "negative"),
                                     line("wine", "neutral")])  # fmt: skip
    out = tmp_path / "t.jsonl"
    assert main(["answers", str(f), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert [json.loads(x)["aspect"] for x in out.read_text().splitlines()] == ["wine"]
    assert f"{f}:1 (positive), {f}:2 (negative)" in caplog.text
    assert "1 with labels that disagree left out" in captured.out


def test_a_disagreed_line_tells_who_was_right(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shadow = {"model": "m:2", "predicted": "negative"}
    rows = [line("food", "negative", kept="disagreed", shadow=shadow),
            line("wine", "positive", kept="disagreed", shadow=shadow),
            line("beer", "neutral", kept="disagreed", shadow=shadow)]  # fmt: skip
    f = write(tmp_path / "s.jsonl", rows)
    assert main(["answers", str(f), "--out", str(tmp_path / "t.jsonl"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["accuracy"]["m:1"]["shadow_right"] == {
        "m:2": {"served": 1, "shadow": 1, "neither": 1}
    }
    assert "interval_95" not in rep["accuracy"]["m:1"]["disagreed"]  # drawn on purpose


def test_bad_lines_name_their_file_and_line_or_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    f = write(tmp_path / "s.jsonl", [line("food", "positive")], tail='{"text": "cut sho\n')
    out = tmp_path / "t.jsonl"
    assert main(["answers", str(f), "--out", str(out)]) == 2
    assert f"absa answers: error: {f}:2: not JSON" in capsys.readouterr().err
    assert not out.exists()
    assert main(["answers", str(f), "--out", str(out), "--skip-invalid"]) == 0
    assert "1 invalid line(s) skipped" in caplog.text
    bad = write(tmp_path / "bad.jsonl", [line("food", "great")])
    assert main(["answers", str(bad), "--out", str(tmp_path / "u.jsonl")]) == 2
    assert f"{bad}:1: unknown label 'great'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"aspect": ["food"]}, "'aspect' is not a string"),  # was a TypeError's traceback
        ({"aspect": None}, "missing or empty 'aspect'"),  # was written, and refused by retrain
        ({"start": "x"}, "must be integers"),
        ({"start": 0}, "not the term 'food'"),
    ],
)
def test_a_line_the_training_reader_would_refuse_is_refused_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, words: str
) -> None:
    rows = [line("wine", "neutral"), {**line("food", "positive"), **change}]
    f = write(tmp_path / "s.jsonl", rows)
    out = tmp_path / "t.jsonl"
    assert main(["answers", str(f), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:2: " in err and words in err, err
    assert main(["answers", str(f), "--out", str(out), "--skip-invalid"]) == 0
    assert [e.text for e in read_examples(out).examples] == ["the wine was fine"]


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("unlabelled", "no labelled answer in"),
        ("out is input", "is one of the sample files"),
        ("out exists", "exists; name a new file"),
        ("mixed kinds", "a category answer among term answers"),
        ("all disagree", "every labelled answer in"),
        ("no folder", "no such directory as"),
    ],
)
def test_what_cannot_make_a_training_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, words: str
) -> None:
    f = write(tmp_path / "s.jsonl", [line("food", None if case == "unlabelled" else "positive")])
    out = tmp_path / "t.jsonl"
    if case == "out is input":
        out = f
    elif case == "out exists":
        out.write_text("mine\n")
    elif case == "mixed kinds":
        write(f, [line("food", "positive"), {"text": "x", "category": "food", "label": "neutral"}])
    elif case == "all disagree":
        write(f, [line("food", "positive"), line("food", "negative")])
    elif case == "no folder":
        out = tmp_path / "missing" / "t.jsonl"
    assert main(["answers", str(f), "--out", str(out)]) == 2
    assert words in capsys.readouterr().err
    if case == "out exists":
        assert out.read_text() == "mine\n"
