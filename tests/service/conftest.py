"""Service fixtures: a tiny model trained on a synthetic set, exported to two artifacts,
and the real app behind Starlette's TestClient (the lifespan loads and warms the model).

The model fits its own training sentences; tests treat the artifacts as read-only.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from training.records import Example

ASPECTS = ("food", "service", "pizza", "staff", "wine list")  # one multi-word aspect
OPINION = {"positive": "great", "negative": "awful", "neutral": "okay"}
LABEL_CYCLE = ("positive", "negative", "neutral")

# small limits, so every limit is cheap to hit
LIMITS = dict(max_text_chars=300, max_aspects=4, max_items=3, max_body_bytes=4096)


def synthetic_examples() -> list[Example]:
    """ "the {a} was {w} but the {o} was {w'}" for every ordered pair of aspects (40 examples).

    Each sentence is asked about both aspects; the label comes from the aspect's own word,
    so the set is only fitted by a model that uses the aspect."""
    out: list[Example] = []
    for i, (a, o) in enumerate(itertools.permutations(ASPECTS, 2)):
        label = LABEL_CYCLE[i % 3]
        other = {"positive": "negative", "negative": "positive"}.get(
            label, ("positive", "negative")[i % 2]
        )
        text = f"the {a} was {OPINION[label]} but the {o} was {OPINION[other]}"
        sa = text.index(a)
        so = text.index(o, sa + len(a))
        out.append(Example(text, sa, sa + len(a), label, f"synthetic:{i}.0"))
        out.append(Example(text, so, so + len(o), other, f"synthetic:{i}.1"))
    return out


EXAMPLES = synthetic_examples()


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pos-scaled-selfattn shrunk to hidden 16 and 2 heads, trained with dev = train."""
    from training.presets import Preset, TrainConfig, get_preset
    from training.train import fit

    base = get_preset("pos-scaled-selfattn")
    preset = Preset(
        replace(base.model, hidden_size=16, attention_dim=16, self_attention_heads=2, dropout=0.0),
        TrainConfig(
            epochs=20,
            batch_size=8,
            lr=0.01,
            threads=1,
            glove_top_k=0,
            patience=100,
            weight_decay=0.0,
            label_smoothing=0.0,  # fit the synthetic set exactly
        ),
        base.about,
    )
    run_dir = tmp_path_factory.mktemp("service-run") / "run"
    fit(EXAMPLES, EXAMPLES, preset, run_dir, progress=False, preset_name="pos-scaled-selfattn")
    return run_dir


@pytest.fixture(scope="session")
def artifact(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from model.export import export_run

    out = tmp_path_factory.mktemp("service-artifacts") / "v1"
    export_run(trained_run, out, version="v1")
    return out


@pytest.fixture(scope="session")
def artifact_v2(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run exported again as version v2 (same weights, another artifact)."""
    from model.export import export_run

    out = tmp_path_factory.mktemp("service-artifacts") / "v2"
    export_run(trained_run, out, version="v2")
    return out


def make_settings(model_dir: Path, **overrides: object):  # type: ignore[no-untyped-def]
    """Settings for tests: CPU, one thread, the small limits; ``overrides`` win."""
    from service.settings import Settings

    values: dict = dict(device="cpu", threads=1, max_wait_ms=1.0, **LIMITS)
    values.update(overrides)
    return Settings(model_dir=model_dir, **values)


@pytest.fixture(scope="module")
def client(artifact: Path) -> Iterator[TestClient]:
    """The real app, started (model loaded, warmed up) for the module's tests."""
    from service.app import create_app

    with TestClient(create_app(make_settings(artifact))) as c:
        yield c


@contextmanager
def serve(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The app under uvicorn on a free loopback port, in a background thread."""
    import uvicorn

    from service.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
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
