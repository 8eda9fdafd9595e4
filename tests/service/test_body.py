"""Request bodies: the size limit (the BodyLimit middleware) and bodies that are not UTF-8.

The bodies here are valid requests in every other way (JSON padded with whitespace), so
only the byte limit can refuse them: without the middleware they would be served (200).
Issue #13, item 22."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import LIMITS, make_settings

LIMIT = LIMITS["max_body_bytes"]
JSON = {"content-type": "application/json"}
REQUEST = json.dumps({"text": "the food was great", "aspects": ["food"]}).encode()


def padded(size: int) -> bytes:
    """A valid request of exactly ``size`` bytes (JSON allows trailing whitespace)."""
    assert size >= len(REQUEST)
    return REQUEST + b" " * (size - len(REQUEST))


def post(client: TestClient, content: object) -> object:
    return client.post("/v1/predict", content=content, headers={"content-type": "application/json"})


def test_a_valid_body_at_the_limit_is_served(client: TestClient) -> None:
    r = post(client, padded(LIMIT))
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["term"] == "food"


def test_a_valid_body_one_byte_over_the_limit_is_413(client: TestClient) -> None:
    r = post(client, padded(LIMIT + 1))  # Content-Length declares it
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == f"request body over {LIMIT} bytes"


def test_a_valid_streamed_body_over_the_limit_is_413(client: TestClient) -> None:
    """No Content-Length (chunked): the limit is counted on the bytes received."""
    body = padded(LIMIT + 100)

    def chunks():  # type: ignore[no-untyped-def]
        for i in range(0, len(body), 512):
            yield body[i : i + 512]

    r = post(client, chunks())
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == f"request body over {LIMIT} bytes"


def test_a_valid_streamed_body_under_the_limit_is_served(client: TestClient) -> None:
    body = padded(LIMIT - 10)

    def chunks():  # type: ignore[no-untyped-def]
        yield body[:100]
        yield body[100:]

    r = post(client, chunks())
    assert r.status_code == 200, r.text
    assert [x["term"] for x in r.json()["results"]] == ["food"]  # the whole body was read


def test_a_body_that_is_not_utf8_is_422_naming_utf8(client: TestClient) -> None:
    """A real Latin-1 byte (not a UTF-16 byte-order mark): 422, as for any content that is
    not valid JSON (README, the OpenAPI error list), with a detail that says why."""
    r = post(client, b'{"text": "the caf\xe9 food was great", "aspects": ["food"]}')
    assert r.status_code == 422, r.text
    assert "UTF-8" in r.json()["detail"] and "nested" not in r.json()["detail"]


def test_json_nested_past_the_parsers_depth_is_422(client: TestClient) -> None:
    r = post(client, b"[" * 2000 + b"]" * 2000)  # 4,000 bytes: under the test byte limit
    assert r.status_code == 422, r.text
    assert "nested" in r.json()["detail"] and "UTF-8" not in r.json()["detail"]
    # where the parser stops depends on the server's own stack: about 960 levels, refused
    # as "a thousand levels deep or more" (a number it never checked)
    shallower = post(client, b"[" * 970 + b"]" * 970)
    assert shallower.status_code == 422, shallower.text
    assert "thousand" not in shallower.json()["detail"], shallower.text


def test_a_number_past_the_parsers_digits_is_422_saying_so(artifact: Path) -> None:
    """Python reads at most 4,300 digits into an int: the detail names the number, not the
    encoding or the nesting, which were fine (a body limit of the default's size)."""
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, max_body_bytes=1 << 20))) as client:
        r = post(client, b'{"text": "the food", "aspects": ["food"], "x": ' + b"1" * 5000 + b"}")
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "digits" in detail and "UTF-8" not in detail and "nested" not in detail


@pytest.mark.parametrize(
    ("path", "body", "key"),
    [
        # the text given twice: the last one was read ("aspect 'food' does not occur")
        ("/v1/predict", b'{"text": "good food", "aspects": ["food"], "text": "bad staff"}', "text"),
        (
            "/v1/predict",
            b'{"text": "good food", "aspects": [{"term": "food", "term": "good"}]}',
            "term",
        ),
        (
            "/v1/predict/batch",
            b'{"items": [{"text": "good food", "aspects": ["food"]}], "items": []}',
            "items",
        ),
    ],
)
def test_a_key_given_twice_in_one_object_is_422_naming_it(
    client: TestClient, path: str, body: bytes, key: str
) -> None:
    """JSON leaves a repeated key's meaning open and Python keeps the last value without a
    word: the body is refused, naming the key, as ``absa predict`` and the training readers
    refuse such a line."""
    r = client.post(path, content=body, headers=JSON)
    assert r.status_code == 422, r.text
    assert f"'{key}' is given twice" in r.json()["detail"], r.text


