"""The outermost layer: every request's ID (the client's X-Request-ID or a new one, on the
answer and on every log line of the request), count and latency, by route template."""

from __future__ import annotations

import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from absa.service import docs, logs
from absa.service.metrics import Metrics
from absa.service.paths import ADMIN_RELOAD, GATED_PATHS, OPENAPI_PATH, STATIC_PATH, route_path

#: the status counted for a request that ended without an answer (cancelled before one)
CLIENT_CLOSED = 499


def status_class(status: int) -> str:
    """The latency histogram's bounded label of an answer's status: 2xx, 4xx, 5xx, and
    client_closed for a request whose client hung up before its answer (CLIENT_CLOSED)."""
    return "client_closed" if status == CLIENT_CLOSED else f"{status // 100}xx"


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
REQUEST_ID = b"x-request-id"
_ID_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:")


def request_id(scope: Scope) -> str:
    """The client's X-Request-ID when it is a plain token (up to 128 letters, digits and
    ``._-:``), else a new one: echoed on the answer, named in the log of a server error."""
    for key, value in scope.get("headers", []):
        if key == REQUEST_ID and 0 < len(value) <= 128 and set(value) <= _ID_CHARS:
            return value.decode("ascii")
    return uuid.uuid4().hex


class Observe:
    """Request count and latency per route template (pure ASGI: no per-request task). The
    outermost layer: the 413, 415 and 503 answers of the layers inside it are counted too,
    under the API path they were refused on (a route the router never reached)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        # no answer at all: the request was cancelled first (nginx's 499, not a server error
        # that would page someone), unless the app raised (500): a predict request whose
        # client hung up (CancelOnHangUp). Elsewhere a client that hangs up while its answer
        # is computed is counted with that answer's status: uvicorn lets the handler finish
        # and drops the answer
        status = CLIENT_CLOSED
        rid = request_id(scope)
        scope.setdefault("state", {})["request_id"] = rid
        logs.handling(rid)  # each line logged from here on names it
        tracing = getattr(scope["app"].state, "tracing", None) if "app" in scope else None
        if tracing is not None:  # the request's span (ABSA_TRACING) names it too
            tracing.annotate(**{"absa.request_id": rid})
        path = route_path(scope)  # now: a mount adds its own path to the root_path it shares

        async def send_status(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
                headers = [h for h in msg.get("headers", []) if h[0].lower() != REQUEST_ID]
                msg = {**msg, "headers": [*headers, (REQUEST_ID, rid.encode("ascii"))]}
            await send(msg)

        try:
            await self.app(scope, receive, send_status)
        except BaseException:
            status = 500 if status == CLIENT_CLOSED else status
            raise
        finally:
            route = scope.get("route")  # set by the router, on the scope all layers share
            admin = "app" in scope and getattr(scope["app"].state, "admin", False)
            path = getattr(route, "path", None) or _unrouted(path, admin)
            # a label takes only known methods: any token is a method to HTTP (h11 passes them)
            method = scope["method"] if scope["method"] in METHODS else "other"
            if status != 503:  # overload's refusal, held on purpose (shed_pause): not slow
                # by status class: fast 401/413/422 refusals pulled the p99 of the
                # answers down (AbsaSlowPredictions reads 2xx and client_closed, a wait
                # the client gave up on: with 4xx, slowness past the clients' timeout hid)
                self.metrics.latency.labels(path, status_class(status)).observe(
                    time.perf_counter() - t0
                )
            self.metrics.requests.labels(path, method, str(status)).inc()
            if status == CLIENT_CLOSED and tracing is not None:  # no status on the span
                tracing.annotate(**{"absa.client_closed": True})


def _unrouted(path: str, admin: bool) -> str:
    """The route label of a request with no route: an API path refused in front of the
    router, a mount's files (the page's, /docs's: one label each), or "unmatched" (any other
    path would be a new series; /admin/reload too where admin is off: no route there)."""
    if path == ADMIN_RELOAD and not admin:
        return "unmatched"
    if path in GATED_PATHS or path == OPENAPI_PATH:  # FastAPI's schema route sets no route
        return path
    for mount in (STATIC_PATH, docs.ASSETS):
        if path.startswith(mount + "/"):
            return mount
    return "unmatched"
