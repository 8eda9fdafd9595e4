"""The HTTP API end to end: the real app (lifespan, engine, onnxruntime) through TestClient."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
from fastapi.testclient import TestClient

from absa.model.text import LABELS
from absa.service.schemas import MAX_TERM_CHARS
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


def test_predict_returns_label_scores_and_spans(client: TestClient, artifact: Path) -> None:
    from absa.model.runtime import Runtime

    body = predict(client, TEXT, ["wine list", "food"])
    assert body["model"] == "pos-scaled-selfattn:v1"
    assert [r["term"] for r in body["results"]] == ["wine list", "food"]
    rt = Runtime.load(artifact, device="cpu", threads=1)
    probs = rt.predict_proba([(TEXT, *span(TEXT, t)) for t in ("wine list", "food")])
    for res, p in zip(body["results"], probs, strict=True):
        assert (res["start"], res["end"]) == span(TEXT, res["term"])
        assert res["label"] in LABELS
        want = {lab: round(float(x), 6) for lab, x in zip(rt.labels, p, strict=True)}
        assert res["scores"] == want  # the model's own, to 6 places
        assert res["score"] == res["scores"][res["label"]]
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


def test_lookup_folds_case_fully_and_reports_the_text_as_written(client: TestClient) -> None:
    """str.casefold's equalities: "STRASSE" is "Straße" (a term "STRASSE" did "not occur"), and
    the span is the text's own characters, however many the folding made of them."""
    text = "Die Straße war laut, die STRASSE auch, das \ufb01sh war gut"
    results = predict(client, text, ["strasse", "FISH"])["results"]
    assert [(r["term"], r["start"], r["end"]) for r in results] == [
        ("Straße", *span(text, "Straße")),
        ("STRASSE", *span(text, "STRASSE")),
        ("\ufb01sh", *span(text, "\ufb01sh")),
    ]
    capital = predict(client, text, ["STRA\u1e9eE"])["results"]  # the capital sharp s
    assert [r["term"] for r in capital] == ["Straße", "STRASSE"]


def test_span_object_pins_one_occurrence(client: TestClient) -> None:
    text = "the food was great but the food was awful"
    start, end = span(text, "food", 1)
    results = predict(client, text, [{"term": "food", "start": start, "end": end}])["results"]
    assert [(r["term"], r["start"], r["end"]) for r in results] == [("food", start, end)]


@pytest.mark.parametrize("mark", ["\u00ad", "\u2060", "\u200d", "\u200b", "\u200e", "\ufeff"])
def test_a_pinned_span_of_only_an_invisible_character_is_refused_naming_its_aspect(
    client: TestClient, mark: str
) -> None:
    """A span pinned on a soft hyphen or word joiner alone was answered (200, neutral, 0.92
    of the attention on the invisible "token"); a zero-width space was refused, but without
    the aspects[i] every other aspect error names. The string form said "the aspect is
    empty" for both."""
    text = f"the food {mark} was great"
    pin = {"term": mark, "start": 9, "end": 10}
    r = client.post("/v1/predict", json={"text": text, "aspects": ["food", pin]})
    assert r.status_code == 422, r.text
    assert (
        r.json()["detail"] == "aspects[1]: the aspect is empty: it holds only invisible characters"
    )


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


def test_attention_of_a_long_text_is_the_window_the_model_read(client: TestClient) -> None:
    """A text of more words than the model reads: the attention names the words of the window
    around the aspect, not every word, as the schema says (it said "weight per word")."""
    text = "the food was great " + "a " * 130 + "wine list"  # within max_text_chars
    (res,) = predict(client, text, ["wine list"], explain=True)["results"]
    att = res["attention"]
    assert 0 < len(att) < len(text.split())
    assert all(text[a["start"] : a["end"]] == a["token"] for a in att)
    assert [a["start"] for a in att] == sorted(a["start"] for a in att)
    assert att[0]["start"] <= res["start"] and res["end"] <= att[-1]["end"]
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert "window" in schemas["AspectResult"]["properties"]["attention"]["description"]


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


@pytest.fixture(scope="module")
def wide(artifact) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """The app with room for more batch items."""
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, max_items=8))) as c:
        yield c


def post_json(client: TestClient, path: str, body: object) -> httpx.Response:
    """``body`` as ASCII JSON: a lone surrogate travels as a \\u escape, as any client may."""
    raw = json.dumps(body).encode()
    return client.post(path, content=raw, headers={"content-type": "application/json"})


