"""An aspect longer than the model's window of tokens is refused, on every path, naming the
aspect and the limit: the window held the aspect's first tokens alone, so the words around
it were never read and the aspect mask covered part of it (a 200-token aspect in a text of
2,000 characters was answered neutral 0.69 from its first 128 tokens, "was great" unread).
The shipped model (model/artifacts/default: a word pipeline, 128 tokens)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import absa
from absa.cli import main
from absa.errors import InputError
from absa.model.runtime import DEFAULT_MODEL_DIR
from tests.service.conftest import make_settings

BANG = "!" * 2000
LONG_BANG = {"term": "!" * 200, "start": 900, "end": 1100}  # 200 tokens: "!" is one each
HYPHENS = "a" + "-a" * 99  # 199 tokens: a - a - ... a
WAS_GREAT = ("a" + "-a" * 99 + " was great " + "x " * 500)[:2000]
TOO_LONG = r"is (200|199) tokens long, over the 128 the model reads at once"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    from absa.service.app import create_app

    settings = make_settings(DEFAULT_MODEL_DIR, max_text_chars=2000, max_body_bytes=65536)
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.mark.parametrize(
    ("text", "aspect", "named"),
    [
        (BANG, LONG_BANG, r"aspect '!!!!!+…' \[900, 1100\): "),
        (WAS_GREAT, HYPHENS, r"aspect 'a-a-a-a+.*…' \[0, 199\): "),
    ],
)
def test_an_aspect_longer_than_the_window_is_422_naming_it_and_the_limit(
    client: TestClient, text: str, aspect: object, named: str
) -> None:
    r = client.post("/v1/predict", json={"text": text, "aspects": [aspect]})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str)  # the one shape of a text error: a line, as "does not occur"
    assert re.match(named + r"aspect span \[\d+, \d+\) " + TOO_LONG, detail), detail
    with pytest.raises(InputError) as err:  # the Python API says the same
        absa.load(DEFAULT_MODEL_DIR)(text, [aspect])
    assert str(err.value) == detail


def test_an_aspect_that_fills_the_window_is_still_answered(client: TestClient) -> None:
    text = "!" * 300
    fits = {"term": "!" * 128, "start": 100, "end": 228}
    r = client.post("/v1/predict", json={"text": text, "aspects": [fits]})
    assert r.status_code == 200, r.text
    over = {"term": "!" * 129, "start": 100, "end": 229}
    r = client.post("/v1/predict", json={"text": text, "aspects": [fits, over]})
    assert r.status_code == 422, r.text
    assert "[100, 229): aspect span [100, 229) is 129 tokens long" in r.json()["detail"]


def test_the_cli_and_bulk_scoring_refuse_it_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rc = main(
        ["predict", "--model", str(DEFAULT_MODEL_DIR), "--text", WAS_GREAT, "--aspect", HYPHENS]
    )
    assert rc == 2
    assert "199 tokens long, over the 128 the model reads at once" in capsys.readouterr().err
    src = tmp_path / "in.jsonl"
    rows_in = [
        {"text": WAS_GREAT, "aspect": HYPHENS, "id": 1},
        {"text": "the food was great", "aspect": "food", "id": 2},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows_in), encoding="utf-8")
    dst = tmp_path / "out.jsonl"
    model = str(DEFAULT_MODEL_DIR)
    rc = main(["predict", "--model", model, "--input", str(src), "--output", str(dst), "--quiet"])
    assert rc == 1  # a bad row; the run finished
    rows = [json.loads(line) for line in dst.read_text(encoding="utf-8").splitlines()]
    assert "199 tokens long, over the 128 the model reads at once" in rows[0]["error"]
    assert rows[1]["pred_label"] == "positive"
