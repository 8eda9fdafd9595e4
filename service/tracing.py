"""OpenTelemetry traces (``ABSA_TRACING``; the ``otel`` extra): a span per API request,
joined to the caller's trace by its ``traceparent`` header, with the model and the number of
aspects on it, and a child span for the time the aspects waited for their batch and ran in
it. Spans go out by OTLP over HTTP in batches, set up by the standard variables
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME`` (default ``absa``),
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``). Probes, /metrics and the page's
files make none. Off, nothing of OpenTelemetry is imported and every call here does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

#: requests that make no span: probes and scrapes come every few seconds
UNTRACED = "/healthz,/readyz,/metrics,/static"
NEEDS = "ABSA_TRACING needs the otel extra: pip install 'absa[otel]'"


def check_installed() -> None:
    """ImportError with ``NEEDS`` where the otel extra is missing."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.instrumentation.fastapi  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as e:
        raise ImportError(f"{NEEDS} ({e.name} is not installed)") from None


class Tracing:
    """The app's tracer provider, or nothing (``enabled`` False): each worker process has its
    own, made with its app and shut down (what it holds sent) when the app stops."""

    def __init__(self, enabled: bool) -> None:
        self.provider: Any = None
        self.tracer: Any = None
        if not enabled:
            return
        check_installed()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        import absa

        resource = Resource.create({"service.version": absa.__version__})  # and the OTEL_* ones
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": "absa"}))  # none given
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
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
            excluded_urls=UNTRACED,
            exclude_spans=["receive", "send"],
        )
        log.info("tracing: spans go out by OTLP over HTTP")

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[None]:
        """A child span of the request's around the block."""
        if self.tracer is None:
            yield
            return
        with self.tracer.start_as_current_span(name, attributes=attributes):
            yield

    def annotate(self, **attributes: Any) -> None:
        """Attributes on the request's span (the current one)."""
        if self.tracer is None:
            return
        from opentelemetry import trace

        trace.get_current_span().set_attributes(attributes)

    def shutdown(self) -> None:
        """Send what is still held, and stop (the app's shutdown)."""
        if self.provider is not None:
            self.provider.shutdown()