def item_errors(client: TestClient) -> dict[str, float]:
    prefix = 'absa_batch_item_errors_total{status="'
    return {
        line[len(prefix) :].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in client.get("/metrics").text.splitlines()
        if line.startswith(prefix)
    }


def test_batch_bad_item_gets_an_error_in_its_place(wide: TestClient) -> None:
    """One bad item does not refuse the others: it gets {"error": {status, detail}}."""
    client = wide
    items = [
        {"text": TEXT, "aspects": ["food"]},
        {"text": TEXT, "aspects": ["burger"]},  # not in the text: 422
        {"text": LONG, "aspects": ["food"]},  # over max_text_chars: 413
        {"text": 3, "aspects": ["food"]},  # not the schema: 422 with errors
        {"text": "the food \ud800", "aspects": ["food"]},  # a lone surrogate
        {"text": TEXT, "aspects": ["wine list"]},
    ]
    before = item_errors(client)
    r = post_json(client, "/v1/predict/batch", {"items": items})
    assert r.status_code == 200, r.text
    got = r.json()["items"]
    assert len(got) == len(items)
    # counted: absa_requests shows only the batch's 200
    after = item_errors(client)
    assert {k: after[k] - before.get(k, 0.0) for k in after} == {"413": 1.0, "422": 3.0}
    assert [res["term"] for res in got[0]["results"]] == ["food"]
    assert [res["term"] for res in got[5]["results"]] == ["wine list"]
    assert got[1]["error"]["status"] == 422
    assert "items[1]" in got[1]["error"]["detail"]
    assert "'burger' does not occur" in got[1]["error"]["detail"]
    assert got[2]["error"]["status"] == 413
    assert got[3]["error"]["status"] == 422
    assert got[3]["error"]["errors"][0]["loc"] == ["body", "items", 3, "text"]
    assert got[4]["error"]["status"] == 422
    for entry in got[1:5]:
        assert set(entry) == {"error"}
        assert isinstance(entry["error"]["detail"], str)
    # the answers are the same as without the bad items
    alone = predict(client, TEXT, ["food"])["results"]
    assert got[0]["results"][0]["scores"] == pytest.approx(alone[0]["scores"], abs=1e-5)


def test_batch_of_only_bad_items_is_answered_item_by_item(wide: TestClient) -> None:
    client = wide
    items = [{"text": TEXT, "aspects": ["burger"]}, {"text": TEXT}, 3, None]
    r = client.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    assert [e["error"]["status"] for e in r.json()["items"]] == [422] * 4


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
        {"items": [{"text": TEXT, "aspects": ["food"]}], "extra": 1},
    ],
    ids=["empty", "not-a-list", "missing", "unknown-field"],
)
def test_batch_bad_body_is_422(client: TestClient, body: dict) -> None:
    """A body that is not a batch at all fails whole."""
    check_error(client.post("/v1/predict/batch", json=body), 422)


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
    # strict types: nothing is coerced
    "explain-yes": ({"text": TEXT, "aspects": ["food"], "explain": "yes"}, 422),
    "explain-0": ({"text": TEXT, "aspects": ["food"], "explain": 0}, 422),
    "start-a-float": (
        {"text": TEXT, "aspects": [{"term": "food", "start": 32.0, "end": 36}]},
        422,
    ),
    "end-a-string": ({"text": TEXT, "aspects": [{"term": "food", "start": 32, "end": "36"}]}, 422),
    # a term longer than the text (or than any term can be) is refused before any lookup
    "aspect-longer-than-text": ({"text": "the food", "aspects": ["the food was great"]}, 422),
    "aspect-over-max-length": ({"text": TEXT, "aspects": ["food " * 50]}, 422),
}


def test_an_empty_list_of_aspects_is_one_issue_that_says_what_to_send(client: TestClient) -> None:
    """`"aspects": []` was two issues, pydantic's "at least 1 item" and "Input should be
    'auto'", the second pointing nowhere a client could go."""
    r = client.post("/v1/predict", json={"text": TEXT, "aspects": []})
    assert r.status_code == 422
    body = r.json()
    assert len(body["errors"]) == 1, body
    assert "at least one aspect" in body["detail"] and '"auto"' in body["detail"], body


