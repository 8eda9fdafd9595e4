"""ABSA_SHADOW_MODEL=held: the shadow is the registry's newest version a retraining job held
(``promote = false``), followed as jobs hold new ones, and none once it, or a version after
it, serves; a held version that cannot be loaded is said once and never stops the worker."""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from absa.model import artifact as artifacts
from absa.model.registry import Registry
from tests.service.conftest import make_settings
from tests.service.test_shadow import wait_for

TEXT = "the staff was rude"


@pytest.fixture(scope="module")
def held_export(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A challenger (another model than ``artifact``), exported once. Read-only: copy it."""
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("held") / "challenger"
    export_run(tiny_run, out, name="challenger", version="c")
    return out


@pytest.fixture
def registry(artifact: Path, tmp_path: Path) -> Registry:
    """A registry serving v1 (``artifact``), holding no challenger."""
    reg = Registry(tmp_path / "registry").init()
    reg.add(shutil.copytree(artifact, tmp_path / "staging" / "v1"), "v1")
    reg.promote("v1")
    return reg


def hold(reg: Registry, source: Path, version: str, created: str) -> None:
    """Add ``source`` as ``version``, held by its job: its gate passed, not promoted."""
    d = shutil.copytree(source, reg.root.parent / "staging" / version)
    meta = artifacts.read_metadata(d)
    meta.update(version=version, created=created, held=True, gate={"passed": True})
    artifacts.write_metadata(d, meta)
    reg.add(d, version)


def until(client: TestClient, shadow: Callable[[dict | None], bool]) -> dict | None:
    """/v1/model's ``shadow`` once ``shadow`` holds of it (20 s at most)."""
    deadline = time.monotonic() + 20
    while True:
        info = client.get("/v1/model").json()["shadow"]
        if shadow(info):
            return info
        assert time.monotonic() < deadline, info
        time.sleep(0.05)


def test_the_shadow_follows_the_newest_held_version_until_it_serves(
    registry: Registry, artifact: Path, held_export: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from absa.service.app import create_app

    settings = make_settings(
        artifact, registry=registry.root, shadow_model="held", shadow_rate=1.0,
        reload_interval_s=0.1,
    )  # fmt: skip
    with caplog.at_level(logging.INFO), TestClient(create_app(settings)) as c:
        assert c.get("/v1/model").json()["shadow"] is None
        assert "shadow: the registry holds no challenger yet: the next version" in caplog.text

        hold(registry, held_export, "v2", "2099-01-02T00:00:00+00:00")
        info = until(c, lambda s: s is not None)
        assert info is not None and info["model"] == "challenger:v2"
        assert c.post("/v1/predict", json={"text": TEXT, "aspects": ["staff"]}).is_success
        text = wait_for(c, "compared", 1)
        assert 'model="challenger:v2"' in text

        hold(registry, held_export, "v3", "2099-01-03T00:00:00+00:00")  # the next job's
        until(c, lambda s: s is not None and s["model"] == "challenger:v3")
        assert "shadow: now challenger:v3 (was challenger:v2)" in caplog.text

        registry.promote("v3")  # it serves: no challenger any more, and v2 is older than it
        assert until(c, lambda s: s is None) is None
        deadline = time.monotonic() + 20
        while c.get("/v1/model").json()["version"] != "v3":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert "shadow: challenger:v3 is no challenger any more" in caplog.text


def test_a_held_version_that_cannot_be_loaded_is_said_once_and_the_worker_serves_on(
    registry: Registry, artifact: Path, held_export: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A held version whose graph is damaged: one error line over many polls (as the
    version stands on disk), the service answers, and the next held version is scored."""
    from absa.service.app import create_app

    hold(registry, held_export, "v2", "2099-01-02T00:00:00+00:00")
    (registry.path("v2") / "model.onnx").write_bytes(b"not a graph")
    settings = make_settings(
        artifact, registry=registry.root, shadow_model="held", reload_interval_s=0.05
    )
    with caplog.at_level(logging.ERROR), TestClient(create_app(settings)) as c:
        time.sleep(0.5)  # several polls
        assert c.post("/v1/predict", json={"text": TEXT, "aspects": ["staff"]}).is_success
        assert c.get("/v1/model").json()["shadow"] is None
        hold(registry, held_export, "v3", "2099-01-03T00:00:00+00:00")
        info = until(c, lambda s: s is not None)
        assert info is not None and info["model"] == "challenger:v3"
    refused = [r.message for r in caplog.records if "cannot be loaded" in r.message]
    assert len(refused) == 1, refused
    assert refused[0].startswith(f"shadow: serving without one: {registry.path('v2')} ")


def test_a_registry_that_cannot_be_read_is_said_once_and_the_shadow_scores_on(
    registry: Registry, artifact: Path, held_export: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pointer that is no JSON any more: one warning over many polls, the shadow it had
    kept (what the registry says is unknown, not "none"), and said again once it changes;
    a registry volume gone a while (mounted empty) is no "none held" either."""
    from absa.model.registry import POINTER
    from absa.service.app import create_app

    hold(registry, held_export, "v2", "2099-01-02T00:00:00+00:00")
    settings = make_settings(
        artifact, registry=registry.root, shadow_model="held", reload_interval_s=0.05
    )
    pointer = registry.root / POINTER
    good = pointer.read_text()
    with caplog.at_level(logging.WARNING), TestClient(create_app(settings)) as c:
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v2"
        atomic_write_text(pointer, "[")
        time.sleep(0.5)  # several polls
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v2"
        atomic_write_text(pointer, good)
        time.sleep(0.3)
        atomic_write_text(pointer, "{")
        time.sleep(0.3)
        atomic_write_text(pointer, good)
        away = registry.root.rename(registry.root.with_name("away"))
        registry.root.mkdir()  # the volume's mount point, empty
        time.sleep(0.3)
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v2"
    said = [r.message for r in caplog.records if "cannot look at the registry's held" in r.message]
    assert len(said) == 3, said
    assert "is no registry now" in said[-1] and away.is_dir()


def atomic_write_text(path: Path, text: str) -> None:
    """``text`` into ``path`` whole (a poll never reads it half written)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_an_empty_registry_before_its_first_job_is_no_warning(
    artifact: Path, held_export: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A new user's trial: an empty folder is a registry before its first job (the shipped
    model serves meanwhile), yet each worker's first poll warned "no registry now (a volume
    not mounted?)". Without a shadow to keep there is nothing to say; the first held
    version is scored."""
    from absa.service.app import create_app

    root = tmp_path / "registry"
    root.mkdir()
    settings = make_settings(artifact, registry=root, shadow_model="held", reload_interval_s=0.05)
    with caplog.at_level(logging.WARNING), TestClient(create_app(settings)) as c:
        time.sleep(0.4)  # several polls
        assert c.get("/v1/model").json()["shadow"] is None
        reg = Registry(root).init()
        hold(reg, held_export, "v1", "2099-01-01T00:00:00+00:00")
        info = until(c, lambda s: s is not None)
        assert info is not None and info["model"] == "challenger:v1"
    assert not [r.message for r in caplog.records if r.name == "absa.service.shadow_slot"]


def test_the_version_scored_torn_keeps_its_place_over_an_older_held_one(
    registry: Registry, artifact: Path, held_export: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A torn metadata.json lists its version first (no creation time), so the registry's
    newest held version read an older one: the shadow went back to it. The version scored
    that cannot be read now is said once and kept."""
    from absa.service.app import create_app

    hold(registry, held_export, "v2", "2099-01-02T00:00:00+00:00")
    hold(registry, held_export, "v3", "2099-01-03T00:00:00+00:00")
    settings = make_settings(
        artifact, registry=registry.root, shadow_model="held", reload_interval_s=0.05
    )
    with caplog.at_level(logging.WARNING), TestClient(create_app(settings)) as c:
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v3"
        atomic_write_text(registry.path("v3") / "metadata.json", '{"created": "2099-')
        time.sleep(0.4)  # several polls
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v3"
    said = [r.message for r in caplog.records if "cannot look at the registry's held" in r.message]
    assert len(said) == 1 and "metadata.json" in said[0], said


def test_a_reload_looks_at_the_held_versions_where_nothing_polls(
    registry: Registry, artifact: Path, held_export: Path, tmp_path: Path
) -> None:
    """With ``ABSA_RELOAD_INTERVAL_S=0`` the held shadow was resolved at start-up only:
    /admin/reload, and another worker's signal of one, look at the registry's held versions
    too, as they do at its pointer."""
    from absa.service.app import create_app
    from absa.service.reloader import Reloader

    auth = {"Authorization": "Bearer a-token-of-thirty-two-characters"}
    settings = make_settings(
        artifact, registry=registry.root, shadow_model="held", reload_interval_s=0,
        admin_token=auth["Authorization"].split()[1], run_dir=tmp_path / "run",
    )  # fmt: skip
    (tmp_path / "run").mkdir()
    with TestClient(create_app(settings)) as c:
        hold(registry, held_export, "v2", "2099-01-02T00:00:00+00:00")
        assert c.get("/v1/model").json()["shadow"] is None
        assert c.post("/admin/reload", headers=auth).json()["changed"] is False
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v2"

        hold(registry, held_export, "v3", "2099-01-03T00:00:00+00:00")
        here = c.app.state.reloader
        Reloader(here.settings, here.engine)._publish(registry.path("v1"))  # another worker's
        c.portal.call(here.sync)
        assert c.get("/v1/model").json()["shadow"]["model"] == "challenger:v3"

        registry.promote("v3")
        assert c.post("/admin/reload", headers=auth).json()["version"] == "v3"
        assert c.get("/v1/model").json()["shadow"] is None


def test_a_look_under_way_at_close_swaps_no_shadow_in_after_it(
    registry: Registry, artifact: Path, held_export: Path
) -> None:
    """A reload's look still loading a held version when the worker closed its slot swapped
    that shadow in (started, scoring into a closed sample) after the close."""
    import asyncio

    from absa.service.metrics import Metrics
    from absa.service.shadow_slot import ShadowSlot

    hold(registry, held_export, "v2", "2099-01-02T00:00:00+00:00")
    settings = make_settings(
        artifact, registry=registry.root, shadow_model="held", reload_interval_s=0
    )
    slot = ShadowSlot(settings, Metrics(), lambda: "served", None)
    opened = slot._open

    def slow_open(path: Path):  # type: ignore[no-untyped-def]
        time.sleep(0.3)
        return opened(path)

    slot._open = slow_open  # type: ignore[method-assign]

    async def both() -> None:
        look = asyncio.create_task(slot.after_reload())
        await asyncio.sleep(0.05)  # the look is loading v2
        await slot.close()
        await look

    asyncio.run(both())
    assert slot.shadow is None
