"""A worker whose batcher stopped (a bug) stops itself. Under ``--workers N`` its supervisor
then starts a fresh one: the worker's own /healthz said 503, but a liveness probe reaches one
worker at random, so a broken worker stayed in rotation and answered its share of requests
503 for ever. A lone ``absa serve`` ends with status 70, for a restart policy to act on.

The fault is injected from outside the project: a ``sitecustomize`` on PYTHONPATH, loaded by
the server and by every worker it spawns, makes the first model call that finds a trigger
file return no outputs (the bug ``test_engine`` simulates in-process)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import ROOT, spawn, wait_ready
from tests.service.test_reload import worker_pids
from tests.service.test_shutdown import free_port

FAULT = """
import os
import shutil

if "ABSA_TEST_FAULT" in os.environ:
    from absa.model import predictor

    _forward = predictor.RuntimeModel.forward

    def forward(self, items, explain=False, max_batch=None):
        try:
            os.remove(os.environ["ABSA_TEST_FAULT"])  # the first call to find it fails
        except FileNotFoundError:
            return _forward(self, items, explain, max_batch)
        return None  # no outputs: the batcher's loop raises

    predictor.RuntimeModel.forward = forward
"""
REQUEST = {"text": "the food was great", "aspects": ["food"]}


@contextmanager
def faulty_server(
    artifact: Path, tmp_path: Path, *flags: str
) -> Iterator[tuple[subprocess.Popen, str, Path, Path]]:
    """``absa serve --model ARTIFACT FLAGS`` with the fault armed; yields the process, its
    URL, the trigger file (absent until the test makes it) and the log."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAULT)
    trigger, log = tmp_path / "trigger", tmp_path / "serve.log"
    port = free_port()
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    server = spawn(
        ["serve", "--model", str(artifact), "--port", str(port), *flags],
        log,
        PYTHONPATH=path,
        ABSA_TEST_FAULT=str(trigger),
        ABSA_DEVICE="cpu",
        ABSA_THREADS="1",
        ABSA_LOG_LEVEL="info",
    )
    try:
        yield server, f"http://127.0.0.1:{port}", trigger, log
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


def answers(url: str, n: int) -> list[int]:
    """The status of ``n`` requests, each on its own connection (so both workers take some)."""
    return [httpx.post(f"{url}/v1/predict", json=REQUEST, timeout=10).status_code for _ in range(n)]


def test_a_lone_server_whose_batcher_stopped_exits_70(artifact: Path, tmp_path: Path) -> None:
    with faulty_server(artifact, tmp_path) as (server, url, trigger, log):
        wait_ready(server, url, log)
        assert answers(url, 1) == [200]
        trigger.touch()
        assert answers(url, 1) == [503]
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still serving 30 s after its batcher stopped:\n{log.read_text()}")
        text = log.read_text()
        assert server.returncode == 70, text
        assert "the batcher stopped" in text and "stopping this worker" in text, text


def test_a_worker_whose_batcher_stopped_is_replaced(artifact: Path, tmp_path: Path) -> None:
    with faulty_server(artifact, tmp_path, "--workers", "2") as (server, url, trigger, log):
        deadline = time.monotonic() + 90
        while len(before := worker_pids(url)) < 2:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"two workers not up in 90 s:\n{log.read_text()}"
            time.sleep(0.2)
        trigger.touch()
        assert answers(url, 1) == [503]  # whichever worker took it
        deadline = time.monotonic() + 60
        while True:  # the failed worker gone, a fresh one in its place
            now = worker_pids(url)
            if len(now) == 2 and len(set(now) - set(before)) == 1:
                break
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"not replaced in 60 s: {now}\n{log.read_text()}"
            time.sleep(0.2)
        assert answers(url, 20) == [200] * 20
        health = [httpx.get(f"{url}/healthz", timeout=10).status_code for _ in range(10)]
        assert health == [200] * 10
        assert server.poll() is None  # the server itself goes on


HOSTED = """
import sys
from fastapi.testclient import TestClient
from absa.service.app import create_app
from tests.service.conftest import make_settings

request = {"text": "the food was great", "aspects": ["food"]}
with TestClient(create_app(make_settings(sys.argv[1], stop_on_failure=True))) as c:
    assert c.post("/v1/predict", json=request).status_code == 200
    c.app.state.engine.model.forward = lambda items, explain=False: None
    assert c.post("/v1/predict", json=request).status_code == 503
    assert c.get("/healthz").status_code == 503
print("alive")
"""


def test_a_host_without_a_sigterm_handler_is_not_killed(artifact: Path) -> None:
    """In a process where SIGTERM has no handler (a TestClient, an app embedded in another
    program) the signal would kill the host on the spot, without its shutdown: the worker
    stays up instead, its /healthz 503."""
    done = subprocess.run(
        [sys.executable, "-c", HOSTED, str(artifact)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "alive", done.stderr[-2000:]


def two_workers(model: Path, tmp_path: Path) -> tuple[subprocess.Popen, str, Path]:
    """``absa serve --model MODEL --workers 2`` on a free port: the process, its URL and log."""
    log = tmp_path / "serve.log"
    port = free_port()
    server = spawn(
        ["serve", "--model", str(model), "--port", str(port), "--workers", "2"],
        log,
        ABSA_DEVICE="cpu",
        ABSA_THREADS="1",
    )
    return server, f"http://127.0.0.1:{port}", log


def wait_for_workers(server: subprocess.Popen, url: str, log: Path) -> dict[str, str]:
    """The two workers' pids once both serve (each reports itself in /metrics)."""
    deadline = time.monotonic() + 90
    while len(pids := worker_pids(url)) < 2:
        assert server.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"two workers not up in 90 s:\n{log.read_text()}"
        time.sleep(0.2)
    return pids


def test_a_supervisor_stopped_by_a_worker_that_cannot_start_exits_as_a_failure(
    artifact: Path, tmp_path: Path
) -> None:
    """--workers 2, the model's folder gone, then a worker dies: its replacement cannot load
    the model and uvicorn's supervisor stops the server, the healthy worker too. absa serve
    then exited 0, so a restart policy of "on failure" left the service down."""
    model = tmp_path / "model"
    shutil.copytree(artifact, model)
    server, url, log = two_workers(model, tmp_path)
    try:
        pids = wait_for_workers(server, url, log)
        shutil.rmtree(model)
        os.kill(int(next(iter(pids))), signal.SIGKILL)
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 60 s after its worker could not start:\n{log.read_text()}")
        text = log.read_text()
        assert code == 70, text
        assert "absa serve: error: a worker could not start" in text, text
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)


def test_a_worker_started_in_place_of_one_that_died_is_counted(
    artifact: Path, tmp_path: Path
) -> None:
    """--workers 2 and a worker killed: uvicorn starts another, and nothing in /metrics said
    so (process metrics are left out under several workers): a crash loop was invisible.
    absa_worker_starts_total counts every start (from the monitoring review)."""
    from tests.service.test_reload import metric_samples

    server, url, log = two_workers(artifact, tmp_path)

    def starts() -> float:
        text = httpx.get(f"{url}/metrics", timeout=5).text
        return sum(v for _, v in metric_samples(text, "absa_worker_starts_total"))

    try:
        pids = wait_for_workers(server, url, log)
        assert starts() == 2
        os.kill(int(next(iter(pids))), signal.SIGKILL)
        deadline = time.monotonic() + 90
        while starts() < 3:  # the replacement, once it serves
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"no worker in its place:\n{log.read_text()}"
            time.sleep(0.2)
        assert starts() == 3
    finally:
        server.terminate()
        server.wait(timeout=30)
