"""The app factory: ``create_app(settings)``. Uvicorn entry point:
``uvicorn absa.service.app:create_app --factory`` (settings from ``ABSA_*`` variables)."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from urllib.parse import parse_qsl

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import absa
from absa.errors import AbsaError
from absa.service import docs, errors, logs
from absa.service.auth import bearer_accepted, bearer_token
from absa.service.body import BodyDeadlines, BodyLimit
from absa.service.engine import BatchEngine
from absa.service.errors import reply
from absa.service.hangup import CancelOnHangUp
from absa.service.metrics import Metrics, model_labels
from absa.service.reloader import (
    Reloader,
    load_at_start,
    load_category_predictor,
    note_serving,
)
from absa.service.routes import admin, ops, predict
from absa.service.sampling import AnswerSample, categories_path
from absa.service.startup import OneLineRefusal
from absa.service.tracing import Tracing
from absa.settings import Settings, warn_unknown_variables_once

log = logging.getLogger(__name__)


JSON_PATHS = frozenset({"/v1/predict", "/v1/predict/batch"})
#: the API's routes: the requests that take a slot, or are shed while none is free (another
#: /v1/ path is the router's 404 or redirect, no work: shed, it was a 503 the alerts'
#: arithmetic subtracted from the API routes' 5xx without its being among them)
API_PATHS = JSON_PATHS | {"/v1/model"}
#: how often a thread holding the GIL hands it over (Python's default: 5 ms). The event loop
#: waits that long for every turn while a heavy request's encoding runs in the engine's
#: thread; measured with one such thread: loop lag p50 6.9 -> 1.1 ms, max 38 -> 23 ms at
#: 1 ms (with four such threads, as a pool allowed before: p99 567 -> 43 ms)
GIL_SWITCH_INTERVAL_S = 0.001


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


ADMIN_RELOAD = "/admin/reload"  # its body (optional) is JSON too
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


def route_path(scope: Scope) -> str:
    """The path the router matches: ``scope["path"]`` less the ``root_path`` a server puts in
    front of it (uvicorn --root-path /absa gives "/absa/v1/predict"), as Starlette's router
    strips it; the layers in front of the router must see the same path, or a prefix would
    take a request past them."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :] or "/"
    return path


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


#: the fewest characters of an API key or admin token not warned of: 16 random ones from
#: `openssl rand -hex 8` and up are beyond guessing over HTTP (failed tries are not throttled)
MIN_SECRET_CHARS = 16


def _warn_of_short_secrets(settings: Settings, api_keys: tuple[str, ...]) -> None:
    """A warning at start for an admin token or API key short enough to guess: every try is
    answered at once, and a token opens /admin/reload (never says the secret itself)."""
    token = settings.admin_token.get_secret_value() if settings.admin_token is not None else ""
    if 0 < len(token) < MIN_SECRET_CHARS:
        log.warning(
            "ABSA_ADMIN_TOKEN has %d characters: use %d or more random ones "
            "(openssl rand -hex 16), as failed tries are not throttled",
            len(token),
            MIN_SECRET_CHARS,
        )
    short = sum(len(k) < MIN_SECRET_CHARS for k in api_keys)
    if short:
        log.warning(
            "%d of the API keys (ABSA_API_KEY) have fewer than %d characters: use random ones "
            "of %d or more (openssl rand -hex 16), as failed tries are not throttled",
            short,
            MIN_SECRET_CHARS,
            MIN_SECRET_CHARS,
        )


#: the web page's files, a mount: the router sets no route for what a mount serves
STATIC_PATH = "/static"
#: the API's paths, which ApiGate may answer before the router sees them (a 401 on any)
GATED_PATHS = API_PATHS | {ADMIN_RELOAD}
OPENAPI_PATH = "/openapi.json"


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


#: why this process stopped itself, if it did: absa serve then exits with status 70
STOPPED_BY: list[BaseException] = []