def check_error(r, status: int) -> None:  # type: ignore[no-untyped-def]
    """The one documented error shape: {"detail": str, "errors": [{loc, msg, type}]?}."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert isinstance(body["detail"], str) and body["detail"]
    assert set(body) <= {"detail", "errors"}
    for issue in body.get("errors", []):
        assert set(issue) == {"loc", "msg", "type"}
    if status == 503:
        assert r.headers["Retry-After"]


@pytest.mark.parametrize(("body", "status"), BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_request_is_4xx_with_detail(client: TestClient, body: object, status: int) -> None:
    check_error(client.post("/v1/predict", json=body), status)


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b'{"text": "the food", "aspects": ["food"]', "application/json"),
        (b"\xff\xfe not utf-8", "application/json"),
        (b"", "application/json"),
        (b"null", "application/json"),
    ],
    ids=["truncated-json", "not-utf8", "empty-body", "null"],
)
def test_malformed_body_is_422(client: TestClient, content: bytes, content_type: str) -> None:
    r = client.post("/v1/predict", content=content, headers={"content-type": content_type})
    check_error(r, 422)


@pytest.mark.parametrize("path", ["/v1/predict", "/v1/predict/batch"])
@pytest.mark.parametrize(
    "content_type", [None, "application/x-www-form-urlencoded", "text/plain"], ids=str
)
def test_body_not_sent_as_json_is_415(client: TestClient, path: str, content_type) -> None:  # type: ignore[no-untyped-def]
    headers = {} if content_type is None else {"content-type": content_type}
    r = client.post(path, content=b'{"text": "the food", "aspects": ["food"]}', headers=headers)
    check_error(r, 415)


def test_json_content_type_with_charset_is_served(client: TestClient) -> None:
    r = client.post(
        "/v1/predict",
        content=b'{"text": "the food", "aspects": ["food"]}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert r.status_code == 200, r.text
    assert [(x["term"], x["start"]) for x in r.json()["results"]] == [("food", 4)]


SURROGATES = {
    "text": {"text": "the food \ud800 was good", "aspects": ["food"]},
    "text-explain": {"text": "the food \ud800 was good", "aspects": ["food"], "explain": True},
    "aspect": {"text": "the food was good", "aspects": ["\ud800"]},
    "aspect-in-text": {"text": "the food \ud800 was good", "aspects": ["\ud800"]},
    "pinned": {"text": "the \udfff food", "aspects": [{"term": "\udfff", "start": 4, "end": 5}]},
}


@pytest.mark.parametrize("body", SURROGATES.values(), ids=SURROGATES.keys())
def test_lone_surrogate_is_422_with_json_detail(client: TestClient, body: dict) -> None:
    check_error(post_json(client, "/v1/predict", body), 422)
    r = post_json(
        client, "/v1/predict/batch", {"items": [body, {"text": TEXT, "aspects": ["food"]}]}
    )
    assert r.status_code == 200, r.text
    first, second = r.json()["items"]
    assert first["error"]["status"] == 422
    assert second["results"][0]["term"] == "food"


def test_huge_aspect_is_refused_at_once_and_not_echoed(artifact) -> None:  # type: ignore[no-untyped-def]
    from absa.service.app import create_app

    settings = make_settings(artifact, max_body_bytes=2_000_000)
    with TestClient(create_app(settings)) as c:
        for aspect in ["x" * 990_000, {"term": "x" * 990_000, "start": 0, "end": 990_000}]:
            t0 = time.perf_counter()
            r = c.post("/v1/predict", json={"text": TEXT, "aspects": [aspect]})
            assert time.perf_counter() - t0 < 0.5
            check_error(r, 422)
            assert len(r.content) < 1000  # the term is not echoed whole


def test_error_messages_echo_a_short_piece_of_the_input(client: TestClient) -> None:
    text = "a" * 250 + " food"
    r = client.post(
        "/v1/predict", json={"text": text, "aspects": [{"term": "food", "start": 0, "end": 200}]}
    )
    check_error(r, 422)
    assert len(r.json()["detail"]) < 200


def test_explain_is_bounded_per_request(artifact) -> None:  # type: ignore[no-untyped-def]
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, max_explain_aspects=2))) as c:
        body = {"text": TEXT, "aspects": ["wine list", "food", "the"], "explain": True}
        r = c.post("/v1/predict", json=body)
        check_error(r, 413)
        assert r.json()["detail"] == (  # the numbers, as the other limits say them
            "too many aspects with explain (4 in this request, each occurrence counted; the "
            "limit is 2, the "
            "max_explain_aspects setting): ask for explain on fewer aspects"
        )
        body["explain"] = False
        assert c.post("/v1/predict", json=body).status_code == 200
        items = [{"text": TEXT, "aspects": ["food", "wine list"], "explain": True}] * 2
        got = c.post("/v1/predict/batch", json={"items": items}).json()["items"]
        assert len(got[0]["results"]) == 2
        assert got[1]["error"] == {
            "status": 413,
            "detail": "items[1]: too many aspects with explain (4 in this request, each "
            "occurrence counted; the limit "
            "is 2, the max_explain_aspects setting): ask for explain on fewer aspects",
        }


def test_schema_states_what_is_refused(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    req = schemas["PredictRequest"]["properties"]
    assert req["text"]["minLength"] == 1
    for key in ("aspects", "categories"):  # optional: one or the other
        (listed,) = [x for x in req[key]["anyOf"] if x.get("type") == "array"]
        assert listed["minItems"] == 1  # a list is never empty; aspects left out: extracted
    assert {"const": "auto", "type": "string"} in req["aspects"]["anyOf"]
    assert schemas["BatchRequest"]["properties"]["items"]["minItems"] == 1
    span = schemas["AspectSpan"]["properties"]
    assert span["term"]["maxLength"] == MAX_TERM_CHARS
    assert span["start"]["minimum"] == 0
    err = schemas["ErrorResponse"]["properties"]
    assert err["detail"]["type"] == "string"


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
    check_error(c.get("/readyz"), 503)  # the one error shape, with Retry-After
    assert "Retry-After" in c.get("/readyz").headers
    r = c.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]})
    check_error(r, 503)
    assert "Retry-After" in r.headers


def test_model_info(client: TestClient, artifact) -> None:  # type: ignore[no-untyped-def]
    info = client.get("/v1/model").json()
    assert info["name"] == "pos-scaled-selfattn"
    assert info["version"] == "v1"
    assert info["labels"] == list(LABELS)
    assert info["created"]
    assert info["preset"] == "pos-scaled-selfattn"
    assert info["metrics"]["dev"]["accuracy"] >= 0.95
    assert info["providers"] == ["CPUExecutionProvider"]
    meta = json.loads((artifact / "metadata.json").read_text())
    # the served graph's dev scores beside the trained network's (they part where export
    # changed the network: 1.8.0's dev accuracy 77.68 trained, 78.11 as served)
    parity = meta["parity"]
    assert info["metrics"]["served_dev"] == {
        "n": parity["n"],
        "accuracy": parity["dev_accuracy_onnx"],
        "macro_f1": parity["dev_macro_f1_onnx"],
    }
    canonical = json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert info["digest"] == hashlib.sha256(canonical.encode()).hexdigest()
    cal = info["calibration"]
    assert cal["temperature"] == meta["calibration"]["temperature"] != 1.0
    shown = {k: v for k, v in cal["dev"].items() if v is not None}
    assert cal["bins"] == 15 and shown == meta["calibration"]["dev"] and cal["test"] == {}
    # the limits the server enforces, so a client need not learn them from 413s
    from absa.settings import Settings

    explain = Settings.model_fields["max_explain_aspects"].default
    queued = info["limits"].pop("max_request_aspects")
    assert info["limits"] == {**LIMITS, "max_term_chars": 200, "max_explain_aspects": explain}
    assert queued == 6144  # the default queue of 8192 less the quarter kept for light requests


@pytest.mark.parametrize(("max_queue", "queued"), [(40, 30), (8, 4), (100, 75)])
def test_the_model_info_says_how_many_aspects_one_request_may_queue(
    artifact: Path, max_queue: int, queued: int
) -> None:
    """The limit a batch of many items meets (413 "split it"), which the settings do not
    say by themselves: a request over one onnxruntime batch may take only part of the queue.
    One more aspect than it says is refused; as many as it says are not."""
    from absa.service.app import create_app

    settings = make_settings(
        artifact,
        max_queue=max_queue,
        max_batch_size=4,
        max_items=100,
        max_aspects=1,
        max_body_bytes=100_000,
    )
    item = {"text": "the food was great", "aspects": ["food"]}
    with TestClient(create_app(settings)) as c:
        assert c.get("/v1/model").json()["limits"]["max_request_aspects"] == queued
        r = c.post("/v1/predict/batch", json={"items": [item] * (queued + 1)})
        assert r.status_code == 413 and "split it" in r.json()["detail"], r.text[:300]
        r = c.post("/v1/predict/batch", json={"items": [item] * queued})
        assert r.status_code == 200, r.text[:300]


def test_each_limit_says_the_status_past_it(client: TestClient) -> None:
    """/v1/model's limits were all "refused beyond with 413", but a term over
    max_term_chars fails the schema's maxLength: a 422, as its description now says."""
    limit = client.get("/v1/model").json()["limits"]["max_term_chars"]
    long_term = {"text": "a" * (limit + 1), "aspects": ["a" * (limit + 1)]}
    check_error(client.post("/v1/predict", json=long_term), 422)
    limits = client.get("/openapi.json").json()["components"]["schemas"]["Limits"]
    assert "422" in limits["properties"]["max_term_chars"]["description"]


