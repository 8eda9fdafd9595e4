"""Hot reload from the registry: the admin endpoints, swaps under load with no failed
request, refused artifacts (checksum, parity) and registry polling, on a real uvicorn."""

from __future__ import annotations

import asyncio
import errno
import gzip
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from absa.model.registry import POINTER, Registry, atomic_write_json
from absa.service.app import create_app
from tests.helpers import synthetic_examples
from tests.service.conftest import make_settings, serve, spawn, wait_ready

TOKEN = "t"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NAME = "tiny"
BODIES = [
    {"text": e.text, "aspects": [{"term": e.term, "start": e.start, "end": e.end}]}
    for e in synthetic_examples(6, seed=1)
]


@pytest.fixture(scope="module")
def exported(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The session's tiny run exported twice, as versions v1 and v2. Read-only: copy them."""
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("reload-artifacts")
    for v in ("v1", "v2"):
        export_run(tiny_run, out / v, name=NAME, version=v)
    return {"v1": out / "v1", "v2": out / "v2"}


@pytest.fixture
def registry(exported: dict[str, Path], tmp_path: Path) -> Registry:
    """A registry holding v1 and v2, v1 promoted."""
    reg = Registry(tmp_path / "registry").init()
    for version, src in exported.items():
        reg.add(shutil.copytree(src, tmp_path / "staging" / version), version)
    reg.promote("v1")
    return reg


def add_variant(reg: Registry, source: str, version: str, **meta: object) -> str:
    """A copy of ``source`` added as ``version``, created later, with metadata changes."""
    staging = reg.root.parent / "staging" / version
    shutil.copytree(reg.path(source), staging)
    m = json.loads((staging / "metadata.json").read_text())
    m.update(version=version, created="2999-01-01T00:00:00+00:00", **meta)
    (staging / "metadata.json").write_text(json.dumps(m))
    reg.add(staging, version)
    return version


def point_at(reg: Registry, version: str) -> None:
    """CURRENT -> ``version`` without the checks ``promote`` makes (a version corrupted after
    its promotion, or a pointer another tool wrote): the service must check it itself."""
    atomic_write_json(reg.root / POINTER, {"version": version, "previous": [reg.current()]})


def settings(reg: Registry, **overrides: object):  # type: ignore[no-untyped-def]
    """The app serves the registry's current version; the exported v1 is only the fallback."""
    values: dict = {"registry": reg.root, "admin_token": TOKEN, "reload_interval_s": 0}
    values.update(overrides)  # polling only where a test asks for it
    return make_settings(reg.path("v1"), **values)


def served_version(url: str) -> str:
    r = httpx.get(f"{url}/v1/model", timeout=10)
    assert r.status_code == 200
    return r.json()["version"]


def reload(url: str, **body: object) -> httpx.Response:
    return httpx.post(f"{url}/admin/reload", json=body or None, headers=AUTH, timeout=30)


def predict_model(url: str) -> str:
    r = httpx.post(f"{url}/v1/predict", json=BODIES[0], timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["model"]


# --------------------------------------------------------------------------- access


def test_admin_is_absent_without_a_token(registry: Registry) -> None:
    for token in (None, ""):
        with TestClient(create_app(settings(registry, admin_token=token))) as c:
            assert c.post("/admin/reload", headers=AUTH).status_code == 404
            assert not any(p.startswith("/admin") for p in c.get("/openapi.json").json()["paths"])
            # a path the app does not serve: its 404 is "unmatched", as any other path's (it
            # was counted under /admin/reload, a route this app does not have)
            routes = {
                lab["route"]
                for lab, _ in metric_samples(c.get("/metrics").text, "absa_requests_total")
            }
            assert "unmatched" in routes and "/admin/reload" not in routes, routes


def test_admin_needs_the_right_token(registry: Registry) -> None:
    with TestClient(create_app(settings(registry))) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer "}):
            r = c.post("/admin/reload", headers=headers)
            assert r.status_code == 401, headers
            assert r.headers["www-authenticate"] == "Bearer"
        assert c.post("/admin/reload", headers=AUTH).json() == {
            "changed": False,
            "model_dir": str(registry.path("v1")),
            "version": "v1",  # the one answer shape: what is served, changed or not
        }


def test_the_schema_carries_the_admin_token_and_the_answer(registry: Registry) -> None:
    """The token was an optional header parameter named authorization, which OpenAPI 3
    ignores (Swagger UI could not send it), and the 200 answer an untyped object."""
    with TestClient(create_app(settings(registry))) as c:
        for url in ("/openapi.json", "/docs/openapi.json"):
            schema = c.get(url).json()
            scheme = schema["components"]["securitySchemes"]["adminToken"]
            assert scheme["type"] == "http" and scheme["scheme"] == "bearer", scheme
            assert "ABSA_ADMIN_TOKEN" in scheme["description"]
            operation = schema["paths"]["/admin/reload"]["post"]
            assert operation["security"] == [{"adminToken": []}]
            assert "parameters" not in operation, operation.get("parameters")
            answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
            assert answer == {"$ref": "#/components/schemas/ReloadResponse"}
            model = schema["components"]["schemas"]["ReloadResponse"]
            assert set(model["required"]) == {"changed", "model_dir", "version"}
            assert model.get("additionalProperties") is False
        # what the schema says is what is answered
        assert set(c.post("/admin/reload", headers=AUTH).json()) == set(model["properties"])


def test_a_body_not_sent_as_json_is_a_415(registry: Registry) -> None:
    """A form body was refused as "Input should be a valid dictionary" (422)."""
    with TestClient(create_app(settings(registry))) as c:
        r = c.post("/admin/reload", headers=AUTH, data={"model_dir": "x"})
        assert r.status_code == 415 and r.json()["detail"].startswith("send the body as JSON")
        assert c.post("/admin/reload", headers=AUTH).status_code == 200  # no body: fine
        # a compressed body: 415 as on /v1/*, where it was a 422 "its bytes are not UTF-8"
        gz = {**AUTH, "content-type": "application/json", "content-encoding": "gzip"}
        r = c.post("/admin/reload", headers=gz, content=gzip.compress(b"{}"))
        assert r.status_code == 415 and r.json()["detail"].startswith("send the body uncompressed")
        # without the token, or with a wrong one, no body is looked at (a form's type, a
        # JSON body's syntax): 401 first
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            r = c.post("/admin/reload", headers=headers, data={"model_dir": "x"})
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text
            assert r.json()["detail"] == "a valid admin token is required"
            json_type = {**headers, "content-type": "application/json"}
            r = c.post("/admin/reload", headers=json_type, content=b"{")
            assert r.status_code == 401, r.text
        # the 415s and 401s are counted under the route, not as "unmatched"
        counted = {
            (lab["route"], lab["status"])
            for lab, _ in metric_samples(c.get("/metrics").text, "absa_requests_total")
        }
        assert {("/admin/reload", "415"), ("/admin/reload", "401")} <= counted, counted
    with TestClient(create_app(settings(registry, admin_token=None))) as c:  # no admin: 404
        assert c.post("/admin/reload", headers=AUTH, data={"model_dir": "x"}).status_code == 404


def test_a_path_no_file_system_takes_is_a_422(registry: Registry) -> None:
    with TestClient(create_app(settings(registry))) as c:
        r = c.post("/admin/reload", headers=AUTH, json={"model_dir": "runs/\u0000x"})
        assert r.status_code == 422, r.text
        assert "NUL" in r.text
        assert c.post("/admin/reload", headers=AUTH).json()["changed"] is False  # still serving


def test_a_model_dir_given_twice_is_a_422(registry: Registry) -> None:
    """JSON keeps the last of two keys without a word: the second model_dir was loaded."""
    with TestClient(create_app(settings(registry))) as c:
        raw = b'{"model_dir": "runs/one", "model_dir": "runs/two"}'
        headers = {**AUTH, "content-type": "application/json"}
        r = c.post("/admin/reload", headers=headers, content=raw)
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == (
            "the key 'model_dir' is given twice in one object: send each field once"
        )
        assert c.post("/admin/reload", headers=AUTH).json()["changed"] is False  # still serving


def test_a_path_with_a_lone_surrogate_is_a_422(registry: Registry) -> None:
    """JSON can carry a lone surrogate (\\ud800), which no file name can hold: it was a 500
    (UnicodeEncodeError from resolving the path, before the reload's own checks)."""
    with TestClient(create_app(settings(registry)), raise_server_exceptions=False) as c:
        raw = b'{"model_dir": "runs/\\ud800x"}'
        headers = {**AUTH, "content-type": "application/json"}
        r = c.post("/admin/reload", headers=headers, content=raw)
        assert r.status_code == 422, r.text
        assert "surrogate" in r.json()["detail"]
        assert c.post("/admin/reload", headers=AUTH).json()["changed"] is False  # still serving


def test_a_path_with_a_control_character_is_a_422(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    """A newline in model_dir went raw into the text log's lines (the reload asked, then
    refused): a line of the asker's own making in the server's log."""
    with TestClient(create_app(settings(registry))) as c, caplog.at_level("INFO"):
        for bad in ("/tmp/x\n2026-12-05 ERROR injected", "/tmp/x\ty", "/tmp/\x1b[31mred"):
            r = c.post("/admin/reload", headers=AUTH, json={"model_dir": bad})
            assert r.status_code == 422, r.text
            assert "control character" in r.json()["detail"]
        assert not [rec for rec in caplog.records if "injected" in rec.getMessage()]


# --------------------------------------------------------------------------- reload


def test_promote_then_reload_serves_the_new_version(registry: Registry) -> None:
    with serve(settings(registry)) as url:
        assert served_version(url) == "v1"
        assert predict_model(url) == f"{NAME}:v1"
        registry.promote("v2")
        assert served_version(url) == "v1"  # nothing changes until asked
        r = reload(url)
        assert r.status_code == 200, r.text
        assert r.json() == {"changed": True, "model_dir": str(registry.path("v2")), "version": "v2"}
        assert served_version(url) == "v2"
        assert predict_model(url) == f"{NAME}:v2"
        assert reload(url).json()["changed"] is False  # already serving it


def test_a_shadow_promoted_and_reloaded_is_compared_with_itself_no_more(
    registry: Registry,
) -> None:
    """The held version served as the shadow (ABSA_SHADOW_MODEL) is promoted: once the
    workers reload, its texts are counted "same", not compared with themselves."""
    from tests.service.test_shadow import samples, wait_until

    shadowed = settings(registry, shadow_model=registry.path("v2"), shadow_rate=1.0)
    with serve(shadowed) as url:
        assert predict_model(url) == f"{NAME}:v1"
        wait_until(url, "compared", 1)
        registry.promote("v2")
        assert reload(url).json()["version"] == "v2"
        assert predict_model(url) == f"{NAME}:v2"
        text = wait_until(url, "same", 1)
    outcomes = {dict(k)["outcome"]: v for k, v in samples(text, "absa_shadow_texts_total").items()}
    assert outcomes["compared"] == 1 and outcomes["same"] == 1, outcomes


def test_the_digest_tells_two_models_of_one_version_name_apart(registry: Registry) -> None:
    """/v1/model said name and version alone: two exports given one version name (another
    calibration, another graph) looked the same to a client that caches answers."""
    staging = registry.root.parent / "staging" / "v1-recalibrated"
    shutil.copytree(registry.path("v1"), staging)
    meta = json.loads((staging / "metadata.json").read_text())
    meta["calibration"]["temperature"] *= 1.5  # its version name and the rest kept
    (staging / "metadata.json").write_text(json.dumps(meta))
    registry.add(staging, "v1-recalibrated")
    with TestClient(create_app(settings(registry))) as c:
        before = c.get("/v1/model").json()
        registry.promote("v1-recalibrated")
        assert c.post("/admin/reload", headers=AUTH).status_code == 200
        after = c.get("/v1/model").json()
    assert (after["name"], after["version"]) == (before["name"], before["version"])
    assert re.fullmatch("[0-9a-f]{64}", after["digest"]) and after["digest"] != before["digest"]


def test_an_artifact_copied_into_the_served_directory_is_loaded(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    """Served with --model DIR (no registry), another artifact copied over the directory's
    files, then /admin/reload: the reloader compared paths alone, answered changed: false,
    and the old model kept serving. The same directory with the same files still changes
    nothing (and loads nothing)."""
    current = shutil.copytree(exported["v1"], tmp_path / "current")
    with serve(make_settings(current, admin_token=TOKEN)) as url:
        assert reload(url).json() == {"changed": False, "model_dir": str(current), "version": "v1"}
        shutil.copytree(exported["v2"], current, dirs_exist_ok=True)  # an operator's cp -r
        r = reload(url)
        assert r.status_code == 200, r.text
        assert r.json() == {"changed": True, "model_dir": str(current), "version": "v2"}
        assert served_version(url) == "v2"
        assert predict_model(url) == f"{NAME}:v2"
        assert reload(url).json() == {"changed": False, "model_dir": str(current), "version": "v2"}
        text = httpx.get(f"{url}/metrics", timeout=5).text
    reloads = {lab["result"]: v for lab, v in metric_samples(text, "absa_reloads_total") if v}
    assert reloads == {"swapped": 1.0}


def test_no_failed_request_across_swaps_under_load(registry: Registry) -> None:
    """8 clients keep predicting while the champion flips between v1 and v2 six times."""

    async def scenario(url: str) -> tuple[Counter, list[str], list[dict]]:
        codes: Counter = Counter()
        models: list[str] = []
        stop = asyncio.Event()
        limits = httpx.Limits(max_connections=16)
        async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as c:

            async def client(i: int) -> None:
                n = i
                while not stop.is_set():
                    r = await c.post("/v1/predict", json=BODIES[n % len(BODIES)])
                    codes[r.status_code] += 1
                    if r.status_code == 200:
                        models.append(r.json()["model"])
                    n += 1

            async def swapper() -> list[dict]:
                answers = []
                for target in ("v2", "v1") * 3:
                    await asyncio.sleep(0.25)
                    registry.promote(target)
                    r = await c.post("/admin/reload", headers=AUTH)
                    assert r.status_code == 200, r.text
                    answers.append(r.json())
                await asyncio.sleep(0.25)
                stop.set()
                return answers

            *_, answers = await asyncio.gather(*(client(i) for i in range(8)), swapper())
        return codes, models, answers

    with serve(settings(registry)) as url:
        codes, models, answers = asyncio.run(scenario(url))
        assert served_version(url) == "v1"
    assert set(codes) == {200}, codes  # zero failed requests
    assert [a["version"] for a in answers] == ["v2", "v1"] * 3
    assert all(a["changed"] for a in answers)
    assert set(models) == {f"{NAME}:v1", f"{NAME}:v2"}
    switches = sum(a != b for a, b in zip(models, models[1:], strict=False))
    assert switches >= 3, switches  # answers came from both models, in turns
    assert sum(codes.values()) > 50


# --------------------------------------------------------------------------- refusals


def test_a_corrupted_version_is_refused_and_the_old_one_keeps_serving(registry: Registry) -> None:
    bad = add_variant(registry, "v2", "v3-corrupt")
    with (registry.path(bad) / "model.onnx").open("ab") as f:
        f.write(b"\0")  # the checksum no longer verifies
    with serve(settings(registry)) as url:
        point_at(registry, bad)
        r = reload(url)
        assert r.status_code == 409
        assert "sha256" in r.json()["detail"] and "v3-corrupt" in r.json()["detail"]
        assert served_version(url) == "v1"
        assert predict_model(url) == f"{NAME}:v1"
        registry.rollback()  # the operator's way back; the service never left v1
        assert reload(url).json()["changed"] is False


def test_a_graph_onnxruntime_cannot_open_is_refused_as_a_conflict(registry: Registry) -> None:
    """Checksums that verify over bytes that are not a graph (a file written by another
    tool, an opset this onnxruntime lacks): 409 and counted as refused, not a 500."""
    from absa.model.artifact import read_metadata, record_checksums, write_metadata

    bad = add_variant(registry, "v2", "v6-not-a-graph")
    where = registry.path(bad)
    (where / "model.onnx").write_bytes(b"not a protobuf at all")
    meta = read_metadata(where)
    record_checksums(meta, where)
    write_metadata(where, meta)
    with TestClient(create_app(settings(registry))) as c:
        point_at(registry, bad)
        r = c.post("/admin/reload", headers=AUTH)
        assert r.status_code == 409, r.text
        assert "onnxruntime cannot open the graph" in r.json()["detail"]
        assert c.get("/v1/model").json()["version"] == "v1"
        text = c.get("/metrics").text
    reloads = {lab["result"]: v for lab, v in metric_samples(text, "absa_reloads_total") if v}
    assert reloads == {"refused": 1.0}


def wrong_shapes(reg: Registry) -> list[tuple[str, str]]:
    """Two versions whose files verify but do not hold what the loader reads, with the words
    of each refusal: a vocabulary that is not a list (its checksum recorded, as a file written
    by another tool), and a metadata ``model_config`` that is not an object (metadata.json
    holds the checksums, so none covers it)."""
    from absa.model.artifact import read_metadata, record_checksums, write_metadata

    vocab = add_variant(reg, "v2", "v7-vocab-object")
    where = reg.path(vocab)
    (where / "vocab.json").write_text("{}")
    meta = read_metadata(where)
    record_checksums(meta, where)
    write_metadata(where, meta)
    config = add_variant(reg, "v2", "v8-config-list", model_config=[])
    return [(vocab, "text pipeline"), (config, "'model_config' is not a JSON object")]


def test_files_of_the_wrong_shape_are_refused_as_a_conflict(registry: Registry) -> None:
    """They were a 500 ("internal error", a traceback in the log) and were not counted as
    refused: only ArtifactError, OSError, ValueError and KeyError were taken for a refusal."""
    with TestClient(create_app(settings(registry)), raise_server_exceptions=False) as c:
        for version, words in wrong_shapes(registry):
            point_at(registry, version)
            r = c.post("/admin/reload", headers=AUTH)
            assert r.status_code == 409, r.text
            detail = r.json()["detail"]
            assert str(registry.path(version)) in detail and words in detail, detail
            assert c.get("/v1/model").json()["version"] == "v1"
        text = c.get("/metrics").text
    reloads = {lab["result"]: v for lab, v in metric_samples(text, "absa_reloads_total") if v}
    assert reloads == {"refused": 2.0}


def test_a_poll_refuses_files_of_the_wrong_shape_once(registry: Registry) -> None:
    """A polling worker loaded such a version again at every poll (every file's sha256, a
    new onnxruntime session) and logged a line naming neither the version nor the file."""
    with serve(settings(registry, reload_interval_s=0.2)) as url:
        for version, _ in wrong_shapes(registry):
            before = refused(url)
            point_at(registry, version)
            deadline = time.monotonic() + 15
            while refused(url) == before:
                assert time.monotonic() < deadline, f"{version} was never refused"
                time.sleep(0.05)
            n = refused(url)
            time.sleep(0.8)  # several polls, which leave it be
            assert refused(url) == n, version
            assert served_version(url) == "v1"
        registry.promote("v2")
        wait_for_version(url, "v2")


def test_a_version_with_failed_parity_is_refused(
    registry: Registry, exported: dict[str, Path]
) -> None:
    parity = json.loads((exported["v2"] / "metadata.json").read_text())["parity"]
    bad = add_variant(registry, "v2", "v4-parity", parity={**parity, "prediction_mismatches": 2})
    no_record = add_variant(registry, "v2", "v5-no-parity", parity=None)
    with serve(settings(registry)) as url:
        for version, words in ((bad, "failed parity check"), (no_record, "no parity check")):
            point_at(registry, version)
            r = reload(url)
            assert r.status_code == 409, version
            assert words in r.json()["detail"]
            assert served_version(url) == "v1"
        r = reload(url, model_dir=str(registry.root / "nowhere"))
        assert r.status_code == 409 and "nowhere: does not exist" in r.json()["detail"]
        r = reload(url, model_dir=str(registry.path("v2")))  # an explicit directory is fine
        assert r.status_code == 200 and r.json()["version"] == "v2"
        assert predict_model(url) == f"{NAME}:v2"


# --------------------------------------------------------------------------- polling


def wait_for_version(url: str, version: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while served_version(url) != version:
        assert time.monotonic() < deadline, f"still serving {served_version(url)}, not {version}"
        time.sleep(0.05)


def test_polling_picks_up_a_promotion(registry: Registry) -> None:
    bad = add_variant(registry, "v1", "v3-corrupt")
    (registry.path(bad) / "model.onnx").write_bytes(b"not onnx")
    with serve(settings(registry, reload_interval_s=0.2)) as url:
        assert served_version(url) == "v1"
        with registry.lock():
            registry.promote("v2")
        wait_for_version(url, "v2")
        assert predict_model(url) == f"{NAME}:v2"
        point_at(registry, bad)
        time.sleep(0.8)  # several polls: the first refuses it, the others leave it be
        assert served_version(url) == "v2"
        assert predict_model(url) == f"{NAME}:v2"
        assert refused(url) == 1.0  # it was loaded, logged and counted at every poll
        # what lasts of it (the count's increase is a window): CURRENT names a version this
        # worker refused, until it moves (from the monitoring review)
        assert behind(url) == 1.0
        registry.promote("v1")
        wait_for_version(url, "v1")
        deadline = time.monotonic() + 10
        while behind(url) != 0.0:
            assert time.monotonic() < deadline, "absa_registry_behind stayed 1"
            time.sleep(0.1)


def test_a_pointer_moved_during_a_poll_is_refused_once(registry: Registry) -> None:
    """A poll read the registry, then loaded what the pointer named by then: moved in
    between (another process promoting), the refusal was remembered for the state read
    first, and the version refused was loaded, logged and counted again at the next poll."""
    from absa.service.reloader import Reloader

    bad = add_variant(registry, "v1", "v3-corrupt")
    (registry.path(bad) / "model.onnx").write_bytes(b"not onnx")

    class Racing(Reloader):  # another process moves the pointer just after the poll's read
        moves = [bad]

        def _poll_key(self) -> tuple:
            key = super()._poll_key()
            if self.moves:
                point_at(registry, self.moves.pop())
            return key

    with TestClient(create_app(settings(registry))) as client:
        racing = Racing(client.app.state.reloader.settings, client.app.state.reloader.engine)
        for _ in range(3):
            client.portal.call(racing.poll_once)
        assert racing.failures == 1  # refused once, then left be
        assert client.get("/v1/model").json()["version"] == "v1"


def test_a_version_refused_by_an_admin_reload_is_not_tried_again_by_the_poll(
    registry: Registry,
) -> None:
    """The poll remembered its own refusals only: a version /admin/reload had refused was
    loaded, logged and counted again at the next poll (README: a poll tries a refused
    version again only once the pointer or its files change)."""
    bad = add_variant(registry, "v1", "v3-corrupt")
    (registry.path(bad) / "model.onnx").write_bytes(b"not onnx")
    with TestClient(create_app(settings(registry))) as client:
        point_at(registry, bad)
        assert client.post("/admin/reload", headers=AUTH).status_code == 409
        reloader = client.app.state.reloader
        for _ in range(2):
            client.portal.call(reloader.poll_once)
        assert reloader.failures == 1  # the admin call's refusal, counted once
        registry.promote("v2")  # the pointer moves: the poll follows it
        client.portal.call(reloader.poll_once)
        assert client.get("/v1/model").json()["version"] == "v2"


def starved_reloader(client: TestClient, error: Callable[[], BaseException]):  # type: ignore[no-untyped-def]
    """The app's reloader on a machine short of memory for its first load only: that load
    raises ``error()``, the next ones load."""
    from absa.model.predictor import Predictor
    from absa.service.reloader import Reloader

    class Starved(Reloader):
        starved = 1

        def load(self, path: Path) -> Predictor:
            if self.starved:
                self.starved -= 1
                raise error()
            return super().load(path)

    app = client.app
    return Starved(app.state.reloader.settings, app.state.reloader.engine)  # type: ignore[attr-defined]


def _memory_error_in_ort() -> Exception:
    """What Runtime.load raises when onnxruntime runs out of memory opening the graph."""
    from absa.errors import ArtifactError

    e = ArtifactError("model.onnx: onnxruntime cannot open the graph: std::bad_alloc")
    e.__cause__ = MemoryError()
    return e


def _allocation_failed_in_ort() -> Exception:
    """onnxruntime's allocator out of memory during the warm-up's run: its RuntimeException."""
    from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException

    from absa.errors import ArtifactError

    e = ArtifactError("the model fails its first prediction")
    e.__cause__ = RuntimeException(
        "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
        "running MatMul node. Failed to allocate memory for requested buffer of size 4096"
    )
    return e


@pytest.mark.parametrize(
    "error",
    [
        MemoryError,
        lambda: OSError(errno.EMFILE, "Too many open files"),
        lambda: OSError(errno.ENOMEM, "Cannot allocate memory"),
        _memory_error_in_ort,
        _allocation_failed_in_ort,
    ],
    ids=["MemoryError", "EMFILE", "ENOMEM", "MemoryError-in-onnxruntime", "ort-allocator"],
)
def test_a_version_a_poll_could_not_load_for_want_of_memory_is_tried_again(
    registry: Registry, error: Callable[[], Exception], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load that failed for want of memory (or of file descriptors) was remembered as a
    refusal until the registry changed: the version was never tried again, though nothing
    was wrong with it. It is logged and counted as refused, and tried again once a wait has
    passed (doubled at each such refusal: a model that never fits is not loaded each poll)."""
    from absa.service import reloader as module

    monkeypatch.setattr(module, "TRANSIENT_WAIT_S", (0.3, 1.0))
    with TestClient(create_app(settings(registry))) as client:
        starved = starved_reloader(client, error)
        registry.promote("v2")
        client.portal.call(starved.poll_once)
        assert starved.failures == 1
        client.portal.call(starved.poll_once)  # within the wait: not tried
        assert starved.failures == 1 and starved.starved == 0
        assert client.get("/v1/model").json()["version"] == "v1"
        time.sleep(0.35)
        client.portal.call(starved.poll_once)
        assert client.get("/v1/model").json()["version"] == "v2"
        text = client.get("/metrics").text
    reloads = {lab["result"]: v for lab, v in metric_samples(text, "absa_reloads_total") if v}
    assert reloads == {"refused": 1.0, "swapped": 1.0}


def refused_once_then_loaded(
    registry: Registry, monkeypatch: pytest.MonkeyPatch, patch: tuple, left: list
) -> None:
    """v2 promoted, then ``patch`` (object, name, stand-in) made to fail once (``left``
    emptied): the first poll refuses v2, one within the wait (TRANSIENT_WAIT_S, set short
    by the caller) after loads it, and the refusal was counted once."""
    with TestClient(create_app(settings(registry))) as client:
        reloader = client.app.state.reloader
        registry.promote("v2")
        monkeypatch.setattr(*patch)
        client.portal.call(reloader.poll_once)
        assert reloader.failures == 1 and not left
        assert client.get("/v1/model").json()["version"] == "v1"
        time.sleep(0.35)  # the wait after a refusal a retry may not meet
        client.portal.call(reloader.poll_once)
        assert client.get("/v1/model").json()["version"] == "v2"
        assert reloader.failures == 1


@pytest.mark.parametrize("code", ["EIO", "ESTALE", "ETIMEDOUT"])
def test_a_version_a_poll_could_not_read_for_a_moment_is_tried_again(
    registry: Registry, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One read error of the volume (an NFS server's I/O error, a stale handle, a timeout)
    while the real loader checked a newly promoted version: it was refused as a bad model
    until the registry changed, so the worker served the old version until the next
    promotion or a restart, while the admin reload loaded the same files at once."""
    from absa.model import artifact
    from absa.service import reloader as module

    monkeypatch.setattr(module, "TRANSIENT_WAIT_S", (0.3, 1.0))
    real, hiccup = artifact.sha256_file, [1]
    promoted = registry.path("v2")

    def flaky(path: Path) -> str:
        if hiccup and promoted in Path(path).parents:
            hiccup.pop()
            number = getattr(errno, code)
            raise OSError(number, os.strerror(number))
        return real(path)

    refused_once_then_loaded(registry, monkeypatch, (artifact, "sha256_file", flaky), hiccup)


def test_an_artifact_that_is_wrong_is_not_tried_again_after_the_wait(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry is for the volume's errors only: a checksum that does not match stays
    refused until the registry changes, however long the wait."""
    from absa.service import reloader as module

    monkeypatch.setattr(module, "TRANSIENT_WAIT_S", (0.01, 0.01))
    with TestClient(create_app(settings(registry))) as client:
        reloader = client.app.state.reloader
        (registry.path("v2") / "vocab.json").write_text("[]")
        point_at(registry, "v2")
        client.portal.call(reloader.poll_once)
        time.sleep(0.05)
        client.portal.call(reloader.poll_once)
        assert reloader.failures == 1
        assert client.get("/v1/model").json()["version"] == "v1"


def test_a_signal_refused_for_want_of_memory_is_followed_once_the_wait_has_passed(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker's signal, refused here for want of memory, was never tried again (its
    id taken as seen): this worker served the old model until the next signal."""
    from absa.service import reloader as module
    from absa.service.reloader import Reloader

    monkeypatch.setattr(module, "TRANSIENT_WAIT_S", (0.3, 1.0))
    with TestClient(create_app(settings(registry, run_dir=tmp_path))) as client:
        starved = starved_reloader(client, MemoryError)
        other = Reloader(starved.settings, starved.engine)  # the worker that signals
        other._publish(registry.path("v2"))
        client.portal.call(starved.sync)
        assert starved.failures == 1
        client.portal.call(starved.sync)  # within the wait: not tried
        assert starved.failures == 1 and client.get("/v1/model").json()["version"] == "v1"
        time.sleep(0.35)
        client.portal.call(starved.sync)
        assert client.get("/v1/model").json()["version"] == "v2"


def test_a_newer_signal_is_followed_while_an_older_one_waits_to_be_tried_again(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from absa.service import reloader as module
    from absa.service.reloader import Reloader

    monkeypatch.setattr(module, "TRANSIENT_WAIT_S", (60.0, 60.0))
    promoted = add_variant(registry, "v1", "v3")
    with TestClient(create_app(settings(registry, run_dir=tmp_path))) as client:
        starved = starved_reloader(client, MemoryError)
        other = Reloader(starved.settings, starved.engine)
        other._publish(registry.path("v2"))
        client.portal.call(starved.sync)
        assert starved.failures == 1
        other._publish(registry.path(promoted))  # within the wait: a signal of its own
        client.portal.call(starved.sync)
        assert client.get("/v1/model").json()["version"] == "v3"


def test_a_signal_read_while_this_workers_own_reload_loads_is_passed_over(
    registry: Registry, tmp_path: Path
) -> None:
    """Two /admin/reloads at once on two workers: this one loads v3 (its own), another's
    signal to serve v2 comes meanwhile, is read and waits for the lock; the own reload then
    signals v3 (the other worker follows it). The stale v2 was loaded after it, and not
    signalled again: the two workers served different models for good."""
    from absa.service.reloader import Reloader

    promoted = add_variant(registry, "v1", "v3")
    with TestClient(create_app(settings(registry, run_dir=tmp_path))) as client:
        here = client.app.state.reloader
        other = Reloader(here.settings, here.engine)  # the other worker
        load = here.load

        def slow_load(target: Path):  # type: ignore[no-untyped-def]
            time.sleep(0.3)
            return load(target)

        here.load = slow_load

        async def both() -> None:
            own = asyncio.ensure_future(here.reload(registry.path(promoted), publish=True))
            await asyncio.sleep(0.1)  # the own reload holds the lock, loading
            other._publish(registry.path("v2"))
            await here.sync()  # reads v2's signal, waits for the lock, then ...
            await own

        client.portal.call(both)
        assert client.get("/v1/model").json()["version"] == "v3"
        sig = json.loads(here.signal_path.read_text())
        assert sig["model_dir"] == str(registry.path(promoted).resolve())


def test_a_poll_that_cannot_read_the_served_metadata_leaves_the_model_be(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The served version's metadata.json unreadable a moment (the volume's I/O error): the
    reloader took the served model for another one, loaded it, and refused it (logged,
    counted, a 409), where nothing had changed."""
    real_bytes, real_text = Path.read_bytes, Path.read_text
    served = registry.path("v1") / "metadata.json"

    def read_bytes(self: Path) -> bytes:
        if self == served:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_bytes(self)

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self == served:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_text(self, *args, **kwargs)  # type: ignore[arg-type]

    with TestClient(create_app(settings(registry))) as client:
        reloader = client.app.state.reloader
        monkeypatch.setattr(Path, "read_bytes", read_bytes)
        monkeypatch.setattr(Path, "read_text", read_text)
        client.portal.call(reloader.poll_once)
        monkeypatch.undo()
        assert reloader.failures == 0
        r = client.post("/admin/reload", headers=AUTH)
        assert r.status_code == 200 and r.json()["changed"] is False, r.text


def test_a_pointer_a_poll_could_not_read_for_want_of_descriptors_is_read_again(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CURRENT unreadable for want of file descriptors (EMFILE) was remembered as a bad
    pointer until it changed: the promotion it named was never loaded."""
    real = Path.read_text
    starved = [1]
    reads: list[Path] = []

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == POINTER:
            reads.append(self)
            if len(reads) == 3 and starved:  # the poll's two reads went well, the reload's not
                starved.pop()
                raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    from absa.service import reloader as module

    monkeypatch.setattr(module, "TRANSIENT_WAIT_S", (0.3, 1.0))
    refused_once_then_loaded(registry, monkeypatch, (Path, "read_text", read_text), starved)


def test_an_admin_reload_refused_for_want_of_memory_is_a_503_to_retry(registry: Registry) -> None:
    """It was a 409, as for a version that can never load: a client (a deploy script) takes
    409 as final, where the same call a moment later loads it."""
    with TestClient(create_app(settings(registry))) as client:
        client.app.state.reloader = starved_reloader(client, MemoryError)
        registry.promote("v2")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = client.post("/admin/reload", headers=auth)
        assert r.status_code == 503, r.text
        assert r.headers["Retry-After"] == "1" and "MemoryError" in r.json()["detail"]
        r = client.post("/admin/reload", headers=auth)
        assert r.status_code == 200 and r.json()["version"] == "v2", r.text


def behind(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    (value,) = [v for _, v in metric_samples(text, "absa_registry_behind")]
    return value


def refused(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return sum(
        v for lab, v in metric_samples(text, "absa_reloads_total") if lab["result"] == "refused"
    )


def test_a_pointer_that_is_gone_keeps_the_served_version(registry: Registry) -> None:
    """A registry without CURRENT serves the fallback model at start-up (before its first
    promotion); one that loses its pointer while serving a version of it (rm, a volume
    mounted empty) switched to the fallback at the next poll. It keeps serving now."""
    with serve(settings(registry, reload_interval_s=0.2)) as url:  # fallback: v1
        registry.promote("v2")
        wait_for_version(url, "v2")
        (registry.root / POINTER).unlink()
        time.sleep(0.8)
        assert served_version(url) == "v2"
        assert refused(url) == 1.0
        r = reload(url)
        # the history says v2 served: the pointer is lost (Registry.pointer), not yet to be
        assert r.status_code == 409 and "CURRENT is missing" in r.json()["detail"]
        registry.promote("v1")
        wait_for_version(url, "v1")


@pytest.mark.parametrize("interval", [{"reload_interval_s": 0.2}, {}], ids=["set", "default"])
def test_an_admin_model_dir_is_refused_where_polling_would_undo_it(
    registry: Registry, interval: dict
) -> None:
    """A service given a registry follows it by default (ABSA_REGISTRY alone is enough)."""
    s = make_settings(registry.path("v1"), registry=registry.root, admin_token=TOKEN, **interval)
    with serve(s) as url:
        r = reload(url, model_dir=str(registry.path("v2")))
        assert r.status_code == 409 and "promote it instead" in r.json()["detail"]
        assert served_version(url) == "v1"


def test_start_up_applies_the_same_checks_as_a_reload(artifact: Path, tmp_path: Path) -> None:
    """A model without a passed parity record is refused at start-up too, not only on reload."""
    import json
    import shutil

    from fastapi.testclient import TestClient

    from absa.errors import ArtifactError
    from absa.service.app import create_app
    from tests.service.conftest import make_settings

    bad = tmp_path / "no-parity"
    shutil.copytree(artifact, bad)
    meta = json.loads((bad / "metadata.json").read_text())
    del meta["parity"]
    (bad / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="no parity check"):
        with TestClient(create_app(make_settings(bad))):
            pass


def test_a_worker_started_while_the_pointer_is_bad_serves_what_the_others_serve(
    registry: Registry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Under --workers N a bad CURRENT is refused by the running workers, which keep serving;
    the worker uvicorn started in place of one that died loaded CURRENT, failed, and took the
    whole server down with it (exit 70). It serves what the others serve now, said so; a
    server started afresh (another parent process) still refuses to start."""
    from fastapi.testclient import TestClient

    from absa.errors import RegistryError
    from absa.service.app import create_app
    from absa.service.reloader import SERVING

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    s = settings(registry, run_dir=run_dir)
    with serve(s) as first:
        registry.promote("v2")
        assert reload(first).json()["version"] == "v2"
        (registry.root / POINTER).write_text("garbage{")
        assert reload(first).status_code == 409  # refused: v2 keeps serving
        with caplog.at_level(logging.WARNING, logger="absa.service.reloader"):
            with serve(s) as second:  # in place of a worker that died
                assert served_version(second) == "v2"
                assert predict_model(second) == f"{NAME}:v2"
        assert "serving what this server's other workers serve" in caplog.text
        assert served_version(first) == "v2"
    record = json.loads((run_dir / SERVING).read_text())
    assert Path(record["model_dir"]) == registry.path("v2").resolve()
    record["server"] = -1  # another server's record: a fresh start does not take it
    (run_dir / SERVING).write_text(json.dumps(record))
    with pytest.raises(RegistryError, match="unreadable pointer"):
        with TestClient(create_app(s)):
            pass


# --------------------------------------------------------------------------- trust (issue #13)


def metric_samples(text: str, name: str) -> list[tuple[dict, float]]:
    from prometheus_client.parser import text_string_to_metric_families

    return [
        (s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


@pytest.mark.parametrize(
    "header", [TOKEN, f"Token {TOKEN}", f"Basic {TOKEN}", f"Bearer{TOKEN}", f"{TOKEN} Bearer"]
)
def test_admin_refuses_a_token_without_the_bearer_scheme(registry: Registry, header: str) -> None:
    with TestClient(create_app(settings(registry))) as c:
        r = c.post("/admin/reload", headers={"Authorization": header})
        assert r.status_code == 401, header
        assert c.post("/admin/reload", headers={"Authorization": f"bearer {TOKEN}"}).is_success


@pytest.mark.parametrize(
    ("pointer", "reason"),
    [
        ('{"version": "gone", "previous": []}', "no version 'gone'"),
        ('{"version": "../../etc"}', "bad version name '../../etc'"),
        ('{"version": "v2", "prev', "unreadable pointer"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_bad_pointer_is_refused_with_the_reason(
    registry: Registry, pointer: str, reason: str
) -> None:
    with TestClient(create_app(settings(registry))) as c:
        (registry.root / POINTER).write_text(pointer)
        r = c.post("/admin/reload", headers=AUTH)
        assert r.status_code == 409, r.text
        assert reason in r.json()["detail"] and "CURRENT" in r.json()["detail"]
        assert c.get("/v1/model").json()["version"] == "v1"  # the old one keeps serving


def test_a_pointer_that_cannot_be_read_is_a_refusal_counted_once(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    """A registry the server may not read (a volume's permissions, here a pointer that is a
    symbolic link to itself, which root cannot read either) was a 500 with a traceback from
    /admin/reload, uncounted, and a poll warned of it at every interval."""
    with TestClient(create_app(settings(registry, reload_interval_s=0.1))) as c:
        (registry.root / POINTER).unlink()
        (registry.root / POINTER).symlink_to(POINTER)  # ELOOP on every open and stat
        with caplog.at_level(logging.WARNING, logger="absa.service.reloader"):
            r = c.post("/admin/reload", headers=AUTH)
            assert r.status_code == 409, r.text
            assert "CURRENT" in r.json()["detail"]
            time.sleep(0.6)  # several polls
        assert c.get("/v1/model").json()["version"] == "v1"
        text = c.get("/metrics").text
    refused = [
        v for lab, v in metric_samples(text, "absa_reloads_total") if lab["result"] == "refused"
    ]
    assert refused == [1.0]  # the admin's; the polls leave it be as it stands
    assert "Traceback" not in caplog.text and "poll (the registry" not in caplog.text


def test_model_info_and_refused_reloads_are_exported(registry: Registry) -> None:
    with TestClient(create_app(settings(registry))) as c:
        registry.promote("v2")
        assert c.post("/admin/reload", headers=AUTH).json()["version"] == "v2"
        (registry.root / POINTER).write_text("[]")
        assert c.post("/admin/reload", headers=AUTH).status_code == 409
        text = c.get("/metrics").text
    info = {lab["version"]: v for lab, v in metric_samples(text, "absa_model_info")}
    assert info == {"v1": 0.0, "v2": 1.0}
    reloads = {lab["result"]: v for lab, v in metric_samples(text, "absa_reloads_total") if v}
    assert reloads == {"swapped": 1.0, "refused": 1.0}


def test_public_model_info_names_eval_files_not_paths(registry: Registry) -> None:
    report = {"n": 3, "accuracy": 1.0, "macro_f1": 1.0}
    metrics = {
        "dev": {"n": 3, "accuracy": 1.0},
        "eval": {
            "/home/trainer/private/data/Restaurants_Test_Gold.xml": report,
            "C:\\Users\\trainer\\tweets.jsonl": {**report, "data": "/srv/x/tweets.jsonl"},
        },
    }
    v = add_variant(registry, "v2", "v3-eval", metrics=metrics)
    registry.promote(v)
    with TestClient(create_app(settings(registry))) as c:
        shown = c.get("/v1/model").json()["metrics"]
    assert shown["eval"] == {
        "Restaurants_Test_Gold.xml": report,
        "tweets.jsonl": {**report, "data": "tweets.jsonl"},
    }
    assert shown["dev"] == metrics["dev"]
    assert "trainer" not in json.dumps(shown)


# --------------------------------------------------------------------------- several workers

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def two_workers(
    reg: Registry, log_path: Path, log_level: str = "warning", threads: str | None = "1"
) -> Iterator[str]:
    """``absa serve --workers 2 --registry ...`` as a subprocess on a free port; yields its
    URL once both workers serve (each reports itself in /metrics), then stops it.
    ``threads``: ABSA_THREADS (None: unset)."""
    from tests.service.test_shutdown import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **{k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
        "ABSA_DEVICE": "cpu",
        "ABSA_ADMIN_TOKEN": TOKEN,
        "ABSA_LOG_LEVEL": log_level,
    }
    env.pop("ABSA_THREADS", None)
    if threads is not None:
        env["ABSA_THREADS"] = threads
    command = ["serve", "--registry", str(reg.root), "--port", str(port), "--workers", "2"]
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "absa.cli", *command],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 90
            while len(worker_pids(url)) < 2:
                assert server.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "two workers not up in 90 s"
                time.sleep(0.2)
            yield url
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                stopped = server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                stopped = server.wait(timeout=10)
    # a SIGTERM is a clean stop (README): it ended with status 2, "No such file or directory:
    # .../metrics/counter_<pid>.db", the supervisor's metrics directory removed before the
    # service's metrics module was first imported in it
    assert stopped == 0, f"exit {stopped} on SIGTERM: {log_path.read_text()[-3000:]}"


def worker_pids(url: str) -> dict[str, str]:
    """pid -> the version each live worker serves (absa_model_info, one sample per worker)."""
    try:
        text = httpx.get(f"{url}/metrics", timeout=5).text
    except httpx.TransportError:
        return {}
    return {
        lab["pid"]: lab["version"]
        for lab, value in metric_samples(text, "absa_model_info")
        if value == 1 and "pid" in lab
    }


def fresh_connection_versions(url: str, n: int) -> Counter:
    """The version named by ``n`` requests, each on its own connection (so both workers,
    which share the listening socket, take some)."""
    return Counter(
        httpx.post(f"{url}/v1/predict", json=BODIES[i % len(BODIES)], timeout=10).json()["model"]
        for i in range(n)
    )


def test_every_worker_follows_a_reload(registry: Registry, tmp_path: Path) -> None:
    with two_workers(registry, tmp_path / "serve.log") as url:
        assert set(worker_pids(url).values()) == {"v1"}
        registry.promote("v2")
        r = reload(url)  # reaches one worker
        assert r.status_code == 200 and r.json()["version"] == "v2", r.text
        deadline = time.monotonic() + 10
        while set(worker_pids(url).values()) != {"v2"}:
            assert time.monotonic() < deadline, f"workers serve {worker_pids(url)}"
            time.sleep(0.1)
        assert len(worker_pids(url)) == 2
        assert fresh_connection_versions(url, 60) == Counter({f"{NAME}:v2": 60})


def test_a_variable_that_is_no_setting_is_warned_of_once_not_by_every_worker(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app factory warns of it (plain uvicorn said nothing); under `absa serve` the
    command has, and its workers do not say it again."""
    monkeypatch.setenv("ABSA_PROT", "1")
    log_path = tmp_path / "serve.log"
    with two_workers(registry, log_path) as url:
        assert len(worker_pids(url)) == 2
    assert log_path.read_text().count("ABSA_PROT is not a setting (ignored)") == 1


def test_workers_share_the_cpus_when_no_thread_count_is_set(
    registry: Registry, tmp_path: Path
) -> None:
    """Two workers, each with onnxruntime's pool of every core: twice as many threads as
    CPUs, each worker's slowed by the other's. Unset, each takes its share."""
    log_path = tmp_path / "serve.log"
    with two_workers(registry, log_path, log_level="info", threads=None):
        pass
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    loads = [line for line in log_path.read_text().splitlines() if "loaded " in line]
    assert len(loads) == 2 and all(f"threads={share})" in line for line in loads), loads


def test_metrics_add_up_every_worker(registry: Registry, tmp_path: Path) -> None:
    with two_workers(registry, tmp_path / "serve.log", log_level="info") as url:
        n = 40
        assert sum(fresh_connection_versions(url, n).values()) == n
        text = httpx.get(f"{url}/metrics", timeout=5).text
    predicts = [
        v
        for lab, v in metric_samples(text, "absa_requests_total")
        if lab["route"] == "/v1/predict" and lab["status"] == "200"
    ]
    assert predicts == [float(n)], predicts  # one series: both workers' requests added up
    aspects = sum(v for _, v in metric_samples(text, "absa_aspects_total"))
    assert aspects == n
    # each worker's own log lines, with its pid: the CLI's logging set-up is the parent's
    # alone, so the workers' "ready" (and the provider they run on) went unseen
    log = (tmp_path / "serve.log").read_text()
    ready = re.findall(r" INFO absa\.service\.app \[(\d+)\]: ready: serving ", log)
    assert len(set(ready)) == 2, log


def test_serve_model_wins_over_the_registry_variable(
    registry: Registry, exported: dict[str, Path], tmp_path: Path
) -> None:
    """`absa serve --model DIR` with ABSA_REGISTRY set served the registry's version: the
    flag was read, then the variable chose. A flag overrides its variable, this one too;
    --model with --registry is refused."""
    from tests.service.test_shutdown import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    argv = ["serve", "--model", str(exported["v2"]), "--port", str(port)]
    server = spawn(argv, log, ABSA_REGISTRY=str(registry.root), ABSA_DEVICE="cpu")
    try:
        wait_ready(server, url, log)
        assert (served_version(url), registry.current()) == ("v2", "v1")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    both = ["serve", "--model", str(exported["v2"]), "--registry", str(registry.root)]
    proc = subprocess.run(
        [sys.executable, "-m", "absa.cli", *both],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "give --model or --registry, not both" in proc.stderr


def test_a_worker_started_later_does_not_go_back_to_a_stale_signal(
    registry: Registry, tmp_path: Path
) -> None:
    """Workers that poll the registry: one started after the last /admin/reload (in place of
    one that died) took that reload's signal for news and went back to the version it named,
    though the registry had moved on since (a rollback, say): it served the older version
    until its own next poll."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    s = settings(registry, run_dir=run_dir, reload_interval_s=30)
    with serve(s) as first:
        registry.promote("v2")
        r = reload(first)  # signals the other workers: serve v2
        assert r.status_code == 200 and r.json()["version"] == "v2", r.text
    registry.promote("v1")  # rolled back; the polling workers follow (not within this test)
    with serve(s) as second:
        assert served_version(second) == "v1"
        time.sleep(1.0)  # several looks at the signal file (every 0.25 s)
        assert served_version(second) == "v1"
        assert predict_model(second) == f"{NAME}:v1"


def test_a_served_model_whose_files_change_on_disk_is_said(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file of the model served changed in place: /readyz stayed 200 and nothing said so
    until a restart refused it (every worker, every pod). It serves on from memory; the
    change is logged once, absa_model_files_changed is 1 until the file verifies again."""
    served = tmp_path / "model"
    shutil.copytree(artifact, served)
    vocab = served / "vocab.json"
    good = vocab.read_bytes()

    def changed(c: TestClient) -> float:
        (value,) = [
            v for _, v in metric_samples(c.get("/metrics").text, "absa_model_files_changed")
        ]
        return value

    def until(c: TestClient, value: float) -> None:
        deadline = time.monotonic() + 10
        while changed(c) != value:
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.05)

    with TestClient(create_app(make_settings(served, reload_interval_s=0.05))) as c:
        assert changed(c) == 0
        vocab.write_bytes(good.replace(b'"great"', b'"graet"'))
        with caplog.at_level(logging.INFO, logger="absa.service.reloader"):
            until(c, 1)
            assert c.get("/readyz").status_code == 200
            r = c.post("/v1/predict", json={"text": "the food was great", "aspects": ["food"]})
            assert r.status_code == 200
            time.sleep(0.3)  # more polls: said once
            said = [r for r in caplog.records if "changed on disk" in r.getMessage()]
            assert len(said) == 1 and said[0].levelno == logging.ERROR
            assert f"{vocab}: sha256" in said[0].getMessage()
            vocab.write_bytes(good)
            until(c, 0)
        assert "verify again" in caplog.text
