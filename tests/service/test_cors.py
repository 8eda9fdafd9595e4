"""ABSA_CORS_ORIGINS: a web page on another origin may call the API from a browser (the
preflight answered, the answers readable, X-Request-ID and Retry-After exposed), only from
the origins named, and a preflight needs no API key (browsers send none with it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from tests.service.conftest import make_settings

APP = "https://app.example.com"
REQUEST = {"text": "the food was great", "aspects": ["food"]}


def preflight(c: TestClient, origin: str, headers: str = "content-type,authorization"):  # type: ignore[no-untyped-def]
    return c.options(
        "/v1/predict",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": headers,
        },
    )


@pytest.fixture(scope="module")
def cors(artifact: Path) -> Iterator[TestClient]:
    from absa.service.app import create_app

    settings = make_settings(
        artifact, cors_origins=f"{APP}/, http://localhost:3000", api_key="k-0123456789"
    )
    with TestClient(create_app(settings)) as c:
        yield c


def test_a_named_origin_gets_its_preflight_and_readable_answers(cors: TestClient) -> None:
    r = preflight(cors, APP)  # no key: a browser sends none with a preflight
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == APP
    assert {"POST", "GET"} <= {
        m.strip() for m in r.headers["access-control-allow-methods"].split(",")
    }
    allowed = {h.strip().lower() for h in r.headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "authorization", "x-request-id"} <= allowed
    for key in (None, "k-0123456789"):  # the 401 is readable by the page too
        headers = {"Origin": APP, **({"Authorization": f"Bearer {key}"} if key else {})}
        r = cors.post("/v1/predict", json=REQUEST, headers=headers)
        assert r.status_code == (200 if key else 401)
        assert r.headers["access-control-allow-origin"] == APP
        exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
        assert {"x-request-id", "retry-after"} <= exposed
    assert preflight(cors, "http://localhost:3000").status_code == 200


def test_another_origin_gets_no_cors_headers(cors: TestClient) -> None:
    r = preflight(cors, "https://evil.example.com")
    assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
    # in the one error shape, saying what is allowed (it was text/plain)
    assert r.headers["content-type"] == "application/json", r.headers
    assert r.json()["detail"].startswith("Disallowed CORS origin: "), r.text
    assert "ABSA_CORS_ORIGINS" in r.json()["detail"]
    r = preflight(cors, APP, headers="content-type,x-secret")
    assert r.status_code == 400 and r.json()["detail"].startswith("Disallowed CORS headers")
    r = cors.post(
        "/v1/predict",
        json=REQUEST,
        headers={"Origin": "https://evil.example.com", "Authorization": "Bearer k-0123456789"},
    )
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_without_origins_there_are_no_cors_headers(client: TestClient) -> None:
    r = preflight(client, APP)
    assert "access-control-allow-origin" not in r.headers
    r = client.post("/v1/predict", json=REQUEST, headers={"Origin": APP})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_any_origin(artifact: Path) -> None:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, cors_origins="*"))) as c:
        assert (
            preflight(c, "https://anywhere.example").headers["access-control-allow-origin"] == "*"
        )


@pytest.mark.parametrize(
    "value",
    ["app.example.com", "https://app.example.com/page", "ftp://app.example.com", "https://"],
)
def test_a_value_that_is_no_origin_is_refused(value: str) -> None:
    """It would match no request, and the service would look broken from the browser."""
    from absa.settings import Settings

    with pytest.raises(ValidationError, match="is not an origin"):
        Settings(cors_origins=f"https://ok.example, {value}")


def test_origins_are_read_as_written() -> None:
    from absa.settings import Settings

    got = Settings(
        cors_origins=" https://a.example/ ,http://[::1]:8080,, http://10.0.0.2:3000"
    ).cors_origin_list()
    assert got == ["https://a.example", "http://[::1]:8080", "http://10.0.0.2:3000"]
    assert Settings().cors_origin_list() == []


def test_origins_are_read_as_a_browser_writes_them() -> None:
    """ "https://App.Example.com" or "https://app.example.com:443" passed as origins and
    matched no browser's: its Origin header is lower case, without the default port."""
    from absa.settings import Settings

    got = Settings(
        cors_origins="https://App.Example.com, HTTP://a.example:80, https://b.example:443, "
        "http://b.example:443, https://[::1]:443"
    ).cors_origin_list()
    assert got == [
        "https://app.example.com",
        "http://a.example",
        "https://b.example",
        "http://b.example:443",
        "https://[::1]",
    ]


def test_a_server_error_is_readable_from_an_allowed_origin(artifact: Path) -> None:
    """A 500 carried no CORS headers (Starlette answers it outside the CORS layer): a page
    on an allowed origin saw "Failed to fetch", not the error nor its X-Request-ID."""
    from absa.service.app import create_app

    app = create_app(make_settings(artifact, cors_origins=APP))

    @app.get("/v1/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/v1/boom", headers={"Origin": APP})
        assert r.status_code == 500
        assert r.headers["access-control-allow-origin"] == APP
        assert "x-request-id" in r.headers["access-control-expose-headers"].lower()
        other = c.get("/v1/boom", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_only_the_api_answers_another_origin(cors: TestClient) -> None:
    """ABSA_CORS_ORIGINS names the origins whose pages may call /v1/* (README): the layer
    wrapped the whole app, so an allowed origin's page could also read /metrics and the
    admin routes' answers."""
    for path in ("/metrics", "/healthz", "/admin/reload", "/"):
        r = cors.options(path, headers={"Origin": APP, "Access-Control-Request-Method": "GET"})
        assert "access-control-allow-origin" not in r.headers, (path, r.status_code)
        r = cors.get(path, headers={"Origin": APP})
        assert "access-control-allow-origin" not in r.headers, (path, r.status_code)
    assert preflight(cors, APP).headers["access-control-allow-origin"] == APP  # the API's