def test_model_info_of_the_shipped_model_shows_test_set_calibration() -> None:
    from absa.model.runtime import DEFAULT_MODEL_DIR
    from absa.service.app import create_app

    meta = json.loads((DEFAULT_MODEL_DIR / "metadata.json").read_text())
    with TestClient(create_app(make_settings(DEFAULT_MODEL_DIR))) as c:
        cal = c.get("/v1/model").json()["calibration"]
    assert cal["temperature"] == meta["calibration"]["temperature"]
    assert cal["fitted_on"].startswith(meta["train"]["dev_split"])  # the run's own dev split
    assert cal["fitted_on"].startswith("10% of") and "held out with seed 1" in cal["fitted_on"]
    assert set(cal["test"]) == {"rest14", "lap14", "twitter", "mams", "all"}
    shown = {k: v for k, v in cal["test"]["lap14"].items() if v is not None}
    assert shown == meta["calibration"]["test"]["lap14"]
    assert (cal["top_map"] is None) == ("top_map" not in meta["calibration"])
    # the training machine's paths stay out: dev.by_source was keyed by them
    assert "../shared" in json.dumps(meta["metrics"])
    with TestClient(create_app(make_settings(DEFAULT_MODEL_DIR))) as c:
        info = c.get("/v1/model").json()
    assert "../" not in json.dumps(info["metrics"])
    assert "mams/train.xml" in info["metrics"]["dev"]["by_source"]