def test_a_batch_item_giving_a_key_twice_is_that_items_error(client: TestClient) -> None:
    """Every other bad item is answered with its own error and the others are served: a key
    given twice inside one item refused the whole batch, without saying which item."""
    body = (
        b'{"items": [{"text": "good food", "aspects": ["food"]},'
        b' {"text": "good food", "aspects": ["food"], "text": "bad staff"},'
        b' {"text": "good food", "aspects": [{"term": "food", "start": 5, "start": 6}]}]}'
    )  # three items: the test service's limit
    r = client.post("/v1/predict/batch", content=body, headers=JSON)
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    assert items[0]["results"][0]["term"] == "food"
    for i, key in ((1, "text"), (2, "start")):
        error = items[i]["error"]
        assert error["status"] == 422
        assert (
            error["detail"]
            == f"items[{i}]: the key {key!r} is given twice in one object: send each field once"
        )


def test_the_same_keys_in_different_objects_are_fine(client: TestClient) -> None:
    body = {"items": [{"text": "good food", "aspects": ["food"]}] * 2}
    r = client.post("/v1/predict/batch", json=body)
    assert r.status_code == 200, r.text
    assert [it["results"][0]["term"] for it in r.json()["items"]] == ["food", "food"]


def _requests(client: TestClient, status: int) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("absa_requests_total{") and f'status="{status}"' in line:
            if 'route="/v1/predict"' in line and 'method="POST"' in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_the_outer_layers_refusals_are_counted_under_their_path(client: TestClient) -> None:
    """413 (byte limit) and 415 (not JSON) are answered before the router: they count in
    absa_requests under the path they were refused on, as every other answer does."""
    before = {s: _requests(client, s) for s in (413, 415)}
    assert post(client, padded(LIMIT + 1)).status_code == 413
    r = client.post("/v1/predict", content=REQUEST, headers={"content-type": "text/plain"})
    assert r.status_code == 415
    assert {s: _requests(client, s) - before[s] for s in (413, 415)} == {413: 1.0, 415: 1.0}


