"""Requests without aspects: the real app with an extractor (extract, then classify each
aspect found) and without one (the clear 422 of before)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import LIMITS, make_settings
from tests.service.test_api import check_error

TEXT = "the wine list was great but the food was awful"


@pytest.fixture(scope="module")
def auto_client(artifact: Path, extractor_artifact: Path) -> Iterator[TestClient]:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, extractor=extractor_artifact))) as c:
        yield c


@pytest.mark.parametrize("body", [{"text": TEXT}, {"text": TEXT, "aspects": "auto"}])
def test_no_aspects_extracts_then_classifies(auto_client: TestClient, body: dict) -> None:
    r = auto_client.post("/v1/predict", json=body)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [(x["term"], x["start"], x["end"]) for x in results] == [
        ("wine list", 4, 13),
        ("food", 32, 36),
    ]
    named = auto_client.post("/v1/predict", json={"text": TEXT, "aspects": ["wine list", "food"]})
    for x, y in zip(results, named.json()["results"], strict=True):
        assert (x["label"], x["scores"]) == (y["label"], y["scores"])  # classified alike
        assert set(x["extracted"]) == {"confidence"}
        assert 0.0 < x["extracted"]["confidence"] <= 1.0


def test_a_control_character_beside_an_extracted_term_is_left_out(artifact: Path) -> None:
    """{"text": "\\u0000food was great"} answered the shipped extractor's term "\\u0000food"
    (the tiny test extractor leaves the NUL out by itself, so the shipped one is served)."""
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, extractor=DEFAULT_EXTRACTOR_DIR))) as c:
        for text in ["\x00food was great", "The \x00\x00food was great", "\x1bfood was great"]:
            r = c.post("/v1/predict", json={"text": text})
            assert r.status_code == 200, r.text
            got = [(x["term"], x["start"], x["end"]) for x in r.json()["results"]]
            assert got == [("food", text.index("f"), text.index("f") + 4)], text


def test_named_aspects_are_not_marked_extracted(auto_client: TestClient) -> None:
    r = auto_client.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]})
    assert r.status_code == 200, r.text
    assert [x.get("extracted") for x in r.json()["results"]] == [None]


def test_a_text_without_aspects_gets_no_results(auto_client: TestClient) -> None:
    r = auto_client.post("/v1/predict", json={"text": "we went there on friday"})
    assert r.status_code == 200, r.text
    assert r.json()["results"] == []


def test_batch_mixes_extracted_and_named_items(auto_client: TestClient) -> None:
    items = [{"text": TEXT}, {"text": TEXT, "aspects": ["food"]}, {"text": "   "}]
    r = auto_client.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    got = r.json()["items"]
    assert [x["term"] for x in got[0]["results"]] == ["wine list", "food"]
    assert [x["term"] for x in got[1]["results"]] == ["food"]
    assert got[2]["error"]["status"] == 422


def test_more_aspects_found_than_allowed_is_413(auto_client: TestClient) -> None:
    text = "the food was great but the staff was awful and the pizza was okay . " * 2
    r = auto_client.post("/v1/predict", json={"text": text})
    assert len(text) <= LIMITS["max_text_chars"]
    check_error(r, 413)
    assert "the extractor found 6 aspects; the limit is 4" in r.json()["detail"]
    # it said "name the aspects instead", which the same limit refuses as many named ones
    assert r.json()["detail"].endswith("send the text in parts (a few sentences each)")


def test_explain_on_extracted_aspects(auto_client: TestClient) -> None:
    r = auto_client.post("/v1/predict", json={"text": TEXT, "explain": True})
    assert r.status_code == 200, r.text
    for x in r.json()["results"]:
        assert x["attention"] and x["extracted"]


@pytest.mark.parametrize("body", [{"text": TEXT}, {"text": TEXT, "aspects": "auto"}])
def test_without_an_extractor_no_aspects_is_422(client: TestClient, body: dict) -> None:
    r = client.post("/v1/predict", json=body)
    check_error(r, 422)
    assert "no aspect extractor is configured (setting ABSA_EXTRACTOR)" in r.json()["detail"]


def test_a_sentiment_model_is_refused_as_the_extractor(artifact: Path) -> None:
    from absa.errors import ArtifactError
    from absa.service.app import create_app

    with pytest.raises(ArtifactError, match="is a sentiment model .* ABSA_MODEL_DIR"):
        with TestClient(create_app(make_settings(artifact, extractor=artifact))):
            pass


def test_model_info_names_the_extractor(auto_client: TestClient, client: TestClient) -> None:
    assert auto_client.get("/v1/model").json()["extractor"] == "absa-extractor:x1"
    assert client.get("/v1/model").json()["extractor"] is None


def extraction_count(client: TestClient) -> float:
    line = "absa_extraction_seconds_count "
    found = [x for x in client.get("/metrics").text.splitlines() if x.startswith(line)]
    assert len(found) == 1, "absa_extraction_seconds is exposed"
    return float(found[0].rsplit(" ", 1)[1])


def test_each_extraction_is_timed_and_named_aspects_are_not(auto_client: TestClient) -> None:
    before = extraction_count(auto_client)
    assert auto_client.post("/v1/predict", json={"text": TEXT}).status_code == 200
    assert extraction_count(auto_client) == before + 1
    auto_client.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]})
    assert extraction_count(auto_client) == before + 1  # nothing extracted
    items = [{"text": TEXT}, {"text": TEXT, "aspects": "auto"}, {"text": TEXT, "aspects": ["food"]}]
    assert auto_client.post("/v1/predict/batch", json={"items": items}).status_code == 200
    assert extraction_count(auto_client) == before + 3  # one per item whose aspects were found
    text = "the food was great but the staff was awful and the pizza was okay . " * 2
    assert auto_client.post("/v1/predict", json={"text": text}).status_code == 413
    assert extraction_count(auto_client) == before + 4  # refused after the extractor ran


def test_without_an_extractor_nothing_is_timed(client: TestClient) -> None:
    assert client.post("/v1/predict", json={"text": TEXT}).status_code == 422
    assert extraction_count(client) == 0


def test_each_extraction_is_counted_by_what_came_of_it(
    artifact: Path, extractor_artifact: Path
) -> None:
    """An extraction that found nothing was answered 200 with no results and counted
    nowhere (from the monitoring review): absa_extractions_total{outcome}."""
    from absa.service.app import create_app
    from tests.service.test_reload import metric_samples

    settings = make_settings(artifact, extractor=extractor_artifact)
    with TestClient(create_app(settings)) as c:
        assert c.post("/v1/predict", json={"text": TEXT}).json()["results"]
        r = c.post("/v1/predict", json={"text": "it was ok i guess"})
        assert r.status_code == 200 and r.json()["results"] == []
        text = "the food was great but the staff was awful and the pizza was okay . " * 2
        assert c.post("/v1/predict", json={"text": text}).status_code == 413
        c.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]})  # named: not counted
        samples = metric_samples(c.get("/metrics").text, "absa_extractions_total")
        got = {lab["outcome"]: v for lab, v in samples}
    assert got == {"found": 1.0, "none": 1.0, "refused": 1.0}