def test_model_info_of_an_artifact_without_calibration(artifact, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An artifact exported before temperature scaling serves, with no calibration shown."""
    from absa.model import artifact as art
    from absa.service.app import create_app

    old = tmp_path / "old"
    shutil.copytree(artifact, old)
    meta = art.read_metadata(old)
    del meta["calibration"]
    art.write_metadata(old, meta)
    with TestClient(create_app(make_settings(old))) as c:
        assert c.get("/v1/model").json()["calibration"] is None
        assert predict(c, TEXT, ["food"])["results"][0]["label"] in LABELS


def test_model_info_of_an_artifact_exported_without_calibration(
    trained_run: Path, tmp_path: Path
) -> None:
    """``absa export --no-calibrate`` was shown as calibrated: temperature 1 "fitted on"
    the run's dev split (``fitted: false`` was no field of the schema, so it was dropped).
    Nothing was fitted: /v1/model shows no calibration and the metadata claims no fit."""
    from absa.service.app import create_app
    from absa.training.exporting import export_run

    meta = export_run(trained_run, tmp_path / "raw", version="raw", calibrate=False)
    assert meta["calibration"]["fitted"] is False and "fitted_on" not in meta["calibration"]
    with TestClient(create_app(make_settings(tmp_path / "raw"))) as c:
        assert c.get("/v1/model").json()["calibration"] is None
        assert predict(c, TEXT, ["food"])["results"][0]["label"] in LABELS


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
    # and its digest, the artifact's as /v1/model gives it: a reused version name is told apart
    digest = client.get("/v1/model").json()["digest"][:12]
    info = f'absa_model_info{{digest="{digest}",name="pos-scaled-selfattn",version="v1"}} 1.0'
    assert info in r.text, r.text


def test_the_latency_of_refusals_is_apart_from_the_answers(artifact: Path) -> None:
    """absa_request_latency_seconds had no status: fast 401/413/422 refusals pulled down
    the p99 that AbsaSlowPredictions and the dashboard read, hiding slow predictions. Each
    observation carries its status class (2xx, 4xx, 5xx: a bounded label)."""
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact))) as c:
        assert predict(c, TEXT, ["food"])["results"]
        for _ in range(3):
            assert c.post("/v1/predict", json={"text": TEXT, "aspects": 7}).status_code == 422
        text = c.get("/metrics").text
    latency = 'absa_request_latency_seconds_count{route="/v1/predict",status_class="%s"}'
    assert f"{latency % '2xx'} 1.0" in text, text
    assert f"{latency % '4xx'} 3.0" in text, text


def test_metrics_has_the_process_and_no_created_series(client: TestClient) -> None:
    """The app's own registry left out prometheus_client's process and runtime collectors
    (no memory, CPU or file descriptors of the server), and every counter and histogram
    had a ``_created`` series beside it, doubling the series for nothing."""
    text = client.get("/metrics").text
    for name in (
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "python_gc_objects_collected_total",
        "python_info",
    ):
        assert f"\n{name}" in text, name
    assert "_created" not in text


def test_docs_and_openapi(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    assert "swagger" in r.text.lower()
    assert "cdn" not in r.text.lower()
    assert client.get("/redoc").status_code == 404  # no page that needs a CDN
    # every file the page names (script, style sheet, icon) is served: the asset package's
    # file names are the page's own (its favicon was named for swagger-ui-py's)
    named = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert len(named) >= 3, named
    for url in named:
        assert client.get(urljoin("/docs", url)).status_code == 200, url
    spec = client.get("/openapi.json").json()
    assert {"/v1/predict", "/v1/predict/batch", "/v1/model", "/healthz", "/readyz"} <= set(
        spec["paths"]
    )
    # every error an integrator can meet is documented with the one error shape
    error = {"$ref": "#/components/schemas/ErrorResponse"}
    documented = (
        ("/v1/predict", "408 413 415 422 500 503"),
        ("/v1/model", "503"),
        ("/healthz", "503"),
    )
    for path, codes in documented:
        responses = next(iter(spec["paths"][path].values()))["responses"]
        for code in codes.split():
            assert responses[code]["content"]["application/json"]["schema"] == error, (path, code)


def test_the_documented_example_is_answered(client: TestClient) -> None:
    """Swagger sends every field's example: with categories among them, the example it
    built was refused ("aspects or categories, not both")."""
    props = client.get("/openapi.json").json()["components"]["schemas"]["PredictRequest"]
    body = {k: v["examples"][0] for k, v in props["properties"].items() if "examples" in v}
    assert set(body) == {"text", "aspects"}
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 200, r.text
    assert [x["term"] for x in r.json()["results"]] == body["aspects"]


def test_the_schema_says_aspects_and_categories_do_not_go_together(client: TestClient) -> None:
    """The service refuses both at once (422) while the schema allowed them: a generated
    client, or schemathesis (ST202), sent them."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = client.get("/openapi.json").json()
    request = schema["components"]["schemas"]["PredictRequest"]
    assert request["not"]["required"] == ["aspects", "categories"]
    both = {"text": "the food", "aspects": ["food"], "categories": ["food"]}
    root = {"$ref": "#/components/schemas/PredictRequest", "components": schema["components"]}
    validator = jsonschema.Draft202012Validator(root)
    assert not validator.is_valid(both)
    for one in ("aspects", "categories"):
        assert validator.is_valid({k: v for k, v in both.items() if k != one}), one
        # one of them null, as a generated client writes every field out: the server takes
        # it, and the schema refused it (from the OpenAPI review)
        nulled = {**both, one: None}
        assert validator.is_valid(nulled), one
        if one == "categories":  # the service has no category model here
            assert client.post("/v1/predict", json=nulled).status_code == 200
    r = client.post("/v1/predict", json=both)
    assert r.status_code == 422 and "not both" in r.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/predict", {"text": "the food", "aspects": ["food"]}),
        ("/v1/predict/batch", {"items": [{"text": "the food", "aspects": ["food"]}]}),
    ],
)
@pytest.mark.parametrize(
    ("query", "name"),
    [("explain=true", "explain"), ("foo=1&explain=true", "foo"), ("debug", "debug"), ("&", "")],
)
def test_a_query_string_on_the_api_is_refused(
    client: TestClient, path: str, body: dict, query: str, name: str
) -> None:
    """POST /v1/predict?explain=true was answered 200 without attention: the query string
    was passed over, while an unknown field in the body is a 422."""
    r = client.post(f"{path}?{query}", json=body)
    assert r.status_code == 422, r.text
    said = r.json()
    assert set(said) == {"detail"}, said
    assert f'"{name}"' in said["detail"] if name else "query string" in said["detail"]
    assert "JSON body" in said["detail"], said
    assert r.headers["x-request-id"]
    assert client.post(path, json=body).status_code == 200  # the same without it
    assert client.post(f"{path}?", json=body).status_code == 200  # an empty one is none