def stop_worker(error: BaseException) -> None:
    """Stop this process as a SIGTERM does (uvicorn's graceful shutdown). A worker whose
    batcher stopped answers every model request 503; under ``--workers N`` a liveness probe
    reaches one worker at random and would leave it in rotation, while uvicorn's supervisor
    starts a fresh worker for one that exited. Only where SIGTERM has a handler (uvicorn's,
    while it serves): a host without one (a TestClient, an embedding) would die on the
    spot, without its shutdown; there the worker stays up, /healthz 503."""
    STOPPED_BY.append(error)
    if not callable(signal.getsignal(signal.SIGTERM)):  # SIG_DFL, SIG_IGN, or not Python's
        log.critical("the batcher stopped; no SIGTERM handler to stop this process with")
        return
    log.critical("stopping this worker: its batcher stopped; a supervisor starts a fresh one")
    signal.raise_signal(signal.SIGTERM)


def _samples(settings: Settings, metrics: Metrics) -> list[AnswerSample]:
    """The answer samples ABSA_SAMPLE_PATH asks for: the term model's, and the category
    model's beside it where one is served; their lines counted (absa_sample_lines_total)."""
    if settings.sample_path is None:
        return []
    rate, below, cap = settings.sample_rate, settings.sample_below, settings.sample_max_mb
    paths = {"term": settings.sample_path}
    if settings.category_model is not None:
        paths["category"] = categories_path(settings.sample_path)

    def counter(kind: str) -> Callable[[str, int], None]:
        for result in ("written", "dropped", "repeated"):  # from 0: the first is an increase
            metrics.sample_lines.labels(kind, result)
        return lambda result, n: metrics.sample_lines.labels(kind, result).inc(n)

    return [
        AnswerSample(
            path, rate, below, max_bytes=int(cap * 2**20), kind=kind, counted=counter(kind)
        )
        for kind, path in paths.items()
    ]


