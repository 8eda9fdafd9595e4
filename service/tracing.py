"""OpenTelemetry traces (``ABSA_TRACING``; the ``otel`` extra): a span per API request,
joined to the caller's trace by its ``traceparent`` header, with its request ID, the model
and the number of aspects on it (and ``absa.client_closed`` where the client hung up), a
child span for reading its text (and finding its aspects), and one for the time the
aspects waited for their batch and ran in it (the engine's timings on it). A JSON log line
of the request names the span (service/logs.py). Spans go out by OTLP over HTTP in
batches, set up by the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME`` (default ``absa``), ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER``). Probes, /metrics and the page's files make none (nor what
OTEL_PYTHON_FASTAPI_EXCLUDED_URLS adds). A span's URL and query show the query's values
hidden, as the access log does (``?api_key=***``), and captured headers their secrets
redacted. Off, no provider, exporter or instrumentation is loaded (FastAPI imports
OpenTelemetry's API where it is installed, a no-op without a provider) and every call here
does nothing.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from absa.errors import install_hint
from absa.service.logs import Throttle, without_query_values

log = logging.getLogger(__name__)

#: requests that make no span: probes and scrapes come every few seconds (each a regular
#: expression searched in the request's URL)
UNTRACED = "/healthz/?$,/readyz/?$,/metrics/?$,/static/"
#: the variables that name more requests to make no span, as the instrumentation reads them
#: (its excluded_urls argument, given, took their place: they were passed over)
EXCLUDED_URLS_VARIABLES = ("OTEL_PYTHON_FASTAPI_EXCLUDED_URLS", "OTEL_PYTHON_EXCLUDED_URLS")
#: request headers whose values never go out, whichever headers are captured
SECRET_HEADERS = ["authorization", "x-api-key", "cookie", "proxy-authorization"]
#: the loggers of the exporter and the batch processor: two lines per failed export, a few
#: a second while the collector is down, are let through once a minute each (a line is a
#: logger's message)
EXPORT_LOGGERS = (
    "opentelemetry.exporter.otlp.common.http",  # "Transient error ...", "Failed to export ..."
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.sdk._shared_internal",  # "Queue full, dropping span."
    "opentelemetry.sdk.trace.export",
)


def untraced() -> str:
    """``UNTRACED`` and what the OTEL_PYTHON_[FASTAPI_]EXCLUDED_URLS variable adds."""
    more = next((os.environ[v] for v in EXCLUDED_URLS_VARIABLES if os.environ.get(v)), "")
    return ",".join(filter(None, [UNTRACED, more.strip()]))


#: seconds an export may take (OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT, where set, instead): the
#: exporter's default, 10 s with retries, would hold a shutdown past a pod's grace period
#: while the collector is down
EXPORT_TIMEOUT_S = 2.0
#: seconds the app's shutdown waits for the spans still held to be sent
SHUTDOWN_WAIT_S = 5.0
_OFF = nullcontext()
_EXPORT_THROTTLE = Throttle()
NEEDS = f"ABSA_TRACING needs the otel extra: {install_hint('otel')}"


def _answered_status(error: Exception) -> int:
    """The status the service answers ``error`` with (service/errors.py); 500 for any error
    that is not the service's own kind."""
    from absa.errors import AbsaError
    from absa.service.errors import status_of

    return status_of(error) if isinstance(error, AbsaError) else 500