def test_a_query_string_on_a_get_route_is_passed_over(client: TestClient) -> None:
    for path in ("/v1/model", "/healthz", "/readyz", "/docs", "/openapi.json"):
        assert client.get(f"{path}?x=1").status_code == 200, path


def test_every_whole_request_example_is_answered(client: TestClient) -> None:
    """The request examples /docs offers (Swagger UI's "Try it out" sends the first)."""
    schema = client.get("/openapi.json").json()
    media = schema["paths"]["/v1/predict"]["post"]["requestBody"]["content"]["application/json"]
    assert len(media["examples"]) >= 2
    for example in media["examples"].values():
        assert client.post("/v1/predict", json=example["value"]).status_code == 200


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            {"text": "the burger", "aspects": [{"term": "burger", "start": "4", "end": 10}]},
            "invalid request: body.aspects.0.start: Input should be a valid integer",
        ),
        (b"{bad", "JSON decode error: Expecting property name enclosed in double quotes"),
    ],
)
def test_a_bad_body_says_where_and_why(client: TestClient, body: object, words: str) -> None:
    """An aspect object with a bad field was reported as "aspects.list[union[...]].0.
    constrained-str: Input should be a valid string"; bad JSON without the parser's reason."""
    if isinstance(body, bytes):
        r = client.post("/v1/predict", content=body, headers={"content-type": "application/json"})
    else:
        r = client.post("/v1/predict", json=body)
    assert r.status_code == 422 and words in r.json()["detail"], r.json()
    assert not any("union" in str(x) for e in r.json().get("errors", []) for x in e["loc"])