def test_a_client_that_goes_away_mid_body_is_not_a_server_error(client: TestClient) -> None:
    """The body-limit layer returns without an answer when the client hangs up; that was
    counted as status 500, which an error-rate alert takes for the server failing."""
    app = client.app
    before = {s: _requests(client, s) for s in (499, 500)}
    headers = [(b"content-type", b"application/json"), (b"content-length", b"500")]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/predict",
        "raw_path": b"/v1/predict",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
        "app": app,
    }
    parts = [
        {"type": "http.request", "body": b'{"text": "the fo', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict] = []

    async def receive() -> dict:
        return parts.pop(0)

    async def send(msg: dict) -> None:
        sent.append(msg)

    client.portal.call(app, scope, receive, send)  # type: ignore[union-attr]
    assert sent == []  # nobody to answer
    after = {s: _requests(client, s) - before[s] for s in (499, 500)}
    assert after == {499: 1.0, 500: 0.0}


def test_a_root_path_takes_no_request_past_the_outer_layers(artifact: Path) -> None:
    """Under a prefix (uvicorn --root-path /absa: the path is /absa/v1/predict, the router
    strips the root path) the 415 checks and the shedding saw no /v1/ path and let every
    request through: a text/plain body came back 422, a gzip'd one 200."""
    from absa.service.app import create_app
    from tests.service.conftest import make_settings

    json_ = {"content-type": "application/json"}
    with TestClient(create_app(make_settings(artifact)), root_path="/absa") as c:
        assert c.post("/absa/v1/predict", content=REQUEST, headers=json_).status_code == 200
        plain = c.post("/absa/v1/predict", content=REQUEST, headers={"content-type": "text/plain"})
        assert plain.status_code == 415, plain.text
        gzip = c.post(
            "/absa/v1/predict", content=REQUEST, headers={**json_, "content-encoding": "gzip"}
        )
        assert gzip.status_code == 415, gzip.text
        metrics = c.get("/absa/metrics").text
    assert 'absa_requests_total{method="POST",route="/v1/predict",status="415"} 2.0' in metrics


def test_metric_labels_take_known_methods_only(client: TestClient) -> None:
    """Any token is a method to HTTP, and h11 passes them all: each would be a new series."""
    assert client.request("XYZZY-1", "/v1/predict").status_code == 405
    assert client.request("XYZZY-2", "/v1/predict").status_code == 405
    metrics = client.get("/metrics").text
    assert "XYZZY" not in metrics
    assert 'absa_requests_total{method="other",route="/v1/predict",status="405"} 2.0' in metrics


def test_the_api_reports_the_package_version(client: TestClient) -> None:
    import absa

    assert client.get("/openapi.json").json()["info"]["version"] == absa.__version__


def test_the_pages_files_are_counted_under_one_label(client: TestClient) -> None:
    """They were "unmatched", with the 404s of any path: a mount sets no route, nor does
    FastAPI's schema route (/openapi.json; /docs's files are a mount too). A file
    that is not there is the mount's 404, under the same label; another path is still
    "unmatched" (each path its own series would be unbounded)."""
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/no-such-file.js").status_code == 404
    assert client.get("/no-such-path").status_code == 404
    assert client.get("/docs/assets/swagger-ui.css").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    metrics = client.get("/metrics").text
    assert 'absa_requests_total{method="GET",route="/docs/assets",status="200"} 1.0' in metrics
    assert 'absa_requests_total{method="GET",route="/openapi.json",status="200"}' in metrics
    assert 'absa_requests_total{method="GET",route="/static",status="200"} 1.0' in metrics
    assert 'absa_requests_total{method="GET",route="/static",status="404"} 1.0' in metrics
    assert 'absa_requests_total{method="GET",route="unmatched",status="404"} 1.0' in metrics
    assert "no-such" not in metrics


def test_the_pages_files_are_counted_under_one_label_behind_a_path_prefix(
    artifact: Path,
) -> None:
    """The mount adds "/static" to the root_path of the scope every layer shares: read
    after the answer, the path lost it, and the files were "unmatched" again."""
    from absa.service.app import create_app
    from tests.service.conftest import make_settings

    with TestClient(create_app(make_settings(artifact)), root_path="/absa") as c:
        assert c.get("/absa/static/style.css").status_code == 200
        metrics = c.get("/absa/metrics").text
    assert 'absa_requests_total{method="GET",route="/static",status="200"} 1.0' in metrics


@pytest.fixture(scope="module")
def roomy(artifact: Path) -> Iterator[TestClient]:
    """The app with the default body limit (a megabyte): room for lists of many entries."""
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, max_body_bytes=1_000_000))) as c:
        yield c


def listed(prefix: bytes, entry: bytes, n: int, suffix: bytes = b"]}") -> bytes:
    return prefix + b",".join([entry] * n) + suffix


def test_a_batch_of_too_many_items_is_refused_before_they_are_validated(
    roomy: TestClient,
) -> None:
    """Validated first, 400,000 items held the event loop 4 s before the same 413. The field
    the schema does not know shows the order: validated first, it is a 422."""
    body = listed(b'{"unknown": 1, "items": [', b"0", 400_000)
    r = roomy.post("/v1/predict/batch", content=body, headers=JSON)
    assert r.status_code == 413, r.text[:300]
    assert r.json()["detail"] == f"400000 items; the limit is {LIMITS['max_items']}"


@pytest.mark.parametrize(
    "body",
    [
        listed(b'{"text": "the food", "aspects": [', b"0", 400_000),
        listed(b'{"text": "the food", "aspects": [', b'"food"', 120_000),
    ],
    ids=["bad-aspects", "repeated-aspects"],
)
def test_more_aspects_than_one_request_may_queue_are_refused_before_validation(
    roomy: TestClient, body: bytes
) -> None:
    """A list no request could ever have queued is over a limit (413, as a valid one of that
    length was), said at once: it was validated entry by entry first (a 422 after 18 s)."""
    r = roomy.post("/v1/predict", content=body, headers=JSON)
    assert r.status_code == 413, r.text[:300]
    assert re.fullmatch(r"too many \w+ \(\d+( listed)?; the limit is 4\)", r.json()["detail"])


def test_categories_without_a_category_model_are_refused_before_validation(
    roomy: TestClient,
) -> None:
    """Said at once, and said as what is wrong: the service has no category model (it was
    "too many categories", a 413 that sending fewer would not have mended)."""
    body = listed(b'{"text": "the food", "categories": [', b"0", 400_000)
    r = roomy.post("/v1/predict", content=body, headers=JSON)
    assert r.status_code == 422, r.text[:300]
    assert r.json()["detail"].startswith("this service has no aspect-category model")
    # both, or categories that are no list: validation says what is wrong with the request
    both = {"text": "the food", "aspects": ["food"], "categories": ["food"]}
    r = roomy.post("/v1/predict", json=both)
    assert r.status_code == 422 and "not both" in r.text, r.text
    r = roomy.post("/v1/predict", json={"text": "the food", "categories": "food"})
    assert r.status_code == 422 and "no aspect-category model" not in r.text, r.text
    # categories null: none asked for, the aspects are answered
    r = roomy.post(
        "/v1/predict", json={"text": "the food", "aspects": ["food"], "categories": None}
    )
    assert r.status_code == 200 and r.json()["results"][0]["term"] == "food", r.text


