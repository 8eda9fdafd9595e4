"""Aspect categories over HTTP: the real app with a term model and ``ABSA_CATEGORY_MODEL``
(tests/conftest.py's synthetic category model), through Starlette's TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.helpers import category_examples
from tests.service.conftest import make_settings

EXAMPLES = category_examples()
TEXT = EXAMPLES[0].text  # asked about two categories with different labels


@pytest.fixture(scope="module")
def both(artifact: Path, category_artifact: Path) -> Iterator[TestClient]:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, category_model=category_artifact))) as c:
        yield c


def post(client: TestClient, body: dict, path: str = "/v1/predict") -> tuple[int, dict]:
    r = client.post(path, json=body)
    return r.status_code, r.json()


def test_one_result_per_category(both: TestClient) -> None:
    cats = [EXAMPLES[0].category, EXAMPLES[1].category]
    status, body = post(both, {"text": TEXT, "categories": cats})
    assert status == 200, body
    assert [(r["category"], r["label"]) for r in body["results"]] == [
        (e.category, e.label) for e in EXAMPLES[:2]
    ]
    assert set(body["results"][0]) == {"category", "label", "score", "scores", "attention"}
    assert body["results"][0]["attention"] is None
    assert body["model"] == "categories:c1"


def test_category_names_in_any_case_each_answered_once(both: TestClient) -> None:
    # as a term listed twice is answered once, where it was first asked for
    status, body = post(both, {"text": TEXT, "categories": ["FOOD", "Service", "food"]})
    assert status == 200, body
    assert [r["category"] for r in body["results"]] == ["food", "service"]  # the model's names


def test_explain_gives_the_attention_over_the_words(both: TestClient) -> None:
    status, body = post(both, {"text": TEXT, "categories": ["food"], "explain": True})
    assert status == 200
    words = body["results"][0]["attention"]
    assert [w["token"] for w in words] == TEXT.split()
    assert sum(w["weight"] for w in words) == pytest.approx(1.0, abs=1e-4)


def test_terms_still_go_to_the_term_model(both: TestClient) -> None:
    status, body = post(both, {"text": "the food was great", "aspects": ["food"]})
    assert status == 200 and body["results"][0]["term"] == "food"


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        (
            {"text": TEXT, "categories": ["drinks"]},
            422,
            "categories[0]: unknown category 'drinks'; known: ambience, food, service",
        ),
        (
            {"text": TEXT, "categories": ["food"], "aspects": ["pizza"]},
            422,
            "give either aspects (terms in the text) or categories, not both",
        ),
        ({"text": TEXT}, 422, "no aspect extractor is configured"),  # neither: extraction
        ({"text": TEXT, "categories": []}, 422, "categories"),
        ({"text": TEXT, "categories": [3]}, 422, "categories"),
        ({"text": TEXT, "categories": ["food"] * 5}, 413, "too many categories"),
    ],
)
def test_bad_requests(both: TestClient, body: dict, status: int, detail: str) -> None:
    got, answer = post(both, body)
    assert got == status, answer
    text = answer["detail"] + " ".join(str(e) for e in answer.get("errors") or [])
    assert detail in text


def test_categories_without_a_category_model(client: TestClient) -> None:
    status, body = post(client, {"text": TEXT, "categories": ["food"]})
    assert status == 422
    assert "no aspect-category model" in body["detail"]
    assert "ABSA_CATEGORY_MODEL" in body["detail"]
    info = client.get("/v1/model").json()
    assert info["categories"] is None and info["category_model"] is None
    items = [
        {"text": "the food was great", "aspects": ["food"]},
        {"text": TEXT, "categories": ["food"]},
    ]
    status, body = post(client, {"items": items}, "/v1/predict/batch")
    assert status == 200 and "results" in body["items"][0]
    error = body["items"][1]["error"]  # named like every other item's error
    assert error["status"] == 422
    assert error["detail"].startswith("items[1]: this service has no aspect-category model")


def test_model_info_lists_the_categories(both: TestClient) -> None:
    info = both.get("/v1/model").json()
    assert info["categories"] == ["ambience", "food", "service"]
    assert info["category_model"] == "categories:c1"  # as its answers name it


def test_batch_mixes_terms_and_categories(both: TestClient) -> None:
    items = [
        {"text": TEXT, "categories": [EXAMPLES[1].category]},
        {"text": "the food was great", "aspects": ["food"]},
        {"text": TEXT, "categories": ["drinks"]},
    ]
    status, body = post(both, {"items": items}, "/v1/predict/batch")
    assert status == 200, body
    first, second, third = body["items"]
    assert first["results"][0]["label"] == EXAMPLES[1].label and first["model"] == "categories:c1"
    assert second["results"][0]["term"] == "food" and second["model"] != "categories:c1"
    assert third["error"]["status"] == 422 and "known: ambience" in third["error"]["detail"]


def test_a_category_model_cannot_be_the_term_model(category_artifact: Path) -> None:
    from absa.errors import ArtifactError
    from absa.service.app import create_app

    with (
        pytest.raises(ArtifactError, match="aspect-category model"),
        TestClient(create_app(make_settings(category_artifact))),
    ):
        pass


def test_a_term_model_cannot_be_the_category_model(artifact: Path) -> None:
    from absa.errors import ArtifactError
    from absa.service.app import create_app

    settings = make_settings(artifact, category_model=artifact)
    with (
        pytest.raises(ArtifactError, match="is an aspect-term model"),
        TestClient(create_app(settings)),
    ):
        pass


def test_a_sentence_pair_category_model_over_http(
    artifact: Path, pair_category_artifact: Path
) -> None:
    """The same API with a sentence-pair model: the service builds "[CLS] text [SEP]
    category words [SEP]" itself; the attention covers the text's words only."""
    from absa.service.app import create_app

    settings = make_settings(artifact, category_model=pair_category_artifact)
    with TestClient(create_app(settings)) as c:
        for a, b in zip(EXAMPLES[::2], EXAMPLES[1::2], strict=True):
            status, body = post(c, {"text": a.text, "categories": [a.category, b.category]})
            assert status == 200, body
            assert [r["label"] for r in body["results"]] == [a.label, b.label]
        status, body = post(c, {"text": TEXT, "categories": ["food"], "explain": True})
        assert status == 200 and body["model"] == "pair-categories:p1"
        assert [w["token"] for w in body["results"][0]["attention"]] == TEXT.split()
        status, body = post(c, {"text": TEXT, "categories": ["drinks"]})
        assert status == 422 and "known: ambience, food, service" in body["detail"]


