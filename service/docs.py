"""/docs (Swagger UI) from files installed with the service, not from a CDN: the page
renders where the service has no internet. The assets (Swagger UI 5, which reads the
OpenAPI 3.1 FastAPI writes) come from the maintained fastapi-offline package (a base
dependency; swagger-ui-py, used before, installs a top-level `test` package of its own tests)
and are mounted at /docs/assets."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, JSONResponse

from absa.service.routes.ops import PAGE_HEADERS, Revalidated

ASSETS = "/docs/assets"
#: the page's headers (no framing, no sniffing, no referrer, revalidated), but a policy of
#: framing alone: Swagger UI's page starts it with an inline script
DOCS_HEADERS = {**PAGE_HEADERS, "Content-Security-Policy": "frame-ancestors 'none'"}
ERROR_SCHEMA = "#/components/schemas/ErrorResponse"


def install(app: FastAPI, docs_url: str = "/docs") -> None:
    """Serve Swagger UI at ``docs_url`` with local assets (create the app with docs_url=None)."""
    import fastapi_offline

    static = Path(fastapi_offline.__file__).resolve().parent / "static"
    app.mount(ASSETS, Revalidated(directory=static), name="docs-assets")
    oauth2 = f"{docs_url}/oauth2-redirect"
    schema_url = f"{docs_url}/openapi.json"

    # the page's URLs are relative to it: behind a proxy that serves the app under a prefix
    # (and strips it), absolute ones would ask the proxy's root for the assets and the schema
    up = "../" * (docs_url.count("/") - 1)  # from docs_url's folder to the app's root

    def rel(url: str) -> str:
        return up + url.lstrip("/")

    @app.api_route(docs_url, methods=["GET", "HEAD"], include_in_schema=False)
    async def docs_page() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=rel(schema_url),
            title=f"{app.title} - API",
            swagger_js_url=rel(f"{ASSETS}/swagger-ui-bundle.js"),
            swagger_css_url=rel(f"{ASSETS}/swagger-ui.css"),
            swagger_favicon_url=rel(f"{ASSETS}/favicon.png"),
            oauth2_redirect_url=rel(oauth2),
        )
        page.headers.update(DOCS_HEADERS)
        return page

    # the schema names no server, which Swagger UI's "Try it out" reads as the host's root:
    # under a prefix its requests went past the app. Its copy names the app's root, relative
    # to the copy's URL (what a server URL is relative to), so requests go through the prefix
    @app.api_route(schema_url, methods=["GET", "HEAD"], include_in_schema=False)
    async def docs_schema() -> JSONResponse:
        root = "../" * (schema_url.count("/") - 1)  # from the copy's folder to the app's root
        schema = {**app.openapi(), "servers": [{"url": root or "./"}]}
        return JSONResponse(schema, headers=DOCS_HEADERS)

    @app.api_route(oauth2, methods=["GET", "HEAD"], include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        page = get_swagger_ui_oauth2_redirect_html()  # an inline script: /docs' headers too
        page.headers.update(DOCS_HEADERS)
        return page


def require_key(app: FastAPI, prefix: str, detail: str, required: bool = True) -> None:
    """Say in the OpenAPI schema that the operations under ``prefix`` take a bearer key (the
    service's ApiGate checks it): Swagger UI then has an Authorize button that sends it.
    ``required`` (the server has keys), else optional: a client generated from a server
    without keys has the key and the 401 all the same, for the servers that have them."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["apiKey"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "one of the keys in ABSA_API_KEY",
        }
        unauthorized = {
            "description": detail if required else f"where the server has keys: {detail}",
            "content": {"application/json": {"schema": {"$ref": ERROR_SCHEMA}}},
        }
        for path, operations in schema.get("paths", {}).items():
            if not path.startswith(prefix):
                continue
            for operation in operations.values():
                operation["security"] = [{"apiKey": []}] if required else [{}, {"apiKey": []}]
                operation.setdefault("responses", {})["401"] = unauthorized
        declare_headers(schema)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


#: the headers answers carry, as the schema declares them (a generated client exposes them)
REQUEST_ID_HEADER = {
    "description": "the request's ID: the client's own X-Request-ID, or one made for it; "
    "the server's log lines of the request carry it",
    "schema": {"type": "string"},
}
RETRY_AFTER_HEADER = {
    "description": "seconds to wait before sending the request again",
    "schema": {"type": "integer"},
}
WWW_AUTHENTICATE_HEADER = {"description": "Bearer", "schema": {"type": "string"}}


def declare_headers(schema: dict) -> None:
    """Every answer's X-Request-ID, a 503's Retry-After and a 401's WWW-Authenticate, in
    each operation's responses."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for status, response in operation.get("responses", {}).items():
                headers = response.setdefault("headers", {})
                headers["X-Request-ID"] = REQUEST_ID_HEADER
                if status == "503":
                    headers["Retry-After"] = RETRY_AFTER_HEADER
                if status == "401":
                    headers["WWW-Authenticate"] = WWW_AUTHENTICATE_HEADER
