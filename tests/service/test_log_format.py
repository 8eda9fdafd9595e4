"""ABSA_LOG_FORMAT=json: a real `absa serve` writes every log line as one JSON object
(uvicorn's and the project's, the access log with its fields); text stays the default."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import spawn, wait_ready
from tests.service.test_shutdown import free_port

BODY = {"text": "the food was great", "aspects": ["food"]}
ADMIN_TOKEN = "admin-secret"


def _ask_one(url: str) -> None:
    assert httpx.post(f"{url}/v1/predict", json=BODY, timeout=30).status_code == 200


def _serve_and_ask(
    artifact: Path,
    tmp_path: Path,
    out: Path | None = None,
    pid: list | None = None,
    ask: Callable[[str], object] = _ask_one,
    **env: str,
) -> list[str]:
    """The log lines of a server ``ask`` sent its requests to (stderr's alone, with stdout
    into ``out``); the server's pid appended to ``pid``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    command = ["serve", "--model", str(artifact), "--port", str(port)]
    server = spawn(command, log, out, ABSA_DEVICE="cpu", ABSA_THREADS="1", **env)
    if pid is not None:
        pid.append(server.pid)
    try:
        wait_ready(server, url, log)
        ask(url)
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


def test_the_access_log_names_the_request_and_its_duration(
    artifact: Path, artifact_v2: Path, tmp_path: Path
) -> None:
    """An access line carried neither the request id (the X-Request-ID answered, the
    client's own included) nor how long the request took: the request a user reported by
    its id could not be found in the log. Every line logged while a request is handled
    carries its id too (the reload's, here)."""
    answered: dict[str, str] = {}

    def ask(url: str) -> None:
        r = httpx.post(f"{url}/v1/predict", json=BODY, headers={"X-Request-ID": "report-42"})
        assert r.status_code == 200 and r.headers["x-request-id"] == "report-42"
        answered["made"] = httpx.get(f"{url}/v1/model").headers["x-request-id"]
        _reload_to(url, artifact_v2, "reload-7")

    env = {"ABSA_LOG_FORMAT": "json", "ABSA_ADMIN_TOKEN": ADMIN_TOKEN}
    records = [json.loads(line) for line in _serve_and_ask(artifact, tmp_path, ask=ask, **env)]
    access = {r["path"]: r for r in records if r["logger"] == "uvicorn.access"}
    assert access["/v1/predict"]["request_id"] == "report-42"
    assert access["/v1/model"]["request_id"] == answered["made"]
    assert access["/admin/reload"]["request_id"] == "reload-7"
    for r in access.values():
        assert isinstance(r["duration_s"], float) and 0 <= r["duration_s"] < 60, r
    (swapped,) = [r for r in records if r["message"].startswith("now serving")]
    assert swapped["request_id"] == "reload-7"
    started = [r for r in records if r["message"].startswith("ready: serving")]
    assert started and all("request_id" not in r for r in started)  # no request: no id

    def ask_text(url: str) -> None:
        r = httpx.post(f"{url}/v1/predict", json=BODY, headers={"X-Request-ID": "report-43"})
        assert r.status_code == 200

    lines = _serve_and_ask(artifact, tmp_path, ask=ask_text)
    (line,) = [line for line in lines if '"POST /v1/predict' in line]
    assert re.search(r" 200 OK \(request report-43, \d+\.\d{3} s\)$", line), line


#: the real app under uvicorn as absa serve runs it (its log config, its HTTP protocol), with
#: one route that fails, as a bug would: ``python -c FAILING_ROUTE PORT`` in the project root
FAILING_ROUTE = """
import sys

import uvicorn

from absa.cli.serve import _log_config
from absa.service.app import create_app


def factory():
    app = create_app()

    async def boom():
        raise RuntimeError("a bug")

    app.add_api_route("/v1/boom", boom, methods=["GET"])
    return app


uvicorn.run(
    factory,
    factory=True,
    host="127.0.0.1",
    port=int(sys.argv[1]),
    log_config=_log_config("info", "json"),
    http="absa.service.connections:FirstRequestDeadline",
)
"""


def test_a_server_error_is_logged_once(artifact: Path, tmp_path: Path) -> None:
    """A 500 was logged twice, with the same traceback: the service's "unexpected error on
    /v1/boom (request ID)", then uvicorn's "Exception in ASGI application" (Starlette
    raises the error again once it has answered), which named no request."""
    import subprocess
    import sys

    from tests.service.conftest import ROOT

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    env = {**os.environ, "ABSA_MODEL_DIR": str(artifact), "ABSA_DEVICE": "cpu"}
    env.update(ABSA_THREADS="1", ABSA_LOG_FORMAT="json")
    with log.open("w") as out:
        argv = [sys.executable, "-c", FAILING_ROUTE, str(port)]
        server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(server, url, log)
        r = httpx.get(f"{url}/v1/boom", headers={"X-Request-ID": "boom-1"}, timeout=30)
        assert r.status_code == 500 and r.headers["x-request-id"] == "boom-1"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    told = [r for r in records if "RuntimeError: a bug" in json.dumps(r)]
    assert len(told) == 1, told
    assert told[0]["message"] == "unexpected error on /v1/boom (request boom-1)"
    assert told[0]["level"] == "ERROR" and told[0]["request_id"] == "boom-1"
    (access,) = [r for r in records if r["logger"] == "uvicorn.access" and r["path"] == "/v1/boom"]
    assert (access["status"], access["request_id"]) == (500, "boom-1")


