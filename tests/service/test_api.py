"""The HTTP API end to end: the real app (lifespan, engine, onnxruntime) through TestClient."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from absa.model.text import LABELS
from tests.service.conftest import EXAMPLES, LIMITS, make_settings

TEXT = "the wine list was great but the food was awful"


def predict(client: TestClient, text: str, aspects: list, explain: bool = False) -> dict:
    r = client.post("/v1/predict", json={"text": text, "aspects": aspects, "explain": explain})
    assert r.status_code == 200, r.text
    return r.json()


def span(text: str, term: str, nth: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(nth + 1):
        start = text.index(term, start + 1)
    return start, start + len(term)


# --------------------------------------------------------------------------- /v1/predict


def test_predict_returns_label_scores_and_spans(client: TestClient) -> None:
    body = predict(client, TEXT, ["wine list", "food"])
    assert body["model"] == "pos-scaled-selfattn:v1"
    assert [r["term"] for r in body["results"]] == ["wine list", "food"]
    for res in body["results"]:
        assert (res["start"], res["end"]) == span(TEXT, res["term"])
        assert res["label"] in LABELS
        assert set(res["scores"]) == set(LABELS)
        assert sum(res["scores"].values()) == pytest.approx(1.0, abs=1e-4)
        assert res["label"] == max(res["scores"], key=res["scores"].get)
        assert res["attention"] is None
        assert res["self_attention"] is None


def test_repeated_aspect_gives_one_result_per_occurrence(client: TestClient) -> None:
    text = "the food was great but the food was awful"
    results = predict(client, text, ["food"])["results"]
    assert [(r["term"], r["start"], r["end"]) for r in results] == [
        ("food", *span(text, "food", 0)),
        ("food", *span(text, "food", 1)),
    ]


def test_lookup_is_case_insensitive_and_reports_the_text_as_written(client: TestClient) -> None:
    text = "The Food was great"
    (res,) = predict(client, text, ["food"])["results"]
    assert (res["term"], res["start"], res["end"]) == ("Food", 4, 8)


def test_span_object_pins_one_occurrence(client: TestClient) -> None:
    text = "the food was great but the food was awful"
    start, end = span(text, "food", 1)
    results = predict(client, text, [{"term": "food", "start": start, "end": end}])["results"]
    assert [(r["term"], r["start"], r["end"]) for r in results] == [("food", start, end)]


def test_explain_returns_word_attention_and_self_attention_heads(client: TestClient) -> None:
    body = predict(client, TEXT, ["wine list", "food"], explain=True)
    words = TEXT.split()
    for res in body["results"]:
        att = res["attention"]
        assert [a["token"] for a in att] == words
        assert all(TEXT[a["start"] : a["end"]] == a["token"] for a in att)
        assert sum(a["weight"] for a in att) == pytest.approx(1.0, abs=1e-4)
        assert all(a["weight"] >= 0 for a in att)
        heads = res["self_attention"]
        assert len(heads) == 2
        for head in heads:
            assert len(head) == len(words)
            assert sum(head) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("example", EXAMPLES[:6], ids=lambda e: f"{e.term}-{e.label}")
def test_model_gets_training_sentences_right(client: TestClient, example) -> None:  # type: ignore[no-untyped-def]
    aspect = {"term": example.term, "start": example.start, "end": example.end}
    (res,) = predict(client, example.text, [aspect])["results"]
    assert res["label"] == example.label


def test_model_fits_its_training_set(client: TestClient) -> None:
    by_text: dict[str, list] = {}
    for e in EXAMPLES:
        by_text.setdefault(e.text, []).append(e)
    correct = 0
    for text, exs in by_text.items():
        aspects = [{"term": e.term, "start": e.start, "end": e.end} for e in exs]
        results = predict(client, text, aspects)["results"]
        correct += sum(r["label"] == e.label for r, e in zip(results, exs, strict=True))
    assert correct / len(EXAMPLES) >= 0.95
    # the aspect decides: one sentence, two aspects, two different answers
    results = predict(client, EXAMPLES[0].text, ["food", "service"])["results"]
    assert {r["label"] for r in results} == {"positive", "negative"}


# --------------------------------------------------------------------------- /v1/predict/batch


def test_batch_keeps_item_order(client: TestClient) -> None:
    items = [
        {"text": "the pizza was great but the staff was awful", "aspects": ["staff"]},
        {"text": TEXT, "aspects": ["wine list", "food"]},
        {"text": "the service was okay", "aspects": ["service"]},
    ]
    r = client.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == "pos-scaled-selfattn:v1"
    got = [[res["term"] for res in it["results"]] for it in body["items"]]
    assert got == [["staff"], ["wine list", "food"], ["service"]]
    # the same answer as one item alone
    single = predict(client, TEXT, ["wine list", "food"])["results"]
    for got_res, alone in zip(body["items"][1]["results"], single, strict=True):
        assert got_res["scores"] == pytest.approx(alone["scores"], abs=1e-5)


def test_batch_invalid_item_names_its_index(client: TestClient) -> None:
    items = [
        {"text": TEXT, "aspects": ["food"]},
        {"text": TEXT, "aspects": ["burger"]},
    ]
    r = client.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 422
    assert "items[1]" in r.json()["detail"]


def test_batch_over_max_items_is_413(client: TestClient) -> None:
    items = [{"text": TEXT, "aspects": ["food"]}] * (LIMITS["max_items"] + 1)
    r = client.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 413
    assert str(LIMITS["max_items"]) in r.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {"items": []},
        {"items": "x"},
        {},
        {"items": [{"text": TEXT}]},
        {"items": [{"text": TEXT, "aspects": ["food"]}], "extra": 1},
    ],
    ids=["empty", "not-a-list", "missing", "item-without-aspects", "unknown-field"],
)
def test_batch_bad_body_is_422(client: TestClient, body: dict) -> None:
    r = client.post("/v1/predict/batch", json=body)
    assert r.status_code == 422
    assert r.json()["detail"]


# --------------------------------------------------------------------------- errors: 4xx, never 500

LONG = "the food was great " * (LIMITS["max_text_chars"] // 19 + 1)
MANY = "the food the service the pizza the staff the wine list"

BAD_REQUESTS = {
    "empty-text": ({"text": "", "aspects": ["food"]}, 422),
    "whitespace-text": ({"text": " \n\t ", "aspects": ["food"]}, 422),
    "text-too-long": ({"text": LONG, "aspects": ["food"]}, 413),
    "aspect-not-in-text": ({"text": TEXT, "aspects": ["burger"]}, 422),
    "blank-aspect": ({"text": TEXT, "aspects": ["  "]}, 422),
    "span-out-of-range": (
        {"text": TEXT, "aspects": [{"term": "food", "start": 40, "end": 99}]},
        422,
    ),
    "span-negative": ({"text": TEXT, "aspects": [{"term": "the", "start": -1, "end": 2}]}, 422),
    "span-empty": ({"text": TEXT, "aspects": [{"term": "", "start": 3, "end": 3}]}, 422),
    "span-not-the-term": ({"text": TEXT, "aspects": [{"term": "food", "start": 0, "end": 4}]}, 422),
    "span-only-whitespace": ({"text": TEXT, "aspects": [{"term": " ", "start": 3, "end": 4}]}, 422),
    "no-aspects": ({"text": TEXT, "aspects": []}, 422),
    "too-many-aspects": (
        {"text": MANY, "aspects": ["food", "service", "pizza", "staff", "wine list"]},
        413,
    ),
    "repeated-term-past-limit": (
        {"text": "food " * (LIMITS["max_aspects"] + 1), "aspects": ["food"]},
        413,
    ),
    "unknown-field": ({"text": TEXT, "aspects": ["food"], "lang": "en"}, 422),
    "unknown-span-field": (
        {"text": TEXT, "aspects": [{"term": "food", "start": 32, "end": 36, "x": 1}]},
        422,
    ),
    "aspects-a-number": ({"text": TEXT, "aspects": 3}, 422),
    "aspect-a-number": ({"text": TEXT, "aspects": [3]}, 422),
    "text-a-number": ({"text": 3, "aspects": ["food"]}, 422),
    "explain-not-bool": ({"text": TEXT, "aspects": ["food"], "explain": "maybe"}, 422),
    "missing-text": ({"aspects": ["food"]}, 422),
    "missing-aspects": ({"text": TEXT}, 422),
    "body-a-list": ([TEXT, ["food"]], 422),
    "body-null": (None, 422),
}


def check_error(r, status: int) -> None:  # type: ignore[no-untyped-def]
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["detail"]


@pytest.mark.parametrize(("body", "status"), BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_request_is_4xx_with_detail(client: TestClient, body: object, status: int) -> None:
    check_error(client.post("/v1/predict", json=body), status)


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b'{"text": "the food", "aspects": ["food"]', "application/json"),
        (b"\xff\xfe not utf-8", "application/json"),
        (b"", "application/json"),
        (b"text=the+food", "application/x-www-form-urlencoded"),
    ],
    ids=["truncated-json", "not-utf8", "empty-body", "form"],
)
def test_malformed_body_is_422(client: TestClient, content: bytes, content_type: str) -> None:
    r = client.post("/v1/predict", content=content, headers={"content-type": content_type})
    check_error(r, 422)


def test_body_over_limit_is_413(client: TestClient) -> None:
    text = "the food was great " * 300  # over max_body_bytes, declared in Content-Length
    r = client.post("/v1/predict", json={"text": text, "aspects": ["food"]})
    check_error(r, 413)


def test_streamed_body_over_limit_is_413(client: TestClient) -> None:
    """No Content-Length (chunked): the limit is counted on the bytes received."""

    def chunks():  # type: ignore[no-untyped-def]
        yield b'{"text": "'
        for _ in range(LIMITS["max_body_bytes"] // 100 + 1):
            yield b"x" * 100
        yield b'", "aspects": ["x"]}'

    r = client.post("/v1/predict", content=chunks(), headers={"content-type": "application/json"})
    check_error(r, 413)


def test_streamed_body_under_limit_is_served(client: TestClient) -> None:
    def chunks():  # type: ignore[no-untyped-def]
        yield b'{"text": "the food was great",'
        yield b' "aspects": ["food"]}'

    r = client.post("/v1/predict", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["term"] == "food"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/v1/predict", 405), ("POST", "/v1/nothing", 404), ("DELETE", "/healthz", 405)],
)
def test_wrong_route_or_method_is_4xx(
    client: TestClient, method: str, path: str, status: int
) -> None:
    r = client.request(method, path)
    check_error(r, status)


# --------------------------------------------------------------------------- operations


def test_healthz_and_readyz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {"status": "ready"}


def test_not_ready_before_startup(artifact) -> None:  # type: ignore[no-untyped-def]
    """Without the lifespan (no model loaded): not ready, and predict answers 503, not 500."""
    from absa.service.app import create_app

    c = TestClient(create_app(make_settings(artifact)))  # not entered: no lifespan
    assert c.get("/healthz").status_code == 200
    assert c.get("/readyz").status_code == 503
    r = c.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]})
    check_error(r, 503)
    assert "Retry-After" in r.headers


def test_model_info(client: TestClient) -> None:
    info = client.get("/v1/model").json()
    assert info["name"] == "pos-scaled-selfattn"
    assert info["version"] == "v1"
    assert info["labels"] == list(LABELS)
    assert info["created"]
    assert info["preset"] == "pos-scaled-selfattn"
    assert info["metrics"]["dev"]["accuracy"] >= 0.95
    assert info["providers"] == ["CPUExecutionProvider"]


def test_metrics_is_prometheus_text(client: TestClient) -> None:
    predict(client, TEXT, ["food"])
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    for name in (
        "absa_requests_total",
        "absa_request_latency_seconds_bucket",
        "absa_batch_size_count",
        "absa_queue_depth",
        "absa_model_info",
    ):
        assert name in r.text
    assert 'absa_requests_total{method="POST",route="/v1/predict",status="200"}' in r.text
    assert 'absa_model_info{name="pos-scaled-selfattn",version="v1"} 1.0' in r.text


def test_docs_and_openapi(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    assert "swagger" in r.text.lower()
    spec = client.get("/openapi.json").json()
    assert {"/v1/predict", "/v1/predict/batch", "/v1/model", "/healthz", "/readyz"} <= set(
        spec["paths"]
    )
