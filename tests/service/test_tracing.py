"""ABSA_TRACING: the real app sends its spans by OTLP over HTTP to a collector, here a small
HTTP server in the test that decodes what arrives (OpenTelemetry's own protobuf messages)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import EXAMPLES, make_settings

pytest.importorskip("opentelemetry.sdk", reason="the otel extra")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = f"00-{TRACE_ID}-00f067aa0ba902b7-01"  # the caller's span, sampled


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ExportTraceServiceRequest]]:
    """An OTLP/HTTP trace receiver; the OTEL_* variables point the exporter at it."""
    received: list[ExportTraceServiceRequest] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                received.append(ExportTraceServiceRequest.FromString(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    yield received
    server.shutdown()
    server.server_close()


def spans_of(received: list[ExportTraceServiceRequest]) -> list[tuple[dict, object]]:
    """(resource attributes, span) of everything received."""
    out = []
    for request in received:
        for rs in request.resource_spans:
            resource = {a.key: a.value.string_value for a in rs.resource.attributes}
            out += [(resource, span) for ss in rs.scope_spans for span in ss.spans]
    return out


def attributes(span: object) -> dict:
    values = {}
    for a in span.attributes:  # type: ignore[attr-defined]
        v = a.value
        values[a.key] = v.string_value if v.HasField("string_value") else v.int_value
    return values


def test_a_request_is_a_span_in_the_callers_trace_with_its_inference(
    artifact: Path, collector: list[ExportTraceServiceRequest]
) -> None:
    from absa.service.app import create_app

    e = EXAMPLES[0]
    body = {"text": e.text, "aspects": [{"term": e.term, "start": e.start, "end": e.end}]}
    with TestClient(create_app(make_settings(artifact, tracing=True))) as client:
        r = client.post("/v1/predict", json=body, headers={"traceparent": CALLER})
        assert r.status_code == 200, r.text
        model = r.json()["model"]
        items = {"items": [body, body]}
        assert client.post("/v1/predict/batch", json=items).status_code == 200
        for path in ("/healthz", "/readyz", "/metrics"):
            assert client.get(path).status_code == 200
        big = {"text": "x " * 5000, "aspects": ["x"]}  # over the body limit: 413, traced too
        assert client.post("/v1/predict", json=big).status_code == 413
    # the app stopped: what its batch processor held has been sent
    spans = spans_of(collector)
    assert spans, "nothing reached the collector"
    assert {resource["service.name"] for resource, _ in spans} == {"absa"}
    by_name: dict[str, list] = {}
    for _, span in spans:
        by_name.setdefault(span.name, []).append(span)
    refused, server = sorted(
        by_name["POST /v1/predict"], key=lambda s: "absa.model" in attributes(s)
    )
    status = attributes(refused)
    assert status.get("http.response.status_code", status.get("http.status_code")) == 413
    assert server.trace_id.hex() == TRACE_ID  # joined to the caller's trace
    assert attributes(server)["absa.model"] == model
    assert attributes(server)["absa.aspects"] == 1
    (batch,) = by_name["POST /v1/predict/batch"]
    assert attributes(batch)["absa.aspects"] == 2 and attributes(batch)["absa.items"] == 2
    inference = by_name["absa.inference"]
    assert sorted(s.parent_span_id for s in inference) == sorted([server.span_id, batch.span_id])
    assert not [n for n in by_name if any(p in n for p in ("healthz", "readyz", "metrics"))]


def test_off_no_span_is_made(artifact: Path, collector: list[ExportTraceServiceRequest]) -> None:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact))) as client:
        r = client.post("/v1/predict", json={"text": "good food", "aspects": ["food"]})
        assert r.status_code == 200, r.text
    assert collector == []


def test_without_the_extra_serve_says_so_in_one_line(
    artifact: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from absa.cli import main

    monkeypatch.setitem(sys.modules, "opentelemetry.instrumentation.fastapi", None)
    monkeypatch.setenv("ABSA_TRACING", "true")
    assert main(["serve", "--model", str(artifact), "--port", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("absa serve: error: ABSA_TRACING needs the otel extra"), err
    assert len(err.splitlines()) == 1


def test_off_no_provider_exporter_or_instrumentation_is_loaded(artifact: Path) -> None:
    """(FastAPI imports OpenTelemetry's API where it is installed, a no-op without a
    provider: the SDK, the exporter and the instrumentation are what tracing would add.)"""
    import subprocess
    import sys

    code = (
        "import sys; from fastapi.testclient import TestClient; "
        "from absa.service.app import create_app; from absa.settings import Settings; "
        f"c = TestClient(create_app(Settings(model_dir={str(artifact)!r}, device='cpu'))); "
        "c.__enter__(); assert c.get('/healthz').status_code == 200; c.__exit__(None, None, None); "
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
        "'opentelemetry.exporter', 'opentelemetry.instrumentation'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_collector_that_is_down_does_not_hold_the_shutdown(
    artifact: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exporter's default (10 s an export, with retries) held a stopping worker for up to
    half a minute, past a pod's grace period."""
    import socket
    import time

    from absa.service.app import create_app
    from absa.service.tracing import SHUTDOWN_WAIT_S

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    with TestClient(create_app(make_settings(artifact, tracing=True))) as client:
        for _ in range(20):
            r = client.post("/v1/predict", json={"text": "good food", "aspects": ["food"]})
            assert r.status_code == 200, r.text
        t0 = time.monotonic()
    assert time.monotonic() - t0 < SHUTDOWN_WAIT_S + 2


def test_a_span_hides_the_query_strings_values(
    artifact: Path, collector: list[ExportTraceServiceRequest]
) -> None:
    """The request's span carried the query string as sent (http.url, and url.query under
    the stable conventions): a key a client put in the URL (?api_key=SECRET), which the
    access log hides, went to the trace collector. Its parameters' names are kept, their
    values not, as in the access log."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from absa.service.app import create_app

    app = create_app(make_settings(artifact, tracing=True))
    exported = InMemorySpanExporter()
    app.state.tracing.provider.add_span_processor(SimpleSpanProcessor(exported))
    with TestClient(app) as client:
        assert client.get("/v1/model?api_key=SECRET1&x=SECRET2&SECRET3").status_code == 200
    (span,) = [s for s in exported.get_finished_spans() if s.name == "GET /v1/model"]
    values = {k: v for k, v in (span.attributes or {}).items() if isinstance(v, str)}
    assert not {k: v for k, v in values.items() if "SECRET" in v}, values
    shown = [v for k, v in values.items() if k in ("http.url", "url.full", "url.query")]
    assert shown and all(v.endswith("api_key=***&x=***&***") for v in shown), values
