"""Tests for training.exporting: a run directory -> an artifact, with the run's dev set as
the parity check's data and the run's provenance in the metadata."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from absa.model import artifact
from absa.training.exporting import TRAIN_KEYS, export_run
from absa.training.provenance import code_version
from absa.training.rundir import load_run, read_dev_examples, read_info
from tests.helpers import ONNX_EXPORT_WARNINGS

pytestmark = ONNX_EXPORT_WARNINGS


@pytest.fixture(scope="module")
def exported(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("exporting") / "a"
    return out, export_run(tiny_run, out, name="tiny", version="t1")


def test_metadata_records_the_run(tiny_run: Path, exported: tuple[Path, dict]) -> None:
    out, meta = exported
    assert json.loads((out / "metadata.json").read_text()) == meta
    info, run = read_info(tiny_run), load_run(tiny_run)
    assert meta["kind"] == artifact.KIND and (meta["name"], meta["version"]) == ("tiny", "t1")
    assert meta["preset"] == info["preset"] == "atae-lstm"
    assert meta["train"] == {k: info.get(k) for k in TRAIN_KEYS}
    assert meta["train"]["data"] == {"source": "synthetic", "sentence_key": "bracket_free"}
    assert meta["train"]["teacher"] is None
    assert meta["train_config"] == run.train_config.to_dict()
    assert meta["metrics"] == run.metrics
    assert meta["code_version"] == info["code_version"]
    assert meta["export_code_version"] == code_version()  # the code that built the graph
    # every session's code (the run's last session is ``code_version``): a run resumed on
    # other code listed both in run.json, its artifact the last alone
    assert meta["train"]["code_versions"] == info["code_versions"] == [info["code_version"]]
    assert meta["source_run"] == str(tiny_run)
    assert meta["model_config"] == run.model_config.to_dict()
    assert list(meta) == [
        *("kind", "format", "absa_version", "task", "name", "version", "created", "labels"),
        "model_config",
        *("preset", "train", "train_config", "metrics", "code_version"),
        *("export_code_version", "source_run"),
        *(
            "calibration",
            "onnx",
            "files",
            "parity",
        ),  # files: the sha256 of every file but metadata.json
    ]


def test_parity_runs_on_the_runs_dev_set(tiny_run: Path, exported: tuple[Path, dict]) -> None:
    _, meta = exported
    assert meta["parity"]["n"] == len(read_dev_examples(tiny_run))
    assert meta["parity"]["dev_accuracy_torch"] == meta["metrics"]["dev"]["accuracy"]
    art = artifact.load(exported[0])  # the checks every loader applies, parity included
    assert art.metadata == meta


def test_defaults_name_from_the_preset_and_version_from_the_clock(
    tiny_run: Path, tmp_path: Path
) -> None:
    meta = export_run(tiny_run, tmp_path / "a")
    assert meta["name"] == "atae-lstm"
    assert re.fullmatch(r"\d{14}", meta["version"])  # UTC %Y%m%d%H%M%S
    run = shutil.copytree(tiny_run, tmp_path / "run")
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "preset": None}))
    assert export_run(run, tmp_path / "b")["name"] == "absa"


def test_exporting_what_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a training run"):
        export_run(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_run_with_an_empty_dev_file_names_it(tiny_run: Path, tmp_path: Path) -> None:
    run = shutil.copytree(tiny_run, tmp_path / "run")
    (run / "dev.jsonl").write_text("\n")
    with pytest.raises(ValueError, match=re.escape(str(run / "dev.jsonl"))):
        export_run(run, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_card_names_the_code_of_each_step() -> None:
    """A run exported on later code: the card said "with the code at <the training's>"
    above the export command too, and nothing recorded the code that built the graph."""
    from absa.model.card import _reproduce_lines

    meta = {"reproduce": "absa train ...\nabsa export ...", "code_version": "aaa1111"}
    same = "\n".join(_reproduce_lines({**meta, "export_code_version": "aaa1111"}))
    assert "the code at `aaa1111`" in same and "export" not in same.split("```")[0]
    both = "\n".join(_reproduce_lines({**meta, "export_code_version": "bbb2222"}))
    assert "`aaa1111` for the training" in both and "`bbb2222` for the export" in both