def test_a_batch_whose_items_list_too_many_aspects_is_refused_before_validation(
    roomy: TestClient,
) -> None:
    item = listed(b'{"text": "the food", "aspects": [', b"0", 130_000)
    body = b'{"items": [' + b",".join([item] * 3) + b"]}"
    r = roomy.post("/v1/predict/batch", content=body, headers=JSON)
    assert r.status_code == 413, r.text[:300]  # validated first: a 200 of per-item errors
    assert r.json()["detail"] == "items[0]: too many aspects (130000 listed; the limit is 4)"


def test_lists_within_the_limits_are_still_validated_entry_by_entry(roomy: TestClient) -> None:
    r = roomy.post("/v1/predict", json={"text": "the food", "aspects": [0, "food", 1]})
    assert r.status_code == 422 and r.json()["detail"].endswith("(and 1 more)"), r.text
    items = [{"text": "the food", "aspects": ["food"]}, 0, {"text": "the food", "aspects": [0]}]
    r = roomy.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    assert [("error" in e) for e in r.json()["items"]] == [False, True, True]


def unknown_fields(n: int, **given: object) -> dict:
    return {**given, **{f"k{i}": 0 for i in range(n)}}


@pytest.mark.parametrize("inside", ["body", "aspect", "batch item"])
def test_a_request_of_many_unknown_fields_is_refused_before_validation(
    roomy: TestClient, inside: str
) -> None:
    """75,000 unknown fields in a megabyte were 75,000 errors, 0.3 s to validate and report
    (0.6 s inside an aspect object): refused from the parsed body now, with the count."""
    text = "the food was great"
    if inside == "body":
        path, body, where = (
            "/v1/predict",
            unknown_fields(75_000, text=text, aspects=["food"]),
            "body",
        )
    elif inside == "aspect":
        span = unknown_fields(75_000, term="food", start=4, end=8)
        path, body, where = "/v1/predict", {"text": text, "aspects": [span]}, "body.aspects.0"
    else:  # refused alone: the batch's other items are answered
        item = unknown_fields(75_000, text=text, aspects=["food"])
        good = {"text": text, "aspects": ["food"]}
        path, body, where = "/v1/predict/batch", {"items": [good, item]}, "body.items.1"
    r = roomy.post(path, json=body)
    detail = (
        f"invalid request: {where}.k0: Extra inputs are not permitted "
        "(and 74999 more unknown fields)"
    )
    if inside != "batch item":
        assert r.status_code == 422, r.text[:300]
        assert r.json()["detail"] == detail
        return
    assert r.status_code == 200, r.text[:300]
    first, second = r.json()["items"]
    assert first["results"][0]["term"] == "food"
    assert second == {"error": {"status": 422, "detail": detail}}


def test_unknown_fields_are_counted_per_batch_item(roomy: TestClient) -> None:
    """Items that carry fields of their own (an id, a source: two each in a batch of 33 at
    the default max_items of 64) were refused whole once they summed to more than the 64
    unknown fields a request may carry, where fewer were answered item by item: each item
    is counted alone now (here 3 items of 30, max_items being 3)."""
    items = [unknown_fields(30, text="the food", aspects=["food"]) for _ in range(3)]
    r = roomy.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text[:300]
    errors = [e["error"] for e in r.json()["items"]]
    assert len(errors) == 3 and all(e["status"] == 422 for e in errors)
    assert errors[2]["detail"].endswith("not permitted (and 29 more)"), errors[2]  # validated
    assert errors[2]["errors"][0]["loc"] == ["body", "items", 2, "k0"], errors[2]
    # the batch's own unknown fields are still counted: past the limit, refused whole
    body = unknown_fields(100, items=[{"text": "the food", "aspects": ["food"]}])
    r = roomy.post("/v1/predict/batch", json=body)
    assert r.status_code == 422 and "(and 99 more unknown fields)" in r.json()["detail"]
    # and where items is missing or no list: validated one by one, 6 times slower, and
    # answered "body.items: Field required (and 75000 more)"
    for items in ({}, {"items": None}, {"items": "x"}):
        r = roomy.post("/v1/predict/batch", json=unknown_fields(100, **items))
        assert r.status_code == 422 and "(and 99 more unknown fields)" in r.json()["detail"], r.text