def check_installed() -> None:
    """ImportError with ``NEEDS`` where the otel extra is missing."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.instrumentation.fastapi  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as e:
        raise ImportError(f"{NEEDS} ({e.name} is not installed)") from None


#: the span attributes that may hold the request's URL with its query string (url.query,
#: the query alone under the stable HTTP conventions, apart)
_WITH_QUERY = ("http.url", "url.full", "http.target")


def _query_values_hidden(span: Any, scope: dict[str, Any]) -> None:
    """The server span's URL and query without the query's values (``?api_key=***``), as the
    access log shows them: the instrumentation put the query string there as sent (a key a
    client put in the URL went to the collector; its own redaction knows a few cloud
    signatures' names alone). Its hook, run once the span's attributes are set."""
    if not scope.get("query_string") or not span.is_recording():
        return
    held = getattr(span, "attributes", None) or {}
    hidden = {k: without_query_values(v) for k in _WITH_QUERY if isinstance(v := held.get(k), str)}
    query = held.get("url.query")
    if isinstance(query, str):
        hidden["url.query"] = without_query_values("?" + query)[1:]
    span.set_attributes(hidden)


class Tracing:
    """The app's tracer provider, or nothing (``enabled`` False): each worker process has its
    own, made with its app; spans go out once the app has started (``start``: the batch
    processor's thread) and what is still held is sent when it stops (``shutdown``)."""

    def __init__(self, enabled: bool) -> None:
        self.provider: Any = None
        self.tracer: Any = None
        if not enabled:
            return
        check_installed()
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        import absa

        resource = Resource.create({"service.version": absa.__version__})  # and the OTEL_* ones
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": "absa"}))  # none given
        # shut down by the app, within SHUTDOWN_WAIT_S: not again at the interpreter's exit
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.tracer = self.provider.get_tracer("absa")

    def instrument(self, app: Any) -> None:
        """A server span per request of ``app`` (FastAPI's instrumentation)."""
        if self.provider is None:
            return
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

        # no span per ASGI message (receive, send): three more a request, for nothing a
        # trace reader needs, and most of what tracing cost (benchmarks/tracing_overhead.py)
        FastAPIInstrumentor.instrument_app(
            app,
            tracer_provider=self.provider,
            excluded_urls=untraced(),
            exclude_spans=["receive", "send"],
            server_request_hook=_query_values_hidden,
            # headers an operator asks to capture (OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*)
            # go out without the secrets among them
            http_capture_headers_sanitize_fields=SECRET_HEADERS,
        )

    def start(self) -> None:
        """Spans go out from here on, in batches from a thread of their own (app start-up)."""
        if self.provider is None:
            return
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        given = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
        timeout = None if any(os.environ.get(v) for v in given) else EXPORT_TIMEOUT_S
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(timeout=timeout)))
        for name in EXPORT_LOGGERS:  # once: a logger holds a filter once
            logging.getLogger(name).addFilter(_EXPORT_THROTTLE)
        log.info("tracing: spans go out by OTLP over HTTP")

    def span(self, name: str, **attributes: Any) -> AbstractContextManager[Any]:
        """A child span of the request's around a ``with`` block (``as``: the span, or None
        where tracing is off). An error out of the block is recorded on it, and marks it
        failed where the service answers it 5xx: a client's 4xx (a text too long, an aspect
        not in it) is no failure of the service's, as on the request's own span."""
        if self.tracer is None:
            return _OFF
        return self._span(name, attributes)

    @contextmanager
    def _span(self, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
        from opentelemetry.trace import Status, StatusCode

        with self.tracer.start_as_current_span(
            name, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield span
            except Exception as e:
                span.record_exception(e)
                if _answered_status(e) >= 500:
                    span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"))
                raise

    def annotate(self, **attributes: Any) -> None:
        """Attributes on the request's span (the current one)."""
        if self.tracer is None:
            return
        from opentelemetry import trace

        trace.get_current_span().set_attributes(attributes)

    def shutdown(self) -> None:
        """Send what is still held, and stop (the app's shutdown): at most SHUTDOWN_WAIT_S,
        so that a collector that is down does not hold the worker past its grace period (the
        spans it could not take are dropped)."""
        if self.provider is None:
            return
        stopping = threading.Thread(target=self.provider.shutdown, daemon=True)
        stopping.start()
        stopping.join(SHUTDOWN_WAIT_S)
        if stopping.is_alive():
            log.warning("tracing: spans not all sent in %.0f s; dropped", SHUTDOWN_WAIT_S)
