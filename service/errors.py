"""Domain errors -> HTTP status codes, in one place. The core (absa.model, absa.training)
raises ``absa.errors`` types and never names a status code; this table is the only mapping.

Every error body has the one documented shape (``schemas.ErrorResponse``):
``{"detail": str}``, plus ``"errors": [{"loc", "msg", "type"}, ...]`` for a body that does
not fit the schema. Nothing echoes more than a short, escaped piece of the input.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Match, Mount
from starlette.types import Message, Send

from absa.errors import (
    AbsaError,
    ArtifactError,
    InputError,
    LimitError,
    Overloaded,
    RegistryError,
    ShuttingDown,
    TransientRefusal,
)
from absa.model.aspects import SHOWN_CHARS
from absa.service import logs

log = logging.getLogger(__name__)

RETRY_AFTER_S = "1"
MAX_ISSUES = 20  # validation problems listed in one error body
#: the methods a 405's Allow may name
ALLOW_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# most specific first: the first class an error is an instance of decides
STATUS: tuple[tuple[type[AbsaError], int], ...] = (
    (LimitError, 413),  # over a size limit
    (InputError, 422),  # invalid content: empty text, aspect not in the text, ...
    (TransientRefusal, 503),  # a model refused for want of memory: the same call may load it
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


def _safe(s: str, limit: int = 4 * SHOWN_CHARS) -> str:
    """Short, and encodable as UTF-8 whatever the input held (lone surrogates escaped)."""
    s = s if len(s) <= limit else s[:limit] + "\u2026"
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def error_body(detail: str, errors: list[dict] | None = None, **extra: Any) -> dict:
    body: dict[str, Any] = {"detail": _safe(detail, 1000), **extra}
    if errors is not None:
        body["errors"] = errors
    return body


def error_response(
    status: int,
    detail: str,
    errors: list[dict] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    if status == 503:
        headers = {"Retry-After": RETRY_AFTER_S, **(headers or {})}
    return JSONResponse(error_body(detail, errors), status_code=status, headers=headers)


def domain_detail(exc: AbsaError) -> str:
    return f"overloaded: {exc}" if isinstance(exc, Overloaded) else str(exc)


def issues(errs: list[Any], prefix: tuple[str | int, ...] = ()) -> list[dict]:
    """pydantic's errors as ``{loc, msg, type}``: never the input itself."""
    out = []
    for e in errs[:MAX_ISSUES]:
        loc = [*prefix, *(x if isinstance(x, int) else _safe(str(x)) for x in e.get("loc", ())
                          if not _union_tag(x))]  # fmt: skip
        msg = str(e.get("msg", ""))
        reason = (e.get("ctx") or {}).get("error")
        if e.get("type") == "json_invalid" and reason:  # what the parser found, and where
            msg = f"{msg}: {reason}"
        out.append({"loc": loc, "msg": _safe(msg), "type": e.get("type", "")})
    return out


def _union_tag(part: object) -> bool:
    """pydantic's name for a member of a union in an error's location
    ("list[union[constrained-str,AspectSpan]]", "constrained-str", "AspectSpan"): not a
    place in the body the client sent."""
    return isinstance(part, str) and (
        "[" in part or part in ("constrained-str", "str", "AspectSpan", "function-after")
    )


def summary(errors: list[dict], total: int) -> str:
    """One sentence for the first problem (and how many more): the first of the deepest,
    which for a value that fits no member of a union (an aspect object with a bad "start")
    is the member it came nearest to, not "Input should be a valid string"."""
    if not errors:
        return "invalid request body"
    first = max(errors, key=lambda e: len(e["loc"]))  # max keeps the first of the deepest
    where = ".".join(str(x) for x in first["loc"]) or "body"
    more = f" (and {total - 1} more)" if total > 1 else ""
    return f"invalid request: {where}: {first['msg']}{more}"


def problems(locs: list[tuple]) -> int:
    """How many things are wrong in errors at these (raw) locations: pydantic reports a value
    that fits no member of a union once per member, and those are one problem, not "and 2
    more". Members of one union share the location before their tags; a union counts as
    many problems as its member with the most."""
    if not locs:
        return 0
    count = 0
    by_place: dict[tuple, list[tuple]] = {}
    for loc in locs:
        at = next((i for i, part in enumerate(loc) if _union_tag(part)), None)
        if at is None:
            count += 1  # a place in the body, no union on the way
        else:
            by_place.setdefault(tuple(loc[:at]), []).append(tuple(loc[at:]))
    for tagged in by_place.values():
        members: dict[object, list[tuple]] = {}
        for loc in tagged:
            members.setdefault(loc[0], []).append(loc[1:])
        count += max(max(problems(rest), 1) for rest in members.values())
    return count


