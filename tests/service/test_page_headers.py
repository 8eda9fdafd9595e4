"""The page's and /docs' response headers: what a browser caches and who may frame them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/static/style.css", "/docs"])
def test_the_page_and_its_files_are_revalidated(client: TestClient, path: str) -> None:
    """No Cache-Control: browsers cached the page and its script by heuristic, without
    asking, for a tenth of the files' age: after an upgrade the old script ran against the
    new API for hours or days."""
    r = client.get(path)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-cache", r.headers
    if path.startswith("/static/"):  # asked again, the answer is a 304 by its validator
        again = client.get(path, headers={"if-none-match": r.headers["etag"]})
        assert again.status_code == 304


@pytest.mark.parametrize("path", ["/docs", "/docs/openapi.json", "/docs/oauth2-redirect"])
def test_docs_may_not_be_framed_and_answer_head(client: TestClient, path: str) -> None:
    """The page had its headers, /docs none of them (any site could frame "Try it out"),
    and HEAD on /docs was 405 where it works on / and /openapi.json."""
    r = client.get(path)
    assert r.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert client.head(path).status_code == 200
