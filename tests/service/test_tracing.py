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


def _in_memory(app):  # type: ignore[no-untyped-def]
    """The app's spans, kept in memory as each ends (besides the OTLP exporter)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exported = InMemorySpanExporter()
    app.state.tracing.provider.add_span_processor(SimpleSpanProcessor(exported))
    return exported


def test_a_span_names_its_request_and_times_its_work(
    artifact: Path, collector: list[ExportTraceServiceRequest]
) -> None:
    """Review (tracing): the request ID was on the log lines and the answer but on no span;
    the text's reading (an extraction: 96 ms of a 413 in no child span) and the wait for a
    batch against the model's run were one unexplained span."""
    from absa.service.app import create_app

    app = create_app(make_settings(artifact, tracing=True))
    exported = _in_memory(app)
    with TestClient(app) as client:
        r = client.post(
            "/v1/predict",
            json={"text": "good food, bad service", "aspects": ["food", "service"]},
            headers={"traceparent": CALLER, "X-Request-ID": "req-42"},
        )
        assert r.status_code == 200, r.text
        items = {"items": [{"text": "good food", "aspects": ["food"]}] * 3}
        assert client.post("/v1/predict/batch", json=items).status_code == 200
    spans = exported.get_finished_spans()
    (server,) = [s for s in spans if s.name == "POST /v1/predict"]
    assert server.attributes["absa.request_id"] == "req-42"
    children = {s.name: s for s in spans if s.parent and s.parent.span_id == server.context.span_id}
    assert set(children) == {"absa.preprocess", "absa.inference"}, children
    assert children["absa.preprocess"].attributes["absa.extracts"] is False
    inference = children["absa.inference"].attributes
    assert list(inference["absa.batch_sizes"]) == [2]
    assert inference["absa.queue_wait_ms"] >= 0 and inference["absa.model_ms"] > 0
    (batch,) = [s for s in spans if s.name == "POST /v1/predict/batch"]
    (batched,) = [
        s for s in spans if s.name == "absa.inference" and s.parent.span_id == batch.context.span_id
    ]
    assert list(batched.attributes["absa.batch_sizes"]) == [3]
    assert len(batch.attributes["absa.request_id"]) == 32  # one made for it


