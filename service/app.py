"""The app factory: ``create_app(settings)``. Uvicorn entry point:
``uvicorn absa.service.app:create_app --factory`` (settings from ``ABSA_*`` variables)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from absa.service import errors
from absa.service.engine import BatchEngine
from absa.service.metrics import Metrics
from absa.service.reloader import Reloader, load_predictor
from absa.service.routes import admin, ops, predict
from absa.settings import Settings

log = logging.getLogger(__name__)


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, whatever Content-Length says."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self._refuse(send)
        # Read the body here: an error raised from inside the app's receive() would be
        # swallowed by FastAPI's body parsing and answered 400, not 413.
        body = bytearray()
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return  # the client went away
            body += msg.get("body", b"")
            if len(body) > self.limit:
                return await self._refuse(send)
            if not msg.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = JSONResponse({"detail": f"request body over {self.limit} bytes"}, status_code=413)
        await body({"type": "http"}, _empty_receive, send)


class Observe:
    """Request count and latency per route template (pure ASGI: no per-request task)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        status = 500

        async def send_status(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
            await send(msg)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", "unmatched")
            self.metrics.latency.labels(path).observe(time.perf_counter() - t0)
            self.metrics.requests.labels(path, scope["method"], str(status)).inc()


async def _empty_receive() -> Message:
    return {"type": "http.request", "body": b""}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        model_dir = settings.model_path()
        predictor = load_predictor(settings, model_dir)  # the same checks as a hot reload
        engine = BatchEngine(
            predictor, metrics, settings.max_batch_size, settings.max_wait_ms, settings.max_queue
        )
        await engine.start()
        meta = predictor.metadata
        metrics.model_info.labels(str(meta.get("name")), str(meta.get("version"))).set(1)
        app.state.engine = engine
        app.state.reloader = reloader = Reloader(settings, engine)
        reloader.start_polling()
        app.state.ready = True
        log.info("ready: serving %s from %s", meta.get("name"), model_dir)
        try:
            yield
        finally:
            app.state.ready = False
            await reloader.stop()
            await engine.stop()  # drains the queue: in-flight requests get their answers
            log.info("stopped")

    app = FastAPI(
        title="absa",
        version="0.1.0",
        description="Aspect-level sentiment: label, probabilities and attention per aspect.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.ready = False
    app.include_router(predict.router)
    app.include_router(ops.router)
    app.mount("/static", StaticFiles(directory=ops.STATIC), name="static")
    if settings.admin_token is not None and settings.admin_token.get_secret_value():
        app.include_router(admin.router)  # off without a token

    app.add_middleware(Observe, metrics=metrics)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    errors.install(app)
    return app
