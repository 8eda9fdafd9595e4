"""CORS for the API alone (``/v1/*``), its refusals in the service's one error shape."""

from __future__ import annotations

from fastapi.middleware.cors import CORSMiddleware
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from absa.service import errors
from absa.service.paths import route_path


def cors_headers(origins: list[str], exposed: list[str], origin: str | None) -> dict[str, str]:
    """The CORS headers of a simple answer to a request from ``origin``, as Starlette's
    middleware gives them: none for an origin not allowed."""
    if origin is None or ("*" not in origins and origin not in origins):
        return {}
    allowed = "*" if "*" in origins else origin
    vary = {} if allowed == "*" else {"Vary": "Origin"}
    return {
        "Access-Control-Allow-Origin": allowed,
        "Access-Control-Expose-Headers": ", ".join(exposed),
        **vary,
    }


class JsonCORS(CORSMiddleware):
    """Starlette's CORS for the API (``/v1/*``) alone, as ABSA_CORS_ORIGINS is documented
    (another origin's page read /metrics and the admin routes' answers too), with a refused
    preflight answered in the service's one error shape (JSON), saying what is allowed: it
    was text/plain, "Disallowed CORS origin"."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not route_path(scope).startswith("/v1/"):
            return await self.app(scope, receive, send)
        await super().__call__(scope, receive, send)

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        said = bytes(response.body).decode("utf-8", "replace")  # "Disallowed CORS origin, headers"
        headers = {
            k: v for k, v in response.headers.items() if k not in ("content-type", "content-length")
        }
        detail = (
            f"{said}: origins named by ABSA_CORS_ORIGINS may call the API from a browser, "
            f"with {', '.join(sorted(self.allow_methods))} and the headers "
            f"{', '.join(sorted(self.allow_headers))}"
        )
        return errors.error_response(400, detail, headers=headers)