def test_the_variables_that_leave_urls_untraced_are_read(
    artifact: Path, collector: list[ExportTraceServiceRequest], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review (tracing): the app's own list (probes, /metrics) took the place of
    OTEL_PYTHON_FASTAPI_EXCLUDED_URLS: set to /v1/model, it was traced all the same."""
    from absa.service.app import create_app

    monkeypatch.setenv("OTEL_PYTHON_FASTAPI_EXCLUDED_URLS", "/v1/model")
    app = create_app(make_settings(artifact, tracing=True))
    exported = _in_memory(app)
    with TestClient(app) as client:
        assert client.get("/v1/model").status_code == 200
        assert client.post("/v1/predict", json={"text": "good food", "aspects": ["food"]})
        assert client.get("/readyz/").status_code in (200, 307, 404)  # a probe's, slashed
    names = {s.name for s in exported.get_finished_spans()}
    assert "POST /v1/predict" in names
    assert not [n for n in names if "model" in n or "readyz" in n], names


def test_captured_headers_go_out_without_secrets(
    artifact: Path, collector: list[ExportTraceServiceRequest], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review (tracing): an operator who captures request headers
    (OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST=.*) sent API keys to the
    collector in clear."""
    from absa.service.app import create_app

    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST", ".*")
    app = create_app(make_settings(artifact, tracing=True))
    exported = _in_memory(app)
    with TestClient(app) as client:
        headers = {"Authorization": "Bearer SECRET-KEY", "X-Api-Key": "SECRET-2", "X-Tag": "t"}
        assert client.get("/v1/model", headers=headers).status_code == 200
    (span,) = [s for s in exported.get_finished_spans() if s.name == "GET /v1/model"]
    values = {k: list(v) for k, v in (span.attributes or {}).items() if "header" in k}
    assert values.get("http.request.header.x_tag") == ["t"], values  # captured, and
    assert "SECRET" not in repr(values) and values["http.request.header.authorization"], values


def test_the_exporters_lines_are_let_through_once_a_minute() -> None:
    """Review (tracing): with the collector down, one worker wrote 32 lines in 20 s (a
    warning and an error per failed export), as long as the outage lasted."""
    import logging

    from absa.service.logs import Throttle

    now = [0.0]
    throttle = Throttle(60.0, clock=lambda: now[0])
    said = []
    for t in (0.0, 1.0, 2.0, 30.0, 61.0, 62.0):
        now[0] = t
        record = logging.LogRecord("x", logging.ERROR, "f", 1, "failed %s", ("batch",), None)
        if throttle.filter(record):
            said.append((t, record.getMessage()))
    assert said == [
        (0.0, "failed batch"),
        (61.0, "failed batch (and 3 more like it in the last 60 s, not logged)"),
    ]
    warning = logging.LogRecord("x", logging.WARNING, "f", 1, "retrying", (), None)
    assert throttle.filter(warning)  # each line its own
    # a shared filter on several loggers: one's warning hid the SDK's "Queue full" lines
    full = logging.LogRecord(
        "sdk", logging.WARNING, "f", 1, "Queue full, dropping %s.", ("span",), None
    )
    assert throttle.filter(full)


def test_tracing_throttles_the_exporters_loggers(artifact: Path) -> None:
    import logging

    from absa.service.tracing import EXPORT_LOGGERS, Tracing

    tracing = Tracing(True)
    tracing.start()
    try:
        for name in EXPORT_LOGGERS:
            assert any(type(f).__name__ == "Throttle" for f in logging.getLogger(name).filters)
    finally:
        tracing.shutdown()


def test_a_json_log_line_names_its_trace(
    artifact: Path, tmp_path: Path, collector: list[ExportTraceServiceRequest]
) -> None:
    """Review (tracing): a log line and its request's trace had nothing in common: the
    line had the request ID, the span not, nor the line the trace's ID."""
    import json

    import httpx

    from tests.service.test_log_format import BODY, _serve_and_ask

    def ask(url: str) -> None:
        r = httpx.post(f"{url}/v1/predict", json=BODY, headers={"traceparent": CALLER})
        assert r.status_code == 200

    lines = _serve_and_ask(artifact, tmp_path, ask=ask, ABSA_LOG_FORMAT="json", ABSA_TRACING="true")
    (access,) = [
        r for r in map(json.loads, lines) if r["logger"] == "uvicorn.access" and r.get("path")
    ]
    assert access["trace_id"] == TRACE_ID and len(access["span_id"]) == 16, access


def test_a_request_whose_client_hung_up_says_so_on_its_span(
    artifact: Path, collector: list[ExportTraceServiceRequest]
) -> None:
    """Review (tracing): counted 499 in the metrics, its span had no status, no event: it
    read as a request that simply ended."""
    import time

    from absa.service.app import create_app
    from tests.service.conftest import serve
    from tests.service.test_hangup import ONE, WAIT_MS, requests_with, send_and_hang_up

    settings = make_settings(artifact, tracing=True, max_wait_ms=WAIT_MS, max_batch_size=64)
    app = create_app(settings)
    exported = _in_memory(app)
    with serve(settings, app) as url:
        send_and_hang_up(url, "/v1/predict", ONE, after_s=0.3)
        deadline = time.monotonic() + 10
        while requests_with(url, "/v1/predict", "499") < 1:
            assert time.monotonic() < deadline, "the hung-up request was never counted"
            time.sleep(0.05)
    (span,) = [s for s in exported.get_finished_spans() if s.name == "POST /v1/predict"]
    assert span.attributes.get("absa.client_closed") is True, span.attributes


def test_a_clients_error_is_recorded_on_the_child_span_not_as_a_failure(
    artifact: Path, collector: list[ExportTraceServiceRequest]
) -> None:
    """Review (diff): the child spans took any exception for a failure: an aspect not in
    the text (a 422, the client's) marked absa.preprocess ERROR, where the request's own
    span, by the HTTP conventions, is not."""
    from opentelemetry.trace import StatusCode

    from absa.service.app import create_app

    app = create_app(make_settings(artifact, tracing=True))
    exported = _in_memory(app)
    with TestClient(app) as client:
        r = client.post("/v1/predict", json={"text": "good food", "aspects": ["pizza"]})
        assert r.status_code == 422, r.text
    (span,) = [s for s in exported.get_finished_spans() if s.name == "absa.preprocess"]
    assert span.status.status_code is StatusCode.UNSET
    assert [e.name for e in span.events] == ["exception"]