def test_metrics_count_categories_apart_and_the_term_models_words(
    artifact: Path, category_artifact: Path
) -> None:
    """Category answers went into absa_aspects_total (the term model's label mix) with no
    metric of their own; the words the term model reads as unknown were in no metric (from
    the monitoring review): absa_categories_total, absa_words_total{known}."""
    from absa.service.app import create_app
    from tests.service.test_reload import metric_samples

    settings = make_settings(artifact, category_model=category_artifact)
    with TestClient(create_app(settings)) as c:
        _, terms = post(c, {"text": "the food was zzqxv", "aspects": ["food"]})
        _, cats = post(c, {"text": TEXT, "categories": [EXAMPLES[0].category]})
        items = [{"text": "the food was zzqxv", "aspects": ["food", "zzqxv"]}]
        assert post(c, {"items": items}, "/v1/predict/batch")[0] == 200
        text = c.get("/metrics").text

    def counts(name: str, key: str) -> dict[str, float]:
        return {labels[key]: v for labels, v in metric_samples(text, name) if v}

    assert counts("absa_aspects_total", "label") == {terms["results"][0]["label"]: 3.0}
    assert counts("absa_categories_total", "label") == {cats["results"][0]["label"]: 1.0}
    # "the food was zzqxv", once a request: 1 word of 4 unknown, twice; the category
    # request's words are the category model's, not counted
    assert counts("absa_words_total", "known") == {"false": 2.0, "true": 6.0}