def test_a_compressed_body_is_415_not_a_bad_json_422(client: TestClient) -> None:
    import gzip

    raw = json.dumps({"text": TEXT, "aspects": ["food"]}).encode()
    for body in (gzip.compress(raw), raw):  # gzip'd, or plain but labelled gzip
        r = client.post(
            "/v1/predict",
            content=body,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
        assert r.status_code == 415 and "uncompressed" in r.json()["detail"]
    headers = {"content-type": "application/json", "content-encoding": "identity"}
    assert client.post("/v1/predict", content=raw, headers=headers).status_code == 200


def test_head_answers_where_get_does(client: TestClient) -> None:
    """The page and /metrics too (an uptime check of the page, a scraper's HEAD): 405."""
    for path in ("/healthz", "/readyz", "/v1/model", "/", "/metrics"):
        r = client.head(path)
        assert r.status_code == 200 and r.content == b"", path
        assert r.headers["content-type"] == client.get(path).headers["content-type"], path


def test_a_405_allows_every_method_the_path_answers(client: TestClient) -> None:
    """HEAD has a route of its own beside GET: the 405 said "Allow: GET", the first route's
    methods, where RFC 9110 asks for every method the resource supports."""
    for path in ("/healthz", "/readyz", "/v1/model", "/", "/metrics"):
        r = client.delete(path)
        check_error(r, 405)
        assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "HEAD"}, path
    assert client.get("/v1/predict").headers["allow"] == "POST"
    assert client.post("/static/index.html").headers["allow"] == "GET, HEAD"


def test_a_server_error_carries_the_request_id(artifact) -> None:  # type: ignore[no-untyped-def]
    """A 500 is answered outside the layer that adds X-Request-ID to every other answer."""
    from absa.service.app import create_app

    app = create_app(make_settings(artifact))

    async def boom() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/v1/boom", boom, methods=["GET"])  # a route that fails, for the test
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/v1/boom", headers={"X-Request-ID": "req-500"})
    assert r.status_code == 500 and r.json() == {"detail": "internal error"}
    assert r.headers["x-request-id"] == "req-500"