def test_a_few_unknown_fields_are_still_validated_and_a_batch_item_fails_alone(
    roomy: TestClient,
) -> None:
    r = roomy.post("/v1/predict", json=unknown_fields(2, text="the food", aspects=["food"]))
    assert r.status_code == 422
    assert r.json()["detail"].endswith("Extra inputs are not permitted (and 1 more)"), r.text
    items = [{"text": "the food", "aspects": ["food"]}, unknown_fields(3, text="the food")]
    r = roomy.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    assert [("error" in e) for e in r.json()["items"]] == [False, True]


def test_a_text_with_more_aspects_than_the_queue_holds_is_told_the_aspects_limit(
    artifact: Path,
) -> None:
    """The queue's check came first: 7,000 aspects were told "this server queues at most
    6144 (max_queue setting): split it", where the limit that applies is max_aspects (32).
    A batch over the queue is refused whole still (its lists are not validated), naming the
    item and the limit."""
    from absa.service.app import create_app

    settings = make_settings(artifact, max_body_bytes=1_000_000, max_queue=8)
    body = {"text": "the food was great", "aspects": ["food"] * 9}
    limit = LIMITS["max_aspects"]
    with TestClient(create_app(settings)) as c:
        r = c.post("/v1/predict", json=body)
        assert r.status_code == 413, r.text[:300]
        assert r.json()["detail"] == f"too many aspects (9 listed; the limit is {limit})"
        good = {"text": "the food was great", "aspects": ["food"]}
        r = c.post("/v1/predict/batch", json={"items": [good, body]})  # all refused, unread
        assert r.status_code == 413, r.text[:300]
        assert r.json()["detail"] == f"items[1]: too many aspects (9 listed; the limit is {limit})"
        # categories, where the service has no category model: that is what is wrong (a 413
        # told the client to send fewer, which this service would refuse as well)
        body = {"text": "the food was great", "categories": ["food"] * 9}
        r = c.post("/v1/predict", json=body)
        assert r.status_code == 422, r.text[:300]
        assert r.json()["detail"].startswith("this service has no aspect-category model")


def test_a_batch_over_the_queue_without_its_items_over_max_aspects_is_told_to_split(
    artifact: Path,
) -> None:
    """The first item over max_aspects was named where the other items alone were over the
    queue too: mending that item, the client was still refused."""
    from absa.service.app import create_app

    settings = make_settings(artifact, max_body_bytes=1_000_000, max_queue=6)
    limit = LIMITS["max_aspects"]
    full = {"text": "the food was great", "aspects": ["food"] * limit}
    over = {"text": "the food was great", "aspects": ["food"] * (limit + 1)}
    with TestClient(create_app(settings)) as c:
        r = c.post("/v1/predict/batch", json={"items": [full, full, over]})
        assert r.status_code == 413, r.text[:300]
        assert "split it" in r.json()["detail"], r.json()["detail"]
        r = c.post("/v1/predict/batch", json={"items": [full, full]})  # mended: the same
        assert r.status_code == 413 and "split it" in r.json()["detail"]


@pytest.mark.parametrize("copies", [LIMITS["max_aspects"] + 1, 1000])
def test_more_aspects_listed_than_a_text_may_have_are_refused_before_any_lookup(
    roomy: TestClient, copies: int
) -> None:
    """A term listed again is answered once, so a list of copies passed every limit, and
    each copy was one more search of the text: 1,000 copies of a long term whose words the
    text repeats (the search goes deep at every word) were 16 s of CPU for 190 KB at the
    default limits. Refused now (413, as too many categories are) before any lookup; in a
    batch, that item alone."""
    text, term = "a " * 140 + "b", "a " * 90 + "b"
    body = {"text": text, "aspects": [term] * copies}
    r = roomy.post("/v1/predict", json=body)
    assert r.status_code == 413, r.text[:300]
    limit = LIMITS["max_aspects"]
    assert r.json()["detail"] == f"too many aspects ({copies} listed; the limit is {limit})"
    good = {"text": "the food was great", "aspects": ["food"]}
    r = roomy.post("/v1/predict/batch", json={"items": [body, good]})
    assert r.status_code == 200, r.text[:300]
    first, second = r.json()["items"]
    assert first["error"]["status"] == 413, first
    assert first["error"]["detail"].startswith("items[0]: too many aspects")
    assert second["results"][0]["term"] == "food"
