"""Service fixtures: the real app behind Starlette's TestClient (the lifespan loads and
warms the model) or under uvicorn, on the session's tiny artifacts (tests/conftest.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.helpers import ARTIFACT_EXAMPLES as EXAMPLES

__all__ = ["EXAMPLES", "LIMITS", "make_settings", "serve", "spawn", "wait_ready"]

# small limits, so every limit is cheap to hit
LIMITS = dict(max_text_chars=300, max_aspects=4, max_items=3, max_body_bytes=4096)


def make_settings(model_dir: Path, **overrides: object):  # type: ignore[no-untyped-def]
    """Settings for tests: CPU, one thread, the small limits, a failed batcher leaving the
    process alone; ``overrides`` win."""
    from absa.settings import Settings

    # the app runs in the test's own process: a failed batcher must not SIGTERM pytest
    values: dict = dict(device="cpu", threads=1, max_wait_ms=1.0, stop_on_failure=False, **LIMITS)
    values.update(overrides)
    return Settings(model_dir=model_dir, **values)


@pytest.fixture(scope="module")
def client(artifact: Path) -> Iterator[TestClient]:
    """The real app, started (model loaded, warmed up) for the module's tests."""
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(artifact))) as c:
        yield c


@contextmanager
def serve(settings, app=None) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The app (``app``, or one made of ``settings``) under uvicorn on a free loopback port,
    in a background thread."""
    import uvicorn

    from absa.service.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = app if app is not None else create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive(), "uvicorn exited during startup"
            assert time.monotonic() < deadline, "uvicorn did not start in 30 s"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
    assert not thread.is_alive(), "uvicorn did not stop"


ROOT = Path(__file__).resolve().parents[2]


def spawn(
    argv: list[str], log_path: Path, out_path: Path | None = None, **env: str
) -> subprocess.Popen:
    """``absa ARGV`` as a subprocess in the project root, the environment plus ``env``,
    stdout and stderr into ``log_path`` (stdout into ``out_path`` where given); SIGHUP at
    its default action, as from a terminal (a test run under nohup would hand it down
    ignored)."""
    import signal

    with log_path.open("w") as log, (out_path or Path(os.devnull)).open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "absa.cli", *argv],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=out if out_path else log,
            stderr=log if out_path else subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
        )


def wait_ready(server: subprocess.Popen, url: str, log_path: Path, timeout: float = 60) -> None:
    """Until ``url``/readyz answers 200; fails with the server's log if it exits first."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        assert server.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, f"not ready in {timeout:.0f} s"
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)


@contextmanager
def absa_serve(artifact: Path, tmp_path: Path, **env: str) -> Iterator[str]:
    """``absa serve`` (uvicorn with the service's own protocol class, as deployed) on a
    free loopback port, its log in tmp_path; yields its URL once ready."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    log = tmp_path / "serve.log"
    argv = ["serve", "--model", str(artifact), "--port", str(port), "--threads", "1"]
    server = spawn(argv, log, **env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(server, url, log)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
