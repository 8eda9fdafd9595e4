"""ABSA_LOG_FORMAT=json: a real `absa serve` writes every log line as one JSON object
(uvicorn's and the project's, the access log with its fields); text stays the default."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import spawn, wait_ready
from tests.service.test_shutdown import free_port


def _serve_and_ask(
    artifact: Path, tmp_path: Path, out: Path | None = None, pid: list | None = None, **env: str
) -> list[str]:
    """A served request's log lines (stderr's alone, with stdout into ``out``); the server's
    pid appended to ``pid``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    command = ["serve", "--model", str(artifact), "--port", str(port)]
    server = spawn(command, log, out, ABSA_DEVICE="cpu", ABSA_THREADS="1", **env)
    if pid is not None:
        pid.append(server.pid)
    try:
        wait_ready(server, url, log)
        body = {"text": "the food was great", "aspects": ["food"]}
        assert httpx.post(f"{url}/v1/predict", json=body, timeout=30).status_code == 200
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0, log.read_text()
    return [line for line in log.read_text().splitlines() if line.strip()]


def test_json_logs_are_one_object_per_line(artifact: Path, tmp_path: Path) -> None:
    lines = _serve_and_ask(artifact, tmp_path, ABSA_LOG_FORMAT="json")
    records = [json.loads(line) for line in lines]  # every line, or this fails
    for r in records:
        assert {"time", "level", "logger", "process", "message"} <= set(r), r
        assert "color_message" not in r  # uvicorn's copy with terminal colour codes
        assert r["time"].endswith("+00:00")  # ISO 8601, UTC
    loggers = {r["logger"] for r in records}
    assert {"absa.service.app", "absa.model.runtime", "uvicorn.error", "uvicorn.access"} <= loggers
    assert any(r["message"].startswith("ready: serving") for r in records)
    (access,) = [r for r in records if r["logger"] == "uvicorn.access" and r["method"] == "POST"]
    assert (access["method"], access["path"], access["status"]) == ("POST", "/v1/predict", 200)
    assert access["client"].startswith("127.0.0.1:")


def test_text_logs_are_the_default(artifact: Path, tmp_path: Path) -> None:
    lines = _serve_and_ask(artifact, tmp_path)
    assert any("absa.service.app" in line and "ready: serving" in line for line in lines)
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[0])


def test_an_unknown_format_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = spawn(["serve", "--port", str(free_port())], log, ABSA_LOG_FORMAT="xml")
    assert server.wait(timeout=60) == 2
    assert log.read_text() == (
        "absa serve: error: ABSA_LOG_FORMAT: input should be 'text' or 'json', not 'xml'\n"
    )


def test_every_command_follows_the_format(artifact: Path) -> None:
    """A retraining job or a file scoring logs as the server does: with ABSA_LOG_FORMAT=json
    its lines are JSON objects too; its output (stdout) is untouched."""
    import subprocess
    import sys

    from tests.service.conftest import ROOT

    argv = [sys.executable, "-m", "absa.cli", "predict", "--model", str(artifact)]
    argv += ["--text", "the food was great", "--aspect", "food"]
    for fmt in ("json", "text"):
        env = {**os.environ, "ABSA_LOG_FORMAT": fmt}
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["results"][0]["term"] == "food"
        logged = [line for line in done.stderr.splitlines() if line.strip()]
        assert logged, done.stderr
        if fmt == "json":
            records = [json.loads(line) for line in logged]
            assert any(r["logger"] == "absa.model.runtime" for r in records), records
        else:
            with pytest.raises(json.JSONDecodeError):
                json.loads(logged[0])


def test_text_logs_go_to_stderr_each_with_its_pid(artifact: Path, tmp_path: Path) -> None:
    """uvicorn's access lines went to stdout (a collector of stderr lost them) and, like its
    other lines, named no worker: "INFO:     127.0.0.1:39966 - "POST /v1/predict" 200"."""
    out, pid = tmp_path / "out", []
    lines = _serve_and_ask(artifact, tmp_path, out, pid)
    assert out.read_text() == ""
    (access,) = [line for line in lines if '"POST /v1/predict' in line]
    assert f"[{pid[0]}]" in access, access
    uvicorn_lines = [line for line in lines if line.startswith("INFO:")]
    assert uvicorn_lines and all(f"[{pid[0]}]" in line for line in uvicorn_lines), lines
