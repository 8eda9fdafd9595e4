"""absa export --domain-temperature: a run trained on two files, one of them the domain, exports
with a word classifier and a temperature of the domain's own, /v1/model says so; a file that
is none of the run's, or one changed since, is a CLI error naming it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from absa.cli import main
from absa.model import artifact
from absa.service.app import create_app
from absa.training.provenance import portable
from absa.training.rundir import read_dev_examples
from tests.helpers import (
    ONNX_EXPORT_WARNINGS,
    category_examples,
    synthetic_examples,
    tiny_config,
    write_jsonl,
)
from tests.service.conftest import make_settings

pytestmark = ONNX_EXPORT_WARNINGS
PREFIX = "my laptop : "


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> tuple[Path, Path, Path]:
    """A run on restaurant-like sentences and "laptop" ones (the same templates behind a
    prefix), 30 % of each held out as dev; its directory and the two files."""
    tmp = tmp_path_factory.mktemp("domain-cli")
    rest = write_jsonl(tmp / "rest.jsonl", synthetic_examples(200, seed=1))
    laptops = [
        replace(e, text=PREFIX + e.text, start=e.start + len(PREFIX), end=e.end + len(PREFIX))
        for e in synthetic_examples(200, seed=2)
    ]
    lap = write_jsonl(tmp / "laptops.jsonl", laptops)
    cfg = tiny_config(tmp / "c.json", small_glove, epochs=1, dev_fraction=0.3)
    out = tmp / "run"
    cmd = ["train", "--train", str(rest), str(lap), "--config", str(cfg), "--out", str(out)]
    assert main([*cmd, "--quiet"]) == 0
    return out, rest, lap


def test_export_with_a_domain_temperature(
    run: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _, lap = run
    out = tmp_path / "art"
    cmd = ["export", "--run", str(run_dir), "--out", str(out)]
    assert main([*cmd, "--domain-temperature", "laptop", "--domain-files", str(lap)]) == 0
    assert "laptop temperature" in capsys.readouterr().out
    cal = artifact.read_metadata(out)["calibration"]
    dom = cal["domain"]
    assert cal["method"] == "temperature+domain" and dom["name"] == "laptop"
    assert dom["files"] == [{"path": portable(lap), "sha256": artifact.sha256_file(lap)}]
    held = {e.text for e in read_dev_examples(run_dir)}
    train_laptop = {json.loads(x)["text"] for x in lap.read_text().splitlines()} - held
    assert dom["sentences"]["inside"] == len(train_laptop)  # dev's sentences left out
    assert dom["dev_items"] == sum(e.text.startswith(PREFIX) for e in read_dev_examples(run_dir))
    with TestClient(create_app(make_settings(out))) as c:
        shown = c.get("/v1/model").json()["calibration"]
        answer = c.post(
            "/v1/predict", json={"text": PREFIX + "the food was great", "aspects": ["food"]}
        )
    assert shown["method"] == "temperature+domain" and shown["domain"]["name"] == "laptop"
    assert shown["domain"]["temperature"] == dom["temperature"]
    assert shown["domain"]["outside_temperature"] == dom["outside_temperature"]
    assert answer.status_code == 200


def test_a_domain_file_the_run_did_not_train_on_or_changed_is_refused(
    run: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, rest, lap = run
    cmd = ["export", "--run", str(run_dir), "--out", str(tmp_path / "a")]
    other = write_jsonl(tmp_path / "other.jsonl", synthetic_examples(3, seed=3))
    capsys.readouterr()
    assert main([*cmd, "--domain-temperature", "laptop", "--domain-files", str(other)]) == 2
    assert "is none of the run's training files" in capsys.readouterr().err
    assert main([*cmd, "--domain-temperature", "laptop"]) == 2
    assert "go together" in capsys.readouterr().err
    changed = tmp_path / "run"
    shutil.copytree(run_dir, changed)
    info = json.loads((changed / "run.json").read_text())
    info["data"]["train"][0]["sha256"] = "0" * 64  # as if rest.jsonl changed since
    (changed / "run.json").write_text(json.dumps(info))
    again = ["export", "--run", str(changed), "--out", str(tmp_path / "b")]
    assert main([*again, "--domain-temperature", "laptop", "--domain-files", str(lap)]) == 2
    assert f"{portable(rest)}: gone or changed since the run read it" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_category_model_is_refused_naming_what_it_is(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its files hold category rows: read as aspect terms, the first said "missing 'aspect'"."""
    rows = [{"text": e.text, "category": e.category, "label": e.label} for e in category_examples()]
    files = []
    for name, prefix in (("rest", ""), ("lap", PREFIX)):
        files.append(tmp_path / f"{name}.categories.jsonl")
        files[-1].write_text(
            "".join(json.dumps(dict(r, text=prefix + r["text"])) + "\n" for r in rows)
        )
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, dev_fraction=0.3)
    run_dir = tmp_path / "run"
    train = ["train", "--task", "category", "--train", *map(str, files), "--config", str(cfg)]
    assert main([*train, "--out", str(run_dir), "--quiet"]) == 0
    capsys.readouterr()
    cmd = ["export", "--run", str(run_dir), "--out", str(tmp_path / "art")]
    assert main([*cmd, "--domain-temperature", "laptop", "--domain-files", str(files[1])]) == 2
    assert "a category model: --domain-temperature is for aspect-term models" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "art").exists()
