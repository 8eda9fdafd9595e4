"""Retraining fixtures: a synthetic data file, a tiny model override, TOML configs, and a
registry whose champion one real retraining job made (copied per test, never changed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import synthetic_examples, write_jsonl

EXAMPLES = synthetic_examples(12, seed=0)  # 24 examples, 8 of each label
FIRST_VERSION = "v1"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def retrain_files(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> dict[str, Path]:
    """train.jsonl (also dev and eval) and the model override making atae-lstm tiny."""
    d = tmp_path_factory.mktemp("retrain-data")
    override = {
        "model": {"hidden_size": 16, "attention_dim": 16, "dropout": 0.0},
        "train": {
            "epochs": 10,
            "batch_size": 8,
            "lr": 0.01,
            "threads": 1,
            "glove": str(small_glove),
            "glove_top_k": 0,
            "patience": 100,
        },
    }
    (d / "tiny.json").write_text(json.dumps(override))
    return {"train": write_jsonl(d / "train.jsonl", EXAMPLES), "model_config": d / "tiny.json"}


ConfigWriter = Callable[..., Path]


class Killed(BaseException):
    """What a SIGKILL looks like from inside: nothing after it runs."""


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))  # a TOML basic string


@pytest.fixture(scope="session")
def make_config(retrain_files: dict[str, Path]) -> ConfigWriter:
    """``make_config(path, registry, new=[...], base=[...], dev=[...], gate={...},
    evals={name: path}, **top)`` writes a TOML retraining config: base = the synthetic set,
    dev and eval = the same set unless given."""

    def write(
        path: Path,
        registry: Path,
        *,
        base: list[Path] | None = None,
        new: list[Path] | None = None,
        dev: list[Path] | None = None,
        gate: dict | None = None,
        evals: dict[str, Path] | None = None,
        **top: object,
    ) -> Path:
        train = retrain_files["train"]
        values = {
            "registry": registry,
            "preset": "atae-lstm",
            "model_config": retrain_files["model_config"],
            **top,
        }
        lines = [f"{k} = {_toml_value(v)}" for k, v in values.items()]
        lines += ["[data]", f"base = {_toml_value(base if base is not None else [train])}"]
        if new:
            lines.append(f"new = {_toml_value(new)}")
        lines.append(f"dev = {_toml_value(dev if dev is not None else [train])}")
        evals = evals if evals is not None else {"synthetic": train}
        lines += ["[eval]", *(f"{k} = {_toml_value(v)}" for k, v in evals.items())]
        if gate:
            lines += ["[gate]", *(f"{k} = {_toml_value(v)}" for k, v in gate.items())]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def champion_registry(tmp_path_factory: pytest.TempPathFactory, make_config: ConfigWriter) -> Path:
    """A registry after one successful job: version v1, promoted. Read-only: copy it."""
    from absa.training.retrain import RetrainConfig, retrain

    d = tmp_path_factory.mktemp("champion")
    cfg = RetrainConfig.load(make_config(d / "retrain.toml", d / "registry"))
    report = retrain(cfg, version=FIRST_VERSION)
    assert report["promoted"], report
    return d / "registry"


@pytest.fixture
def registry(champion_registry: Path, tmp_path: Path) -> Path:
    """This test's own copy of the champion registry."""
    dest = tmp_path / "registry"
    shutil.copytree(champion_registry, dest)
    return dest


LockHolder = Callable[..., subprocess.Popen]


@pytest.fixture
def hold_lock() -> Iterator[LockHolder]:
    """``hold_lock(root, which="lock")``: another process takes the registry's change lock
    (``which="job_lock"``: its job lock, as a running retraining holds it) with its own open
    file description, and holds it until its stdin closes or it dies."""
    started: list[subprocess.Popen] = []

    def start(root: Path, which: str = "lock") -> subprocess.Popen:
        code = (
            "import sys\n"
            "from absa.model.registry import Registry\n"
            f"with Registry({str(root)!r}).{which}():\n"
            "    print('locked', flush=True)\n"
            "    sys.stdin.read()\n"
        )
        p = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        started.append(p)
        assert p.stdout is not None and p.stdout.readline().strip() == "locked"
        return p

    yield start
    for p in started:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=10)
