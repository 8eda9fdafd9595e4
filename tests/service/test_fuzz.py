"""Fuzzing the HTTP API: schemathesis generates requests from the real app's /openapi.json
(valid ones and invalid ones) and hypothesis sends aspect spans into arbitrary unicode text.
Whatever comes in, the answer is never a 5xx, and every 4xx carries a JSON ``detail``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from absa.service.app import create_app
from tests.service.conftest import make_settings

TOKEN = "t"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BODY_OPERATIONS = [
    ("POST", "/v1/predict"),
    ("POST", "/v1/predict/batch"),
    ("POST", "/admin/reload"),
]
PLAIN_OPERATIONS = [("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/v1/model")]
FUZZ = settings(
    max_examples=50,
    deadline=None,
    database=None,  # no example database: no run depends on an earlier one (CI=true derandomizes)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="module")
def schema(artifact: Path) -> Iterator[schemathesis.schemas.BaseSchema]:
    """The OpenAPI schema of the real app (admin on); schemathesis runs its lifespan."""
    app = create_app(make_settings(artifact, admin_token=TOKEN))
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    from schemathesis.python import asgi

    asgi.shutdown_lifespans()  # stop the engine it started for the app


def test_the_schema_lists_every_operation(schema: schemathesis.schemas.BaseSchema) -> None:
    found = {(op.ok().method.upper(), op.ok().path) for op in schema.get_all_operations()}
    assert found == set(BODY_OPERATIONS + PLAIN_OPERATIONS)


@pytest.mark.parametrize(
    ("method", "path", "mode"),
    [(m, p, mode) for m, p in BODY_OPERATIONS for mode in ("positive", "negative")]
    + [(m, p, "positive") for m, p in PLAIN_OPERATIONS],
)
def test_no_server_errors(
    schema: schemathesis.schemas.BaseSchema, method: str, path: str, mode: str
) -> None:
    operation = schema[path][method]
    statuses: set[int] = set()

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
    def check(case) -> None:  # type: ignore[no-untyped-def]
        r = case.call(headers=AUTH)
        statuses.add(r.status_code)
        assert r.status_code < 500, f"{r.status_code}: {r.text}\n{case.as_curl_command()}"
        if r.status_code >= 400:
            assert isinstance(r.json()["detail"], str), r.text

    check()
    assert statuses  # something was sent


# --------------------------------------------------------------------------- spans into any text

#: any character, lone surrogates included (JSON can carry them as \\u escapes)
ANY_CHAR = st.one_of(st.characters(), st.characters(categories=["Cs"]))


def valid_unicode(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@st.composite
def span_requests(draw: st.DrawFn) -> dict:
    """Any text (sometimes with a lone surrogate) and an aspect that is a span of it (pinned,
    or looked up as a string)."""
    text = draw(st.text(ANY_CHAR, min_size=1, max_size=120))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.characters(categories=["Cs"])) + text[at:]
    # a high surrogate followed by a low one travels as two \u escapes that JSON decodes as ONE
    # valid character ("\ud800\udc00" is U+10000): the server sees another text than this
    assume(json.loads(json.dumps(text)) == text)
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    term = text[start:end]
    aspect = draw(st.sampled_from([{"term": term, "start": start, "end": end}, term]))
    return {"text": text, "aspects": [aspect], "explain": draw(st.booleans())}


def post(client: TestClient, path: str, body: object):  # type: ignore[no-untyped-def]
    """ASCII JSON: a lone surrogate travels as a \\u escape (httpx would refuse to encode it)."""
    raw = json.dumps(body).encode()
    return client.post(path, content=raw, headers={"content-type": "application/json"})


def check_error(r) -> None:  # type: ignore[no-untyped-def]
    assert r.headers["content-type"].startswith("application/json"), r.text
    assert isinstance(r.json()["detail"], str)


@FUZZ
@given(body=span_requests())
def test_any_span_of_any_text(client: TestClient, body: dict) -> None:
    r = post(client, "/v1/predict", body)
    assert r.status_code in (200, 413, 422), r.text
    if not valid_unicode(body["text"]):
        assert r.status_code == 422, r.text
    if r.status_code != 200:
        check_error(r)
        return
    results = r.json()["results"]
    aspect = body["aspects"][0]
    if isinstance(aspect, dict):
        assert [(x["start"], x["end"]) for x in results] == [(aspect["start"], aspect["end"])]
    assert 1 <= len(results) <= 4  # the limit on aspects (repeats counted)
    for res in results:
        assert body["text"][res["start"] : res["end"]] == res["term"]
        assert sum(res["scores"].values()) == pytest.approx(1.0, abs=1e-4)
        assert (res["attention"] is not None) == body["explain"]


@FUZZ
@given(body=span_requests())
def test_any_span_of_any_text_in_a_batch(client: TestClient, body: dict) -> None:
    """The same inputs as one item of a batch: that item is answered or gets its own error;
    the other item is answered."""
    good = {"text": "the food was great", "aspects": ["food"]}
    r = post(client, "/v1/predict/batch", {"items": [body, good]})
    assert r.status_code == 200, r.text
    first, second = r.json()["items"]
    assert second["results"][0]["term"] == "food"
    if "error" in first:
        assert first["error"]["status"] in (413, 422)
        assert isinstance(first["error"]["detail"], str)
    else:
        assert valid_unicode(body["text"])