def test_the_access_log_hides_the_query_strings_values(artifact: Path, tmp_path: Path) -> None:
    """The access line's path held the query string as sent: a key a client put in the URL
    (?api_key=SECRET) was in the log. Its parameters' names are kept, their values not."""

    def ask(url: str) -> None:
        assert httpx.get(f"{url}/v1/model?api_key=SECRET1&x=SECRET2&SECRET3").status_code == 200

    lines = _serve_and_ask(artifact, tmp_path, ask=ask, ABSA_LOG_FORMAT="json")
    assert not [line for line in lines if "SECRET" in line]
    (access,) = [
        r
        for r in map(json.loads, lines)
        if r["logger"] == "uvicorn.access" and r["path"].startswith("/v1/model")
    ]
    assert access["path"] == "/v1/model?api_key=***&x=***&***"
    assert '"GET /v1/model?api_key=***&x=***&*** HTTP/1.1" 200' in access["message"]


def test_a_reload_names_the_models_and_who_asked(
    artifact: Path, artifact_v2: Path, tmp_path: Path
) -> None:
    """A reload's line named the directories alone, "now serving /models/current (was
    /models/current)": the same words for any swap of a model copied over the served one
    (1.8.0 for 1.8.1). It names each model's name:version too, and /admin/reload says who
    asked (the request id), at INFO."""

    def ask(url: str) -> None:
        _reload_to(url, artifact_v2, "ops-9")

    env = {"ABSA_LOG_FORMAT": "json", "ABSA_ADMIN_TOKEN": ADMIN_TOKEN}
    records = [json.loads(line) for line in _serve_and_ask(artifact, tmp_path, ask=ask, **env)]
    name = json.loads((artifact / "metadata.json").read_text())["name"]
    (swapped,) = [r for r in records if r["message"].startswith("now serving")]
    assert swapped["message"] == (
        f"now serving {name}:v2 from {artifact_v2} (was {name}:v1 from {artifact})"
    )
    (asked,) = [r for r in records if r["logger"] == "absa.service.routes.admin"]
    assert asked["level"] == "INFO" and asked["request_id"] == "ops-9"
    assert asked["message"] == f"reload asked by request ops-9: model_dir {artifact_v2}"


def _probe_and_scrape(url: str) -> None:
    """What a kubelet and Prometheus ask, with one probe that fails (a POST: 405), and one
    request of the API."""
    for path in ("/healthz", "/readyz", "/metrics", "/healthz"):
        assert httpx.get(f"{url}{path}").status_code == 200
    assert httpx.post(f"{url}/healthz").status_code == 405
    assert httpx.get(f"{url}/v1/model").status_code == 200


def test_successful_probes_and_scrapes_are_left_out_of_the_access_log(
    artifact: Path, tmp_path: Path
) -> None:
    """Probes (/healthz every 10 s, /readyz every 5 s) and scrapes of /metrics filled the
    access log; only ABSA_LOG_LEVEL=warning dropped them, and the whole access log with
    them. Their successful lines are left out unless ABSA_ACCESS_LOG_PROBES is true; a
    probe that fails is still logged."""

    def access(**env: str) -> list[tuple[str, str, int]]:
        lines = _serve_and_ask(
            artifact, tmp_path, ask=_probe_and_scrape, ABSA_LOG_FORMAT="json", **env
        )
        records = [json.loads(line) for line in lines]
        return [
            (r["method"], r["path"], r["status"])
            for r in records
            if r["logger"] == "uvicorn.access"
        ]

    assert access() == [("POST", "/healthz", 405), ("GET", "/v1/model", 200)]
    logged = access(ABSA_ACCESS_LOG_PROBES="true")
    waited = logged.index(("GET", "/healthz", 200))  # wait_ready's /readyz before
    assert set(logged[:waited]) == {("GET", "/readyz", 200)}
    assert logged[waited:] == [
        ("GET", "/healthz", 200),
        ("GET", "/readyz", 200),
        ("GET", "/metrics", 200),
        ("GET", "/healthz", 200),
        ("POST", "/healthz", 405),
        ("GET", "/v1/model", 200),
    ]


def _reload_to(url: str, model_dir: Path, request_id: str) -> None:
    """POST /admin/reload to ``model_dir`` with the admin token and ``request_id``; swapped."""
    r = httpx.post(
        f"{url}/admin/reload",
        json={"model_dir": str(model_dir)},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "X-Request-ID": request_id},
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["changed"], r.text