def create_app(settings: Settings | None = None) -> FastAPI:
    warn_unknown_variables_once()  # a typo is ignored: under plain uvicorn too, said
    settings = settings or Settings()
    metrics = Metrics(settings.prometheus_multiproc_dir)  # set: several workers
    api_keys, origins = settings.api_keys(), settings.cors_origin_list()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # per worker process: /healthz stays quick
        try:  # both models before anything starts: a refusal leaves nothing running
            # the same checks as a hot reload; a replacement worker may serve what others do
            model_dir, predictor = load_at_start(settings)
            category, category_model = settings.category_model, None
            if category is not None:
                category_model = load_category_predictor(settings, category)
        except (AbsaError, OSError, ValueError) as e:  # what the operator mends: one line
            app.state.start_refused = str(e)
            raise
        note_serving(settings, model_dir)
        engine = BatchEngine(
            predictor,
            metrics,
            settings.max_batch_size,
            settings.max_wait_ms,
            settings.max_queue,
            on_failure=stop_worker if settings.stop_on_failure else None,
        )
        await engine.start()
        deadlines.start()
        meta = predictor.metadata
        metrics.model_info.labels(*model_labels(predictor.runtime)).set(1)
        app.state.engine = engine
        if category_model is not None:
            app.state.category_model = category_model
            log.info("categories: serving %s", category)
        app.state.samples = _samples(settings, metrics)
        app.state.tracing.start()
        app.state.reloader = reloader = Reloader(settings, engine)
        reloader.start_polling()
        app.state.ready = True
        metrics.worker_starts.inc()
        # what start-up built (model, vocabulary, app) lives as long as the worker: keep it out
        # of the cyclic collector's full passes, whose pause would stall the event loop
        gc.collect()
        gc.freeze()
        if api_keys:
            log.info("/v1/* needs an API key (%d accepted)", len(api_keys))
        _warn_of_short_secrets(settings, api_keys)
        log.info("ready: serving %s from %s", meta.get("name"), model_dir)
        try:
            yield
        finally:
            app.state.ready = False
            await reloader.stop()
            await engine.stop()  # drains the queue: in-flight requests get their answers
            for sample in app.state.samples:
                sample.close()  # after the last answers: their lines are written
            await deadlines.stop()
            metrics.close()  # several workers: its live gauges leave /metrics
            # the spans still held are sent (a few seconds at most: the collector may be down)
            await asyncio.to_thread(app.state.tracing.shutdown)
            log.info("stopped")

    app = FastAPI(
        title="absa",
        version=absa.__version__,
        description="Aspect-level sentiment: label, probabilities and attention per aspect.",
        lifespan=lifespan,
        docs_url=None,  # /docs is served with local assets: docs.install below
        redoc_url=None,  # ReDoc would load its script from a CDN: blank without internet
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.ready = False
    app.state.category_model = None  # ABSA_CATEGORY_MODEL: set at start-up
    app.state.start_refused = None  # why the worker could not start: said in one line
    app.state.samples = []  # ABSA_SAMPLE_PATH: the answer samples, set at start-up
    app.state.tracing = Tracing(settings.tracing)  # off: does nothing
    app.include_router(predict.router)
    app.include_router(ops.router)
    app.mount(STATIC_PATH, ops.Revalidated(directory=ops.STATIC), name="static")
    docs.install(app)  # Swagger UI from the fastapi-offline package, not a CDN
    if settings.admin_token is not None and settings.admin_token.get_secret_value():
        app.include_router(admin.router)  # off without a token
        app.state.admin = True

    # innermost: the body is read (BodyLimit) before the connection is watched for a hang-up,
    # and before the request takes one of the slots (InFlight) ApiGate refuses at once past
    slots, shed_delay_s = Slots(settings.max_in_flight), settings.shed_delay_s
    deadlines = BodyDeadlines(settings.client_timeout_s)  # swept while the app is started
    app.add_middleware(CancelOnHangUp, paths=JSON_PATHS, route_path=route_path)
    app.add_middleware(InFlight, slots=slots, metrics=metrics, shed_delay_s=shed_delay_s)
    app.add_middleware(
        BodyLimit,
        limit=settings.max_body_bytes,
        deadlines=deadlines,
        paths=JSON_PATHS | {ADMIN_RELOAD},
        route_path=route_path,
    )
    app.add_middleware(
        ApiGate, slots=slots, metrics=metrics, shed_delay_s=shed_delay_s, api_keys=api_keys
    )
    # said with or without keys here: a client made from this schema may meet a server with
    docs.require_key(app, prefix="/v1/", detail=NEED_KEY, required=bool(api_keys))
    if origins:  # outside the gate: a preflight carries no API key
        exposed = [REQUEST_ID.decode(), "Retry-After"]
        app.add_middleware(
            JsonCORS,
            allow_origins=origins,
            allow_methods=["GET", "HEAD", "POST"],
            allow_headers=["Content-Type", "Authorization", REQUEST_ID.decode()],
            expose_headers=exposed,
        )
        # a 500 is answered outside every middleware (Starlette's ServerErrorMiddleware):
        # its handler adds what the CORS layer would have
        app.state.cors_headers = partial(cors_headers, origins, exposed)
    app.add_middleware(OneLineRefusal)  # the lifespan's alone: a worker that cannot start
    app.add_middleware(Observe, metrics=metrics)  # outermost: every answer is counted

    errors.install(app)
    # however the app is served: a key sent in the URL stays out of the access log
    logs.hide_query_values(logging.getLogger("uvicorn.access"))
    # successful probes and scrapes stay out of it, unless asked for (ABSA_ACCESS_LOG_PROBES)
    logs.leave_out_probes(logging.getLogger("uvicorn.access"), not settings.access_log_probes)
    app.state.tracing.instrument(app)  # ABSA_TRACING: a span per request, around them all
    return app