def test_every_answer_carries_a_request_id(client: TestClient) -> None:
    """The client's X-Request-ID is echoed (a plain token), else one is made, on answers and
    refusals alike, so a report can name the request."""
    body = {"text": "the food was great", "aspects": ["food"]}
    r = client.post("/v1/predict", json=body, headers={"X-Request-ID": "abc-123.x:y"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "abc-123.x:y"
    made = client.post("/v1/predict", json=body).headers["x-request-id"]
    assert re.fullmatch("[0-9a-f]{32}", made), made
    for bad in ("a b", "x" * 129, "a/b"):
        r = client.post("/v1/predict", json={"text": ""}, headers={"X-Request-ID": bad})
        assert r.status_code == 422 and r.headers["x-request-id"] not in (bad, made)
    assert client.get("/healthz", headers={"X-Request-ID": "h1"}).headers["x-request-id"] == "h1"


def test_the_readme_names_every_metric_and_only_real_ones() -> None:
    from absa.service.metrics import Metrics

    types = re.findall(r"^# TYPE (\S+)", Metrics().expose().decode(), re.M)
    exposed = {t.removesuffix("_total") for t in types if t.startswith("absa_")}
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    named = {n.removesuffix("_total") for n in re.findall(r"`(absa_[a-z_]+)", readme)}
    assert named == exposed
    assert "process_resident_memory_bytes" in readme  # prometheus_client's, said once


@pytest.mark.parametrize(
    ("aspects", "more"),
    [
        (["a" * 250], ""),  # one problem, reported once per member of the union it fits none of
        (["a" * 250, "b" * 250], " (and 1 more)"),
        ([{"term": "food", "start": "x", "end": 9}], ""),
    ],
)
def test_the_count_of_more_problems_is_of_problems_not_union_members(
    client: TestClient, aspects: list, more: str
) -> None:
    """One aspect over the length limit said "(and 2 more)": pydantic's errors for the
    union's other members (an aspect object, "auto")."""
    r = client.post("/v1/predict", json={"text": "good food " * 20, "aspects": aspects})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail.endswith("characters" + more) or detail.endswith("integer" + more), detail


def test_metrics_give_the_confidence_of_the_answers(artifact: Path) -> None:
    """absa_confidence{label}: the probability of each answer's label. The probabilities are
    calibrated, so the mean over live traffic is the accuracy to expect on it (a fall is
    traffic the model does not know); absa_aspects_total counted labels alone."""
    from absa.service.app import create_app
    from tests.service.conftest import make_settings
    from tests.service.test_reload import metric_samples

    with TestClient(create_app(make_settings(artifact))) as c:
        one = predict(c, TEXT, ["food", "wine list"])
        answers = [
            *one["results"],
            *c.post(
                "/v1/predict/batch", json={"items": [{"text": TEXT, "aspects": ["food"]}]}
            ).json()["items"][0]["results"],
        ]
        text = c.get("/metrics").text
    # the model as the answers name it: after a reload the new one's series are its own, to
    # compare with the old one's (from the monitoring review)
    model = one["model"]
    for label in {a["label"] for a in answers}:
        mine = [a["score"] for a in answers if a["label"] == label]
        samples = {
            name: value
            for name in ("absa_confidence_count", "absa_confidence_sum", "absa_aspects_total")
            for labels, value in metric_samples(text, name)
            if labels == {"label": label, "model": model}
        }
        assert samples["absa_aspects_total"] == len(mine), (label, samples)
        assert samples["absa_confidence_count"] == len(mine), (label, samples)
        assert abs(samples["absa_confidence_sum"] - sum(mine)) < 1e-6
    buckets = {float(labels["le"]) for labels, _ in metric_samples(text, "absa_confidence_bucket")}
    assert {0.5, 0.9, float("inf")} <= buckets and min(buckets) > 1 / 3  # a top label's range


def test_the_schema_declares_the_headers_and_probe_bodies_answers_carry(
    client: TestClient,
) -> None:
    """X-Request-ID on every answer, Retry-After on a 503 and the probes' bodies were sent
    but not declared: a generated client exposed none of them (from the OpenAPI review)."""
    schema = client.get("/openapi.json").json()
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                headers = response["headers"]
                assert "X-Request-ID" in headers, (path, status)
                assert ("Retry-After" in headers) == (status == "503"), (path, status)
    assert "Retry-After" in schema["paths"]["/v1/predict"]["post"]["responses"]["503"]["headers"]
    for path, body in (("/healthz", {"status": "ok"}), ("/readyz", {"status": "ready"})):
        ok = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        assert ok["schema"] == {"$ref": "#/components/schemas/Status"}, path
        r = client.get(path)
        assert r.json() == body and r.headers["X-Request-ID"], path
    status = schema["components"]["schemas"]["Status"]["properties"]["status"]
    assert set(status["enum"]) == {"ok", "ready"}
