"""Domain errors -> HTTP status codes, in one place. The core (absa.model, absa.training)
raises ``absa.errors`` types and never names a status code; this table is the only mapping.

Every error body has the documented shape ``{"detail": ...}`` (``ErrorResponse``).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from absa.errors import (
    AbsaError,
    ArtifactError,
    InputError,
    LimitError,
    Overloaded,
    RegistryError,
    ShuttingDown,
)

RETRY_AFTER_S = "1"

# most specific first: the first class an error is an instance of decides
STATUS: tuple[tuple[type[AbsaError], int], ...] = (
    (LimitError, 413),  # over a size limit
    (InputError, 422),  # invalid content: empty text, aspect not in the text, ...
    (ArtifactError, 409),  # a model refused (hot reload): the old one keeps serving
    (RegistryError, 409),
    (Overloaded, 503),  # try again later (Retry-After)
    (ShuttingDown, 503),
)


def status_of(exc: AbsaError) -> int:
    for kind, status in STATUS:
        if isinstance(exc, kind):
            return status
    return 500


async def _domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AbsaError)
    status = status_of(exc)
    detail = f"overloaded: {exc}" if isinstance(exc, Overloaded) else str(exc)
    headers = {"Retry-After": RETRY_AFTER_S} if status == 503 else None
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def _invalid_body(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors()
    ]
    return JSONResponse({"detail": errors}, status_code=422)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.add_exception_handler(AbsaError, _domain_error)
    app.add_exception_handler(RequestValidationError, _invalid_body)
