"""A predict request whose client hangs up before its answer is cancelled under a real uvicorn
server: its aspects never reach the model, and it is counted as 499."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.service.conftest import EXAMPLES, make_settings, serve
from tests.service.test_batching import metric

E = EXAMPLES[0]
ONE = {"text": E.text, "aspects": [E.term]}
BODIES = {"/v1/predict": ONE, "/v1/predict/batch": {"items": [ONE, ONE]}}
#: the batcher waits this long for a batch to fill: a request alone waits all of it
WAIT_MS = 1500


def sample(url: str, name: str, labels: dict[str, str]) -> float:
    """The value of /metrics' sample ``name`` with exactly these labels (0 where none)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return 0.0


def requests_with(url: str, route: str, status: str) -> float:
    labels = {"route": route, "method": "POST", "status": status}
    return sample(url, "absa_requests_total", labels)


def send_and_hang_up(url: str, path: str, body: dict, after_s: float) -> None:
    """POST ``body`` on a raw connection and close it ``after_s`` later, unanswered."""
    host, port = url.removeprefix("http://").split(":")
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head + data)
        time.sleep(after_s)


@pytest.mark.parametrize("path", list(BODIES))
def test_a_request_whose_client_hangs_up_is_dropped_before_the_model(
    artifact: Path, path: str
) -> None:
    settings = make_settings(artifact, max_wait_ms=WAIT_MS, max_batch_size=64)
    with serve(settings) as url:
        # the same request answered: it waits for the batch, then one model call
        batches = metric(url, "absa_batch_size_count")
        r = httpx.post(f"{url}{path}", json=BODIES[path], timeout=30)
        assert r.status_code == 200, r.text
        assert metric(url, "absa_batch_size_count") == batches + 1
        assert requests_with(url, path, "200") == 1
        # and one whose client leaves while it waits for the batch to fill
        send_and_hang_up(url, path, BODIES[path], after_s=0.3)
        deadline = time.monotonic() + 10
        while requests_with(url, path, "499") < 1:
            assert time.monotonic() < deadline, "the hung-up request was never counted"
            time.sleep(0.05)
        # its wait is latency the slow-predictions alert reads (beside 2xx), not a refusal's
        latency = "absa_request_latency_seconds_count"
        assert sample(url, latency, {"route": path, "status_class": "client_closed"}) == 1
        assert sample(url, latency, {"route": path, "status_class": "4xx"}) == 0
        time.sleep(WAIT_MS / 1000 + 0.5)  # past the moment its batch would have run
        assert metric(url, "absa_batch_size_count") == batches + 1  # no model call for it
        assert metric(url, "absa_queue_depth") == 0  # and nothing of it left waiting
        assert requests_with(url, path, "200") == 1
        # the server goes on answering
        r = httpx.post(f"{url}{path}", json=BODIES[path], timeout=30)
        assert r.status_code == 200, r.text
        assert requests_with(url, path, "200") == 2


def test_a_client_that_leaves_after_its_answer_was_answered(artifact: Path) -> None:
    """The server says http.disconnect once the answer is sent too: no cancellation then."""
    with serve(make_settings(artifact)) as url:
        send_and_hang_up(url, "/v1/predict", ONE, after_s=1.0)  # answered in milliseconds
        time.sleep(0.2)
        assert requests_with(url, "/v1/predict", "200") == 1
        assert requests_with(url, "/v1/predict", "499") == 0
        assert metric(url, "absa_batch_size_count") >= 1


def run_layer(leave_after_s: float | None, cancel_after_s: float | None) -> dict:
    """CancelOnHangUp around an app that takes 10 s: the client leaves (http.disconnect) or
    the server cancels the request after the given seconds. What the app and layer saw."""
    import asyncio

    from absa.service.hangup import CancelOnHangUp

    seen: dict = {}

    async def app(scope: dict, receive: object, send: object) -> None:
        seen["body"] = (await receive())["body"]  # type: ignore[operator]
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen["app_cancelled"] = True
            raise

    async def main() -> None:
        messages = [{"type": "http.request", "body": b"{}"}]

        async def receive() -> dict:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(leave_after_s if leave_after_s is not None else 3600)
            return {"type": "http.disconnect"}

        async def send(msg: dict) -> None:
            seen.setdefault("sent", []).append(msg["type"])

        layer = CancelOnHangUp(app, frozenset({"/v1/predict"}), lambda s: s["path"])
        scope = {"type": "http", "method": "POST", "path": "/v1/predict"}
        task = asyncio.create_task(layer(scope, receive, send))
        if cancel_after_s is not None:
            await asyncio.sleep(cancel_after_s)
            task.cancel()
        try:
            await task
            seen["layer"] = "returned"
        except asyncio.CancelledError:
            seen["layer"] = "cancelled"

    asyncio.run(main())
    return seen


def test_the_layer_cancels_the_app_when_the_client_leaves_and_answers_nothing() -> None:
    seen = run_layer(leave_after_s=0.1, cancel_after_s=None)
    assert seen == {"body": b"{}", "app_cancelled": True, "layer": "returned"}


def test_a_cancellation_from_the_server_still_goes_through() -> None:
    """Shutting down, the server cancels the request: that is no hang-up to swallow."""
    seen = run_layer(leave_after_s=None, cancel_after_s=0.2)  # the watch has started by then
    assert seen == {"body": b"{}", "app_cancelled": True, "layer": "cancelled"}
