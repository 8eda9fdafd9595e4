"""Overload: requests in flight are capped (503 + Retry-After at once, /healthz unaffected),
capacity is checked before any work, heavy work runs off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from tests.service.conftest import make_settings, serve

TEXT = "the wine list was great but the food was awful"
BODY = {"text": TEXT, "aspects": ["food"]}


def test_requests_over_max_in_flight_get_503_at_once(artifact: Path) -> None:
    """With one request in flight (its forward pass held), the next one is refused at once
    with 503 + Retry-After, and /healthz still answers at once."""
    release = threading.Event()
    entered = threading.Event()

    async def main(url: str, app_state) -> None:  # type: ignore[no-untyped-def]
        predictor = app_state.engine.model
        forward = predictor.forward

        def held(items, *args):  # type: ignore[no-untyped-def]
            entered.set()
            release.wait(10)
            return forward(items, *args)

        predictor.forward = held
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            first = asyncio.create_task(c.post("/v1/predict", json=BODY))
            deadline = time.perf_counter() + 30
            while not entered.is_set():  # the first request is in its forward pass
                assert not first.done(), f"the first request ended early: {first.result()}"
                assert time.perf_counter() < deadline, "the forward pass never started"
                await asyncio.sleep(0.005)
            t0 = time.perf_counter()
            second = await c.post("/v1/predict", json=BODY)
            refused_after = time.perf_counter() - t0
            health = await c.get("/healthz")
            elapsed = time.perf_counter() - t0
            # a /v1/ path with no route is no work to shed: its 503 was counted as a shed,
            # which AbsaServerErrors subtracts from the /v1 routes' 5xx it never was among
            stray = await c.get("/v1/zzz")
            release.set()
            assert (await first).status_code == 200
            third = await c.post("/v1/predict", json=BODY)
            metrics = (await c.get("/metrics")).text
        assert second.status_code == 503, second.text
        assert second.headers["Retry-After"]
        assert "in flight" in second.json()["detail"]
        assert health.status_code == 200
        assert stray.status_code == 404, stray.text
        assert 0.2 <= refused_after < 1.0  # refused after the shed pause, not at the end
        assert elapsed < 1.0
        assert third.status_code == 200  # the slot is free again
        assert "absa_shed_total 1.0" in metrics
        # the refusal, held for the shed pause, is no slow prediction: the latency alert
        # and the dashboards' p99 read this histogram (AbsaOverloaded says overload)
        count = 'absa_request_latency_seconds_count{route="/v1/predict",status_class="2xx"}'
        assert f"{count} 2.0" in metrics
        assert 'absa_requests_total{method="POST",route="/v1/predict",status="503"} 1.0' in metrics

    from absa.service import app as app_module

    apps = []
    create = app_module.create_app

    def capture(settings):  # type: ignore[no-untyped-def]
        apps.append(create(settings))
        return apps[-1]

    app_module.create_app = capture
    try:
        with serve(make_settings(artifact, max_in_flight=1, shed_delay_s=0.2)) as url:
            asyncio.run(main(url, apps[0].state))
    finally:
        app_module.create_app = create
        release.set()


def _status(sock: socket.socket) -> int:
    """The status of the answer on ``sock`` (its head read; the socket's timeout applies)."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, f"the connection closed before an answer: {head!r}"
        head += chunk
    return int(head.split(b" ", 2)[1])


def test_a_client_that_sends_its_body_slowly_holds_no_slot(artifact: Path) -> None:
    """A request takes one of the max_in_flight slots once its body has arrived. It took one
    as soon as its headers had: a few connections that sent their headers and then the body
    slowly (or never: uvicorn waits for ever) held every slot, and every other request to
    /v1/* was refused with 503 for as long as they stayed open (64 idle connections at the
    default limit). Those slow requests are answered once their bodies arrive."""
    body = json.dumps(BODY).encode()
    head = (
        "POST /v1/predict HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with serve(make_settings(artifact, max_in_flight=2, shed_delay_s=0.0)) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(3)]
        try:
            for sock in slow:
                sock.sendall(head + body[:5])  # and the rest later
            time.sleep(0.5)  # their headers are read: the app waits for their bodies
            r = httpx.post(f"{url}/v1/predict", json=BODY, timeout=30)
            assert r.status_code == 200, r.text
            for sock in slow:  # one after the other: each is answered
                sock.sendall(body[5:])
                assert _status(sock) == 200
        finally:
            for sock in slow:
                sock.close()


def test_full_queue_refuses_before_encoding(artifact: Path) -> None:
    """The capacity check comes before the work: a full queue means no encoding at all."""
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact, max_queue=4, shed_delay_s=0.2))) as c:
        engine = c.app.state.engine
        calls = []
        predictor = engine.model
        preprocess = predictor.preprocess
        predictor.preprocess = lambda *a, **k: calls.append(a) or preprocess(*a, **k)
        engine._pending = 4  # the queue is full
        try:
            t0 = time.perf_counter()
            r = c.post("/v1/predict", json=BODY)
            refused_after = time.perf_counter() - t0
            b = c.post("/v1/predict/batch", json={"items": [BODY]})
            # refused before the body is even parsed
            junk = c.post("/v1/predict", content=b"{", headers={"content-type": "application/json"})
        finally:
            engine._pending = 0
        assert r.status_code == 503 and r.headers["Retry-After"]
        assert refused_after >= 0.2  # after the shed pause
        assert b.status_code == 503
        assert junk.status_code == 503
        assert calls == []
        assert c.post("/v1/predict", json=BODY).status_code == 200


