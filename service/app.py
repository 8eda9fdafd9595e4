"""The app factory: ``create_app(settings)``. Uvicorn entry point:
``uvicorn absa.service.app:create_app --factory`` (settings from ``ABSA_*`` variables)."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI

import absa
from absa.errors import AbsaError
from absa.service import docs, errors, logs
from absa.service.body import BodyDeadlines, BodyLimit
from absa.service.cors import JsonCORS, cors_headers
from absa.service.engine import BatchEngine
from absa.service.gate import NEED_KEY, ApiGate, InFlight, Slots
from absa.service.hangup import CancelOnHangUp
from absa.service.metrics import Metrics, model_labels
from absa.service.observe import REQUEST_ID, Observe
from absa.service.paths import ADMIN_RELOAD, JSON_PATHS, STATIC_PATH, route_path
from absa.service.reloader import (
    Reloader,
    load_at_start,
    load_category_predictor,
    note_serving,
)
from absa.service.routes import admin, ops, predict
from absa.service.sampling import AnswerSample, categories_path
from absa.service.shadow_slot import ShadowSlot
from absa.service.startup import OneLineRefusal
from absa.service.tracing import Tracing
from absa.settings import Settings, warn_unknown_variables_once

log = logging.getLogger(__name__)

#: how often a thread holding the GIL hands it over (Python's default: 5 ms). The event loop
#: waits that long for every turn while a heavy request's encoding runs in the engine's
#: thread; measured with one such thread: loop lag p50 6.9 -> 1.1 ms, max 38 -> 23 ms at
#: 1 ms (with four such threads, as a pool allowed before: p99 567 -> 43 ms)
GIL_SWITCH_INTERVAL_S = 0.001


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
        asked = {"sample_rate", "sample_below", "sample_max_mb"}
        unused = sorted(settings.model_fields_set & asked)
        if unused:  # set for a sample that is not kept
            log.warning(
                "%s set without ABSA_SAMPLE_PATH: no answers are kept",
                ", ".join(f"ABSA_{name.upper()}" for name in unused),
            )
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
        # a challenger only: one that is gone (pruned, say) never stops the service
        app.state.shadow_slot = shadow = ShadowSlot(
            settings,
            metrics,
            lambda: engine.model.runtime.digest,
            next((s for s in app.state.samples if s.kind == "term"), None),
        )
        shadow.load_at_start()
        shadow.start_following()
        app.state.tracing.start()
        app.state.reloader = reloader = Reloader(settings, engine, shadow.after_reload)
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
            await shadow.stop_following()
            await engine.stop()  # drains the queue: in-flight requests get their answers
            # what the shadow holds is scored (a few seconds at most), its disagreements
            # offered to the sample before the sample closes
            await shadow.close()
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
    app.state.shadow_slot = None  # ABSA_SHADOW_MODEL's ShadowSlot: set at start-up
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
