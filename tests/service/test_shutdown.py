"""Graceful shutdown: on SIGTERM ``absa serve`` stops listening, answers every request
already queued, and exits 0; and the app's shutdown drains the batcher's queue, so a request
still waiting for its batch to fill gets its answer instead of being dropped.

Under uvicorn the server waits for requests in flight before the app's shutdown runs, so
the SIGTERM test alone passes whether or not the app drains (issue #13, item 22): the drain
itself is tested in-process below, with a batch wait far longer than the test allows."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import ARTIFACT_EXAMPLES as EXAMPLES
from tests.service.conftest import spawn, wait_ready

ROOT = Path(__file__).resolve().parents[2]
N_REQUESTS = 6
MAX_WAIT_MS = 1000  # a batch waits this long to fill: the requests sit in the queue


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queue_depth(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "absa_queue_depth":
                return sample.value
    return 0.0


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_drains_queued_requests_and_exits_0(
    artifact: Path, tmp_path: Path, signame: str
) -> None:
    """SIGHUP too (a closed terminal): one worker ended on the spot, the requests cut."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    env = dict(ABSA_DEVICE="cpu", ABSA_THREADS="1", ABSA_LOG_LEVEL="warning")
    command = ["serve", "--model", str(artifact), "--port", str(port)]
    server = spawn(command, log, ABSA_MAX_WAIT_MS=str(MAX_WAIT_MS), **env)
    pool = ThreadPoolExecutor(N_REQUESTS)
    try:
        wait_ready(server, url, log)
        deadline = time.monotonic() + 60
        bodies = [
            {"text": e.text, "aspects": [{"term": e.term, "start": e.start, "end": e.end}]}
            for e in EXAMPLES[:N_REQUESTS]
        ]
        futures = [pool.submit(httpx.post, f"{url}/v1/predict", json=b, timeout=30) for b in bodies]
        while queue_depth(url) < N_REQUESTS:  # all of them waiting for the batch to fill
            assert time.monotonic() < deadline, "the requests never queued"
            time.sleep(0.02)

        t0 = time.monotonic()
        server.send_signal(getattr(signal, signame))
        while not refuses_connections(port):  # the listener closes at once ...
            assert time.monotonic() - t0 < 5, f"still accepting connections 5 s after {signame}"
            time.sleep(0.02)
        assert server.poll() is None  # ... while the queued requests are still being answered

        responses = [f.result(timeout=30) for f in futures]
        assert [r.status_code for r in responses] == [200] * N_REQUESTS
        assert all(len(r.json()["results"]) == 1 for r in responses)

        server.wait(timeout=10)
        assert time.monotonic() - t0 < 10
        assert server.returncode == 0, (tmp_path / "serve.log").read_text()
        assert refuses_connections(port)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)


def test_sighups_while_it_stops_are_one_stop(artifact: Path, tmp_path: Path) -> None:
    """A closed terminal sends two SIGHUPs (the shell's and the kernel's): one that came as
    the server finished its graceful stop killed it (status 129, uvloop's traceback in the
    log). Every SIGHUP after the first is passed over, with a log line, however late."""
    port = free_port()
    log = tmp_path / "serve.log"
    server = spawn(["serve", "--model", str(artifact), "--port", str(port)], log)
    try:
        wait_ready(server, f"http://127.0.0.1:{port}", log)
        sent = 0
        while server.poll() is None and sent < 2000:  # until it has exited
            server.send_signal(signal.SIGHUP)
            sent += 1
            time.sleep(0.005)
        assert server.wait(timeout=30) == 0, log.read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
    said = log.read_text()
    assert sent > 1 and "SIGHUP again: passed over" in said and "Traceback" not in said, said


def test_app_shutdown_answers_requests_still_waiting_for_their_batch(artifact: Path) -> None:
    """Six requests wait for a batch that would fill only after 60 s; the app shuts down:
    all six are answered at once (the queue is drained, not dropped or left waiting)."""
    from absa.service.app import create_app
    from tests.service.conftest import make_settings

    async def scenario() -> tuple[list[int], float]:
        app = create_app(make_settings(artifact, max_wait_ms=60_000, max_batch_size=64))
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://absa") as client:
            bodies = [
                {"text": e.text, "aspects": [{"term": e.term, "start": e.start, "end": e.end}]}
                for e in EXAMPLES[:N_REQUESTS]
            ]
            posts = [asyncio.create_task(client.post("/v1/predict", json=b)) for b in bodies]
            engine = app.state.engine
            for _ in range(500):  # all of them queued, waiting for the batch to fill
                if engine.pending >= N_REQUESTS:
                    break
                await asyncio.sleep(0.01)
            assert engine.pending == N_REQUESTS
            assert not any(p.done() for p in posts)
            t0 = time.monotonic()
            shutdown = asyncio.create_task(lifespan.__aexit__(None, None, None))
            done, _ = await asyncio.wait(posts, timeout=10)
            took = time.monotonic() - t0
            assert len(done) == N_REQUESTS, "queued requests were left waiting at shutdown"
            await asyncio.wait_for(shutdown, 10)
            return [p.result().status_code for p in posts], took

    statuses, took = asyncio.run(scenario())
    assert statuses == [200] * N_REQUESTS
    assert took < 10