def threads_calling(obj: object, name: str) -> list[str]:
    """The names of the threads that call ``obj``'s method ``name`` from now on, in the
    order of the calls (the method wrapped on this object alone)."""
    seen: list[str] = []
    method = getattr(obj, name)

    def traced(*a, **k):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return method(*a, **k)

    setattr(obj, name, traced)
    return seen


def test_heavy_requests_are_encoded_and_answered_off_the_event_loop(artifact: Path) -> None:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact))) as c:
        predictor = c.app.state.engine.model
        seen: dict[str, str] = {}
        preprocess, postprocess = predictor.preprocess, predictor.postprocess

        def pre(*a, **k):  # type: ignore[no-untyped-def]
            seen["pre"] = threading.current_thread().name
            return preprocess(*a, **k)

        def post(*a, **k):  # type: ignore[no-untyped-def]
            seen["post"] = threading.current_thread().name
            return postprocess(*a, **k)

        predictor.preprocess, predictor.postprocess = pre, post
        loop_thread = c.portal.call(lambda: threading.current_thread().name)  # type: ignore[union-attr]
        assert c.post("/v1/predict", json=BODY).status_code == 200
        assert seen == {"pre": loop_thread, "post": loop_thread}  # light: on the loop
        explain = {**BODY, "explain": True}
        assert c.post("/v1/predict", json=explain).status_code == 200
        # in the engine's one thread for such work, not a pool that competes for the GIL
        assert all(name.startswith("absa-heavy") for name in seen.values()), seen
        seen.clear()
        assert c.post("/v1/predict/batch", json={"items": [explain]}).status_code == 200
        assert all(name.startswith("absa-heavy") for name in seen.values()), seen


def test_long_texts_are_encoded_off_the_event_loop(artifact: Path) -> None:
    """Light was a matter of aspects alone: a batch of 8 one-aspect items of 2,000
    decomposed characters ("e" and its accent, 4.5 us a character to tokenise) held the event
    loop 70 ms a request, /healthz up to 1.1 s under 40 such clients. Past HEAVY_CHARS of
    text a request is encoded in the engine's thread."""
    from absa.service.app import create_app
    from absa.service.routes.predict import HEAVY_CHARS

    with TestClient(create_app(make_settings(artifact))) as c:
        seen = threads_calling(c.app.state.engine.model, "preprocess")
        loop_thread = c.portal.call(lambda: threading.current_thread().name)  # type: ignore[union-attr]
        text = "e\u0301" * 500 + " the food was great"
        item = {"text": text, "aspects": ["food"]}
        short = {"text": "the food was great", "aspects": ["food"]}
        n = HEAVY_CHARS // len(text)  # as many as stay light
        assert c.post("/v1/predict/batch", json={"items": [item] * n + [short]}).status_code == 200
        assert set(seen) == {loop_thread}
        seen.clear()
        assert c.post("/v1/predict/batch", json={"items": [item] * (n + 1)}).status_code == 200
        assert seen and all(name.startswith("absa-heavy") for name in seen), seen


def test_extraction_runs_off_the_event_loop(artifact: Path, extractor_artifact: Path) -> None:
    """A request whose aspects are to be extracted counts one aspect, so it was light, and
    the extractor's onnxruntime call ran on the event loop: 80 ms a long text, /healthz held
    for seconds under two clients. It runs in the engine's thread now."""
    from absa.service.app import create_app

    settings = make_settings(artifact, extractor=extractor_artifact)
    with TestClient(create_app(settings)) as c:
        seen = threads_calling(c.app.state.engine.model, "extract")
        for body in ({"text": TEXT}, {"text": TEXT, "aspects": "auto"}):
            assert c.post("/v1/predict", json=body).status_code == 200
            assert c.post("/v1/predict/batch", json={"items": [body]}).status_code == 200
        assert len(seen) == 4 and all(name.startswith("absa-heavy") for name in seen), seen


