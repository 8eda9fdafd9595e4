"""ABSA_API_KEY: with keys, every /v1/* request needs one of them as a bearer token (401
before anything else is said); the probes, /metrics, the page and /docs stay open; the
OpenAPI schema says so, and no error ever shows a key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from tests.service.conftest import make_settings

REQUEST = {"text": "the food was great", "aspects": ["food"]}
KEYS = "old-key-0123456789, new-key-9876543210"


@pytest.fixture(scope="module")
def keyed(artifact: Path) -> Iterator[TestClient]:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, api_key=KEYS))) as c:
        yield c


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("wrong-key"),
        bearer("old-key-0123456789x"),  # a key with more after it
        bearer("old-key"),  # the start of one
        bearer(KEYS),  # the setting itself is no key
        {"Authorization": "Basic old-key-0123456789"},
        {"Authorization": "old-key-0123456789"},
        {"X-API-Key": "old-key-0123456789"},
    ],
)
def test_every_api_path_refuses_a_request_without_a_key(
    keyed: TestClient, headers: dict[str, str]
) -> None:
    for method, path, body in [
        ("POST", "/v1/predict", REQUEST),
        ("POST", "/v1/predict/batch", {"items": [REQUEST]}),
        ("GET", "/v1/model", None),
    ]:
        r = keyed.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (path, r.text)
        # a key that was sent and refused is told so, not that the server needs one; another
        # scheme, or a bare key, is told how to send it
        detail = (
            "the API key sent is not accepted: send Authorization: Bearer KEY, a key of this "
            "server's"
            if headers.get("Authorization", "").lower().startswith("bearer ")
            else "this server needs an API key: send Authorization: Bearer KEY"
        )
        assert r.json() == {"detail": detail}
        assert r.headers["www-authenticate"] == "Bearer"
        assert "old-key" not in r.text and "new-key" not in r.text


def test_each_key_is_accepted_with_the_scheme_in_any_case(keyed: TestClient) -> None:
    """Two keys at once: clients move from the old to the new while both are accepted."""
    for header in (
        "Bearer old-key-0123456789",
        "bearer new-key-9876543210",
        "BEARER  new-key-9876543210",
    ):
        r = keyed.post("/v1/predict", json=REQUEST, headers={"Authorization": header})
        assert r.status_code == 200, (header, r.text)
        assert r.json()["results"][0]["term"] == "food"
    r = keyed.get("/v1/model", headers=bearer("new-key-9876543210"))
    assert r.status_code == 200 and r.json()["name"]


def test_the_key_comes_before_every_other_refusal(keyed: TestClient) -> None:
    """Without a key nothing is said about the request: not that its body is not JSON (415),
    nor anything about its content (422)."""
    r = keyed.post("/v1/predict", content=b"text", headers={"content-type": "text/plain"})
    assert r.status_code == 401
    r = keyed.post("/v1/predict", json={"text": 3})
    assert r.status_code == 401


def test_probes_metrics_page_and_docs_stay_open(keyed: TestClient) -> None:
    for path in (
        "/healthz",
        "/readyz",
        "/metrics",
        "/",
        "/static/app.js",
        "/docs",
        "/openapi.json",
    ):
        assert keyed.get(path).status_code == 200, path
    # its own refusal: another test's, on the module's client, may run in another process
    assert keyed.get("/v1/model").status_code == 401
    metrics = keyed.get("/metrics").text
    assert 'route="/v1/model",status="401"' in metrics  # refused in front of the router


def test_the_schema_says_which_operations_need_the_key(
    keyed: TestClient, client: TestClient
) -> None:
    schema = keyed.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            needs = path.startswith("/v1/")
            assert operation.get("security") == ([{"apiKey": []}] if needs else None), path
            assert ("401" in operation["responses"]) == needs, path
    # a server without keys says the key is optional, and the 401 where a server has keys: a
    # client generated from it had no key to send, nor a 401 in its model (from the OpenAPI
    # review)
    keyless = client.get("/openapi.json").json()
    assert keyless["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for path, operations in keyless["paths"].items():
        for operation in operations.values():
            optional = [{}, {"apiKey": []}] if path.startswith("/v1/") else None
            assert operation.get("security") == optional, path
            if optional:
                assert operation["responses"]["401"]["description"].startswith(
                    "where the server has keys: "
                ), path


def test_without_keys_the_api_is_open(client: TestClient) -> None:
    r = client.post("/v1/predict", json=REQUEST)
    assert r.status_code == 200, r.text
    assert [x["term"] for x in r.json()["results"]] == ["food"]


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_setting_is_no_key(value: str) -> None:
    from absa.settings import Settings

    assert Settings(api_key=value).api_keys() == ()


@pytest.mark.parametrize("value", [",", " , ", ",,"])
def test_a_list_of_no_keys_is_refused_not_the_api_left_open(value: str) -> None:
    """`ABSA_API_KEY=$K1,$K2` with both variables unset is ",": it read as no key, and
    /v1/* was served to anyone with no word said. A list that names no key is a mistake."""
    from absa.cli import settings_message
    from absa.settings import Settings

    with pytest.raises(ValidationError) as ex:
        Settings(api_key=value)
    said = settings_message(ex.value)
    assert said.startswith("ABSA_API_KEY: ") and "names no key" in said, said


@pytest.mark.parametrize("value", ["two words", "ok-key, caf\u00e9-key", "tab\tkey"])
def test_a_key_a_header_cannot_carry_is_refused_without_showing_it(value: str) -> None:
    from absa.cli import settings_message
    from absa.settings import Settings

    with pytest.raises(ValidationError) as ex:
        Settings(api_key=value)
    assert "printable ASCII" in str(ex.value)
    for shown in (str(ex.value), settings_message(ex.value)):
        assert value not in shown and "key" in shown.lower()
    assert settings_message(ex.value).startswith("ABSA_API_KEY: ")


def test_secret_settings_are_every_secret_field() -> None:
    """What the CLI never echoes is read off the settings' types: a new SecretStr setting is
    in it without anyone adding it to a list."""
    from absa.settings import SECRET_FIELDS

    assert SECRET_FIELDS == {"admin_token", "api_key"}


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (b"Bearer abc", b"abc"),
        (b"  bEaReR   abc  ", b"abc"),
        (b"abc", b""),  # the bare token
        (b"Basic abc", b""),
        (b"Bearer", b""),
        (b"Bearer ", b""),
        (b"", b""),
    ],
)
def test_the_one_reading_of_a_bearer_header(header: bytes, token: bytes) -> None:
    """The API keys, the admin token and the 'not accepted' wording read the header one way."""
    from absa.service.auth import bearer_accepted, bearer_token

    assert bearer_token(header) == token
    assert bearer_accepted(header, [b"abc"]) is (token == b"abc")
    assert not bearer_accepted(header, [b""])  # an empty key accepts nothing


def test_short_secrets_are_warned_of_at_start_never_shown(
    artifact: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Failed tries are answered at once and not throttled: a five-character admin token
    (it opens /admin/reload) or API key could be guessed over HTTP, and nothing said so."""
    from absa.service.app import create_app

    long = "0123456789abcdef0123"
    for token, keys, said in (
        ("hunter", f"abc,{long}", ["ABSA_ADMIN_TOKEN has 6 characters", "1 of the API keys"]),
        (long, long, []),
    ):
        caplog.clear()
        settings = make_settings(artifact, api_key=keys, admin_token=token)
        with caplog.at_level("WARNING", logger="absa"), TestClient(create_app(settings)):
            pass
        lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert [s for s in said if not any(s in line for line in lines)] == [], lines
        assert len([ln for ln in lines if "characters" in ln]) == len(said), lines
        assert not any("hunter" in line or "abc," in line for line in lines)
