"""The layers in front of the API's routes that say whether a request is taken: ApiGate
(keys, the body's type, no query string, the in-flight cap and a full queue, before the body
is read) and InFlight (a slot while the app works on a request whose body has arrived)."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from absa.service import errors
from absa.service.auth import bearer_accepted, bearer_token
from absa.service.errors import reply
from absa.service.metrics import Metrics
from absa.service.paths import ADMIN_RELOAD, API_PATHS, JSON_PATHS, route_path
from absa.service.routes import admin


class Slots:
    """The API requests (``API_PATHS``) a worker works on at once, at most ``limit``: ApiGate
    refuses a request while every slot is taken, before its body is read; InFlight takes a
    slot for a request once its body has arrived (one still arriving, slowly or never, holds
    none)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    @property
    def full(self) -> bool:
        return self.taken >= self.limit


async def _shed(send: Send, slots: Slots, metrics: Metrics, delay_s: float) -> None:
    await errors.shed_pause(delay_s)
    metrics.shed.inc()  # after the pause: a client gone in it got no 503 (a 499)
    await reply(send, 503, f"overloaded: {slots.limit} requests in flight")


class ApiGate:
    """In front of ``/v1/*`` (never /healthz, /readyz, /metrics): with API keys, a request
    without one is refused (401) before anything else is said; a body must be sent as JSON
    (else 415), with no query string (else 422: the options are the body's), and at most
    ``slots.limit`` requests are in progress at once; past it a request is refused at once
    with 503 + Retry-After, before its body is read or any work is done (InFlight, behind
    BodyLimit, takes the slot once the body is in). The queue bound counts aspects waiting
    for the model, but under many connections the event loop saturates first; this cap
    keeps accepted requests' latency bounded."""

    def __init__(
        self,
        app: ASGIApp,
        slots: Slots,
        metrics: Metrics,
        shed_delay_s: float,
        api_keys: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.slots = slots
        self.metrics = metrics
        self.shed_delay_s = shed_delay_s
        self.accepted = tuple(k.encode() for k in api_keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route_path(scope) if scope["type"] == "http" else ""
        if path == ADMIN_RELOAD and _has_body(scope):
            # the token before anything about the body (its type, its syntax: the route's own
            # check comes after FastAPI parsed it); a form body was a "valid dictionary" 422
            state = scope["app"].state if "app" in scope else None
            if state is not None and getattr(state, "admin", False):
                token = state.settings.admin_token.get_secret_value().encode()
                if not _authorized(scope, (token,)):
                    return await reply(send, 401, admin.NEED_TOKEN, BEARER)
                if not _is_json(scope):
                    return await reply(send, 415, SEND_JSON)
                if _encoded(scope):  # read as bytes: "not UTF-8", a 422 that misled
                    return await reply(send, 415, UNCOMPRESSED)
        if scope["type"] != "http" or not path.startswith("/v1/"):
            return await self.app(scope, receive, send)
        if self.accepted and not _authorized(scope, self.accepted):
            return await reply(send, 401, WRONG_KEY if _sent_bearer(scope) else NEED_KEY, BEARER)
        if scope["method"] == "POST" and path in JSON_PATHS and not _is_json(scope):
            return await reply(send, 415, SEND_JSON)
        if scope["method"] == "POST" and _encoded(scope):  # gzip'd JSON read as bytes: a 422
            return await reply(send, 415, UNCOMPRESSED)
        if scope["method"] == "POST" and path in JSON_PATHS and scope.get("query_string"):
            # ?explain=true was passed over (a 200 without attention), where an unknown field
            # of the body is a 422
            return await reply(send, 422, query_refused(scope["query_string"]))
        if self.slots.full and path in API_PATHS:
            return await _shed(send, self.slots, self.metrics, self.shed_delay_s)
        engine = getattr(scope["app"].state, "engine", None) if "app" in scope else None
        if engine is not None and engine.full and path in JSON_PATHS:
            # the queue is full: refuse before the body is read and parsed
            await errors.shed_pause(self.shed_delay_s)
            engine.metrics.rejected.inc()  # after the pause, as _shed counts
            return await reply(send, 503, f"overloaded: {engine.pending} aspects are waiting")
        await self.app(scope, receive, send)


class InFlight:
    """Behind BodyLimit: an API request (``API_PATHS``) whose body has arrived takes one of the
    ``slots`` while the app works on it, or is refused (503) where they were all taken
    meanwhile. Taken before the body arrived, a slot was held by a client that sent its
    headers and then its body slowly, or never (uvicorn waits for ever): a few idle
    connections kept every other request out."""

    def __init__(self, app: ASGIApp, slots: Slots, metrics: Metrics, shed_delay_s: float) -> None:
        self.app = app
        self.slots = slots
        self.metrics = metrics
        self.shed_delay_s = shed_delay_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or route_path(scope) not in API_PATHS:
            return await self.app(scope, receive, send)
        if self.slots.full:
            return await _shed(send, self.slots, self.metrics, self.shed_delay_s)
        self.slots.taken += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.slots.taken -= 1

        async def sending(message: Message) -> None:
            # the answer's last part handed over: the work is done, the slot given back
            # before the socket drains (a client that never reads held it for ever)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                release()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            release()


SEND_JSON = "send the body as JSON (Content-Type: application/json)"
UNCOMPRESSED = "send the body uncompressed (no Content-Encoding)"
NEED_KEY = "this server needs an API key: send Authorization: Bearer KEY"
WRONG_KEY = (
    "the API key sent is not accepted: send Authorization: Bearer KEY, a key of this server's"
)
BEARER = {"WWW-Authenticate": "Bearer"}


#: the most characters of a query parameter's name a refusal quotes
SHOWN_NAME = 64


def query_refused(query: bytes) -> str:
    """Why a POST to the API with a query string is refused: its first parameter named."""
    names = [k for k, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True) if k]
    only = "this route reads its options from the JSON body only"
    if not names:
        return f"a query string is refused: {only}; send none"
    name = names[0][:SHOWN_NAME] + ("\u2026" if len(names[0]) > SHOWN_NAME else "")
    more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
    quoted = json.dumps(name, ensure_ascii=False)
    return (
        f'the query parameter {quoted}{more} is refused: {only} (e.g. {{"explain": true}}); '
        "send no query string"
    )


def _has_body(scope: Scope) -> bool:
    for key, value in scope["headers"]:
        if key == b"content-length":
            return value.strip() not in (b"", b"0")
        if key == b"transfer-encoding":
            return True
    return False


def _encoded(scope: Scope) -> bool:
    """A Content-Encoding other than identity, which the service does not decode (RFC 9110:
    415); a compressed body was read as bytes and refused as "not UTF-8"."""
    for key, value in scope["headers"]:
        if key == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
            return True
    return False


def _is_json(scope: Scope) -> bool:
    for key, value in scope["headers"]:
        if key == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or media.endswith(b"+json")
    return False


def _authorization(scope: Scope) -> bytes:
    """The request's (first) Authorization header, b"" where none was sent."""
    return next((v for k, v in scope["headers"] if k == b"authorization"), b"")


def _sent_bearer(scope: Scope) -> bool:
    """The request's Authorization header is "Bearer TOKEN", a token given."""
    return bool(bearer_token(_authorization(scope)))


def _authorized(scope: Scope, accepted: tuple[bytes, ...]) -> bool:
    """The request's (first) Authorization header carries one of the ``accepted`` keys."""
    return bearer_accepted(_authorization(scope), accepted)
