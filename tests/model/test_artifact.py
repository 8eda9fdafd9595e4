"""absa.model.artifact: the one owner of an artifact directory, and the checks every load
applies (start-up, hot reload, CLI and Python API alike)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from absa.errors import ArtifactError
from absa.model import artifact
from absa.model.runtime import DEFAULT_MODEL_DIR


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    out = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, out)
    return out


def edit(directory: Path, **changes: object) -> None:
    meta = json.loads((directory / "metadata.json").read_text())
    meta.update(changes)
    (directory / "metadata.json").write_text(json.dumps(meta))


def test_the_shipped_model_verifies() -> None:
    art = artifact.load(DEFAULT_MODEL_DIR)
    assert art.onnx_path == DEFAULT_MODEL_DIR / "model.onnx"
    assert art.labels == ["negative", "neutral", "positive"]
    assert art.pipeline.encode("the food", 4, 8).aspect_mask == [0, 1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "something-else"}, "kind"),
        ({"parity": None}, "records no parity check"),
        ({"parity": {"max_abs_diff": 0.5, "prediction_mismatches": 3}}, "failed parity check"),
        ({"onnx": {"file": "../../../etc/passwd", "sha256": "0"}}, "outside the artifact"),
        ({"onnx": {"file": "/etc/passwd", "sha256": "0"}}, "outside the artifact"),
        ({"onnx": {"file": "model.onnx", "sha256": "0" * 64}}, "does not match"),
        ({"onnx": "model.onnx"}, "no 'onnx' entry"),
        ({"labels": []}, "no labels"),
    ],
)
def test_load_refuses(copy: Path, change: dict, message: str) -> None:
    edit(copy, **change)
    with pytest.raises(ArtifactError, match=message):
        artifact.load(copy)


def test_load_refuses_missing_and_broken_metadata(copy: Path, tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="no metadata.json"):
        artifact.load(tmp_path / "nothing")
    (copy / "metadata.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="metadata.json"):
        artifact.load(copy)
    (copy / "metadata.json").write_text("[1, 2]")
    with pytest.raises(ArtifactError, match="kind"):
        artifact.load(copy)


def test_load_refuses_a_broken_pipeline(copy: Path) -> None:
    (copy / "vocab.json").unlink()
    with pytest.raises(ArtifactError, match="text pipeline"):
        artifact.load(copy)


def test_parity_is_optional_only_when_asked(copy: Path) -> None:
    edit(copy, parity=None)
    assert artifact.load(copy, require_parity=False).metadata["parity"] is None


def test_amend_rewrites_whole_and_keeps_the_rest(copy: Path) -> None:
    before = artifact.read_metadata(copy)
    after = artifact.amend_metadata(copy, gate={"passed": True}, parent="v1")
    assert after == {**before, "gate": {"passed": True}, "parent": "v1"}
    assert artifact.read_metadata(copy) == after
    assert [p.name for p in copy.glob(".metadata.json.*")] == []  # no temp file left
    artifact.load(copy)  # still verifies


def test_record_onnx_follows_the_file(copy: Path) -> None:
    meta = artifact.read_metadata(copy)
    with (copy / "model.onnx").open("ab") as f:
        f.write(b"\0")
    artifact.record_onnx(meta, copy)
    assert meta["onnx"]["sha256"] == artifact.sha256_file(copy / "model.onnx")
    assert meta["onnx"]["opset"] == 17  # other fields kept
