"""One prediction path: the same cases through every way in (HTTP /v1/predict, HTTP batch,
`absa predict --text`, file scoring, the Python API) give the same answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from absa import load
from absa.cli import main
from absa.model.runtime import DEFAULT_MODEL_DIR
from absa.service.app import create_app
from absa.settings import Settings

MODEL = DEFAULT_MODEL_DIR  # the shipped model: real weights, loads in milliseconds

CASES: list[tuple[str, list]] = [
    ("The fries were soggy but the burger was great", ["burger", "fries"]),
    ("The staff could not have been more helpful", ["staff"]),
    ("Pizza, pizza and more PIZZA: the pizza was cold", ["pizza"]),  # 4 occurrences
    ("The wine list is long", [{"term": "wine list", "start": 4, "end": 13}]),
    ("Great   views,\tslow\nservice", ["views", "service"]),
]


def plain(results: list[dict]) -> list[tuple]:
    return [(r["term"], r["start"], r["end"], r["label"], r["score"], r["scores"]) for r in results]


@pytest.fixture(scope="module")
def client() -> TestClient:
    settings = Settings(model_dir=MODEL, device="cpu", threads=1)
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture(scope="module")
def api_answers() -> list[list[dict]]:
    clf = load(MODEL, device="cpu", threads=1)
    return [[r.to_dict() for r in clf(text, aspects)] for text, aspects in CASES]


def test_http_predict_matches_the_python_api(client: TestClient, api_answers: list) -> None:
    for (text, aspects), want in zip(CASES, api_answers, strict=True):
        r = client.post("/v1/predict", json={"text": text, "aspects": aspects})
        assert r.status_code == 200, r.text
        assert plain(r.json()["results"]) == plain(want)
    assert len(api_answers[2]) == 4  # every occurrence of a repeated term


def test_http_batch_matches_the_python_api(client: TestClient, api_answers: list) -> None:
    items = [{"text": t, "aspects": a} for t, a in CASES]
    r = client.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    got = [plain(it["results"]) for it in r.json()["items"]]
    assert got == [plain(w) for w in api_answers]
    clf = load(MODEL, device="cpu", threads=1)
    for batch_size in (1, 3, 64):  # the API's own batch: any chunking, the same answers
        answers = clf.batch([(t, a) for t, a in CASES], batch_size=batch_size)
        assert [plain([r.to_dict() for r in a]) for a in answers] == got


def test_cli_predict_matches_the_python_api(
    api_answers: list, capsys: pytest.CaptureFixture[str]
) -> None:
    for (text, aspects), want in zip(CASES, api_answers, strict=True):
        if not all(isinstance(a, str) for a in aspects):
            continue  # the CLI takes terms
        argv = ["predict", "--model", str(MODEL), "--text", text]
        for a in aspects:
            argv += ["--aspect", a]
        assert main(argv) == 0
        assert plain(json.loads(capsys.readouterr().out)["results"]) == plain(want)


def test_file_scoring_matches_the_python_api(api_answers: list, tmp_path: Path) -> None:
    """One output row per input row; a repeated term scores its first occurrence, which is
    the API's first result for it, and says so (``pred_occurrence`` of ``pred_occurrences``)."""
    rows, want = [], []
    for (text, aspects), answers in zip(CASES, api_answers, strict=True):
        for a in aspects:
            row = {"text": text, "aspect": a} if isinstance(a, str) else {"text": text, **a}
            if not isinstance(a, str):
                row["aspect"] = row.pop("term")
            rows.append(row)
            same = [r for r in answers if r["term"].lower() == row["aspect"].lower()]
            first = (
                same[0]
                if "start" not in row
                else next(r for r in same if r["start"] == row["start"])
            )
            n = len(same) if "start" not in row else None
            want.append((first["label"], first["scores"], first["start"], first["end"], n))
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    argv = ["predict", "--model", str(MODEL), "--input", str(src), "--output", str(dst)]
    assert main([*argv, "--quiet"]) == 0
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    got = [(o["pred_label"], o["pred_scores"], o["pred_start"], o["pred_end"]) for o in out]
    assert got == [w[:4] for w in want]
    for o, w in zip(out, want, strict=True):
        if w[4] is not None:  # a term looked up: the first of its occurrences
            assert (o["pred_occurrence"], o["pred_occurrences"]) == (1, w[4])


def test_the_same_bad_input_is_refused_the_same_way(client: TestClient) -> None:
    text, aspect = "The food was great", "wine"
    r = client.post("/v1/predict", json={"text": text, "aspects": [aspect]})
    assert r.status_code == 422
    http_msg = r.json()["detail"]
    from absa.errors import InputError

    with pytest.raises(InputError) as err:
        load(MODEL)(text, [aspect])
    assert str(err.value) == http_msg == "aspects[0]: aspect 'wine' does not occur in the text"