def test_a_request_that_could_never_be_queued_is_413_not_503(artifact: Path) -> None:
    """Retrying would never help: over the share of the queue a heavy request may take."""
    from absa.service.app import create_app

    settings = make_settings(artifact, max_queue=16, max_batch_size=2, max_items=64)
    with TestClient(create_app(settings)) as c:
        assert c.app.state.engine.heavy_limit == 12
        item = {"text": "the food and the staff and the view", "aspects": ["food", "staff"]}
        r = c.post("/v1/predict/batch", json={"items": [item] * 7})  # 14 aspects
        assert r.status_code == 413, r.text
        assert "split it" in r.json()["detail"]
        r = c.post("/v1/predict/batch", json={"items": [item] * 6})  # 12: admitted
        assert r.status_code == 200


def test_a_refusal_whose_client_hangs_up_in_the_pause_is_not_counted_as_one(
    artifact: Path,
) -> None:
    """A queue-full refusal was counted in absa_rejected_total before its shed pause; a
    client that hung up meanwhile got no 503 (its request is a 499), yet AbsaServerErrors
    subtracted it from the 503s: real 500s above 1% could stay quiet."""
    words = ["apple", "banana", "cherry", "dinner"]
    text = "The " + " and the ".join(words) + " were fine."
    queued = {"items": [{"text": text, "aspects": words}, {"text": text, "aspects": words[:3]}]}
    body = json.dumps({"text": text, "aspects": words}).encode()
    # the batch's 7 aspects wait out the batching window in a queue of 8: 4 more do not fit
    # (refused once read, by the engine: a full queue is refused before the body, in ApiGate)
    settings = make_settings(artifact, max_queue=8, max_wait_ms=1500, shed_delay_s=2.0)
    with serve(settings) as url:
        port = int(url.rsplit(":", 1)[1])
        first = threading.Thread(
            target=httpx.post, args=(f"{url}/v1/predict/batch",), kwargs={"json": queued}
        )
        first.start()
        deadline = time.perf_counter() + 30  # the batch waits in the queue (a fixed 0.1 s
        while "absa_queue_depth 7.0" not in httpx.get(f"{url}/metrics").text:  # was flaky
            assert first.is_alive() and time.perf_counter() < deadline, "the batch never queued"
            time.sleep(0.01)
        sock = socket.create_connection(("127.0.0.1", port))
        head = (f"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
        sock.sendall(head + body)
        time.sleep(0.2)  # inside the shed pause
        sock.close()
        first.join()
        time.sleep(2.0)  # the pause is over
        metrics = httpx.get(f"{url}/metrics").text
    assert 'route="/v1/predict",status="499"} 1.0' in metrics, metrics
    assert "absa_rejected_total 0.0" in metrics


def test_an_answer_a_client_never_reads_holds_no_slot() -> None:
    """A client that pipelined big requests and never read the answers held its in-flight
    slot while uvicorn waited, without end, for the socket to drain: max_in_flight such
    connections shut every /v1/ client out. The work is done once the last body part is
    handed over: the slot is given back before it is sent."""
    from absa.service.gate import InFlight, Slots
    from absa.service.metrics import Metrics

    slots = Slots(1)
    sending = asyncio.Event()

    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"x" * 10, "more_body": True})
        await send({"type": "http.response.body", "body": b"y"})

    async def send(message) -> None:  # type: ignore[no-untyped-def]
        if message["type"] == "http.response.body" and not message.get("more_body"):
            sending.set()
            await asyncio.sleep(3600)  # the socket never drains

    async def receive():  # type: ignore[no-untyped-def]
        return {"type": "http.request", "body": b"", "more_body": False}

    async def main() -> None:
        gate = InFlight(app, slots, Metrics(), shed_delay_s=0.0)
        scope = {"type": "http", "path": "/v1/model", "root_path": "", "method": "GET"}
        task = asyncio.create_task(gate(scope, receive, send))
        await asyncio.wait_for(sending.wait(), 10)
        assert slots.taken == 0  # the answer is the socket's now, not the app's work
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert slots.taken == 0

    asyncio.run(main())