def explained(errs: list[Any], prefix: tuple[str | int, ...] = ()) -> tuple[str, list[dict]]:
    """pydantic's errors as the one-sentence detail and the ``errors`` list of a 422."""
    found = issues(errs, prefix)
    return summary(found, problems([tuple(e["loc"]) for e in errs])), found


def validation_body(exc: ValidationError, prefix: tuple[str | int, ...] = ()) -> dict:
    return error_body(*explained(exc.errors(include_input=False, include_url=False), prefix))


async def _empty_receive() -> Message:
    return {"type": "http.request", "body": b""}


async def reply(
    send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    """An error answered from an ASGI middleware, in the one error shape."""
    response = error_response(status, detail, headers=headers)
    await response({"type": "http"}, _empty_receive, send)


async def shed_pause(seconds: float) -> None:
    """Wait before answering an overload refusal (the ``shed_delay_s`` setting): a client that
    ignores Retry-After and asks again at once would otherwise keep the event loop busy
    refusing it; a sleeping task costs no CPU."""
    if seconds > 0:
        await asyncio.sleep(seconds)


async def _domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AbsaError)
    if isinstance(exc, Overloaded):
        await shed_pause(request.app.state.settings.shed_delay_s)
        from absa.service.engine import QueueFull

        if isinstance(exc, QueueFull):  # after the pause: a client gone in it got no 503
            request.app.state.metrics.rejected.inc()
    return error_response(status_of(exc), domain_detail(exc))


async def _invalid_body(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(422, *explained(list(exc.errors())))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    if exc.status_code == 400 and "error parsing the body" in detail:
        # FastAPI's words for a body it could not decode: invalid content, 422 as for any
        # other bad JSON, with what was wrong (FastAPI's cause) and what to send instead
        return error_response(422, _unreadable(exc.__cause__), headers=exc.headers)
    headers = exc.headers
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": _allowed(request, headers)}
    return error_response(exc.status_code, detail, headers=headers)


def _allowed(request: Request, headers: Mapping[str, str] | None) -> str:
    """Every method the request's path answers: Starlette's 405 names the methods of the
    first route on the path only, and /healthz, /readyz and /v1/model answer HEAD with a
    route of its own beside GET's (RFC 9110: Allow lists what the resource supports). A
    mount answers any method to the router: its own 405 names them (the given ``headers``)."""
    given = (headers or {}).get("Allow", "")
    allowed = {m.strip() for m in given.split(",") if m.strip()}
    routes = [r for r in request.app.router.routes if not isinstance(r, Mount)]
    for method in ALLOW_METHODS - allowed:
        scope = {**request.scope, "method": method}
        if any(r.matches(scope)[0] == Match.FULL for r in routes):
            allowed.add(method)
    return ", ".join(sorted(allowed))


def _unreadable(cause: BaseException | None) -> str:
    """Why a body could not be read as JSON, from the parser's exception."""
    why = "send it encoded as UTF-8, nested a few levels deep"
    if isinstance(cause, UnicodeDecodeError):
        why = "its bytes are not UTF-8: send it encoded as UTF-8"
    elif isinstance(cause, RecursionError):  # the depth depends on the server's own stack
        why = "it is nested too deeply for the parser (its requests need a few levels)"
    elif isinstance(cause, ValueError) and "digits" in str(cause):
        why = "it holds a number of more than 4,300 digits"
    return f"the body could not be read as JSON: {why}"


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    rid = getattr(request.state, "request_id", "-")
    log.error("unexpected error on %s (request %s)", request.url.path, rid, exc_info=exc)
    logs.logged(exc)  # uvicorn's line of it as it is raised again is left out
    # answered outside the layer that adds the header to every other answer
    headers = {"X-Request-ID": rid} if rid != "-" else {}
    from absa.service.paths import route_path

    cors = getattr(request.app.state, "cors_headers", None)  # with ABSA_CORS_ORIGINS
    if cors is not None and route_path(request.scope).startswith("/v1/"):  # the API's alone
        # else a page on an allowed origin saw "Failed to fetch"
        headers.update(cors(request.headers.get("origin")))
    return error_response(500, "internal error", headers=headers or None)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app`` (and leave out uvicorn's second line of a 500's
    error, however the app is served)."""
    logs.said_once(logging.getLogger("uvicorn.error"))
    app.add_exception_handler(AbsaError, _domain_error)
    app.add_exception_handler(RequestValidationError, _invalid_body)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
