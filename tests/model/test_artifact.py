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
        ({"parity": {"max_abs_diff": 0.0, "prediction_mismatches": 1}}, "failed parity check"),
        # a model whose outputs are NaN passed "nan > atol" (False) before
        ({"parity": {"max_abs_diff": float("nan"), "prediction_mismatches": 0}}, "failed parity"),
        ({"parity": {"max_abs_diff": "0", "prediction_mismatches": 0}}, "failed parity check"),
        ({"parity": {"max_abs_diff": None, "prediction_mismatches": 0}}, "failed parity check"),
        ({"parity": {"max_abs_diff": 0.0}}, "failed parity check"),
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


def test_an_artifact_of_a_newer_format_is_refused_with_who_wrote_it(copy: Path) -> None:
    """An older absa served a newer one's export as if it were its own (a tokenizer, a
    map after the softmax passed over: other answers, no word). From format 1 on, each
    export records its format, and a newer one is refused."""
    from absa import __version__

    edit(copy, format=artifact.FORMAT + 1, absa_version="99.0.0")
    with pytest.raises(ArtifactError) as e:
        artifact.load(copy)
    assert str(e.value) == (
        f"{copy / 'metadata.json'}: artifact format {artifact.FORMAT + 1} (written by absa "
        f"99.0.0); this absa ({__version__}) reads format {artifact.FORMAT} and older: "
        "upgrade absa to load it, or serve an artifact this version exported"
    )
    for bad in ("1", 0, True, 1.0):
        edit(copy, format=bad)
        with pytest.raises(ArtifactError, match="not an artifact format number"):
            artifact.load(copy)
    edit(copy, format=artifact.FORMAT)
    assert artifact.load(copy).labels == ["negative", "neutral", "positive"]


def test_load_refuses_missing_and_broken_metadata(copy: Path, tmp_path: Path) -> None:
    """A path that is not there, or a file, is said as such: "not a model artifact (no
    metadata.json)" sent a user with a typo looking for a file in a directory that is not."""
    with pytest.raises(ArtifactError, match=r"nothing: does not exist$"):
        artifact.load(tmp_path / "nothing")
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(ArtifactError, match=r"model.onnx: is a file; an artifact is a directory"):
        artifact.load(tmp_path / "model.onnx")  # the graph named, not its directory
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArtifactError, match="empty: not a model artifact [(]no metadata.json"):
        artifact.load(tmp_path / "empty")
    (copy / "metadata.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="metadata.json"):
        artifact.load(copy)
    (copy / "metadata.json").write_text("[1, 2]")
    with pytest.raises(ArtifactError, match="kind"):
        artifact.load(copy)


def test_load_refuses_a_broken_pipeline(copy: Path) -> None:
    (copy / "pipeline.json").write_text(json.dumps({"kind": "bpe", "max_len": 8}))
    reseal(copy)  # hashed as it is now: the pipeline itself is what is wrong
    with pytest.raises(ArtifactError, match="text pipeline"):
        artifact.load(copy)


def test_load_refuses_a_tokenizer_this_version_does_not_know(copy: Path) -> None:
    spec = json.loads((copy / "pipeline.json").read_text())
    (copy / "pipeline.json").write_text(json.dumps({**spec, "word_tokenizer": 7}))
    reseal(copy)
    with pytest.raises(ArtifactError, match=r"text pipeline: .*unknown version 7.*newer absa"):
        artifact.load(copy)


def test_labels_that_do_not_fit_the_graph_are_refused_at_load(copy: Path) -> None:
    """Two labels for a graph of three probabilities loaded, then every request failed."""
    from absa.model.runtime import Runtime

    edit(copy, labels=["negative", "positive"])
    with pytest.raises(ArtifactError, match="names 2 labels, the graph gives 3 probabilities"):
        Runtime.load(copy, device="cpu", threads=1)


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


# --------------------------------------------------------------------------- every file hashed


def reseal(directory: Path) -> None:
    """Record the directory's checksums again (as an export would) after a change."""
    meta = artifact.read_metadata(directory)
    artifact.record_files(meta, directory)
    artifact.write_metadata(directory, meta)


def test_every_file_but_the_metadata_is_hashed(copy: Path) -> None:
    files = artifact.read_metadata(copy)["files"]
    assert set(files) == {p.name for p in copy.iterdir()} - {"metadata.json"}
    for name, digest in files.items():
        assert artifact.sha256_file(copy / name) == digest


@pytest.mark.parametrize("name", ["vocab.json", "pipeline.json", "README.md", "eval.json"])
def test_a_tampered_file_is_refused(copy: Path, name: str) -> None:
    path = copy / name
    if name == "vocab.json":  # the attack: "great" swapped with a negative word
        words = json.loads(path.read_text())
        i, j = words.index("great"), words.index("terrible")
        words[i], words[j] = words[j], words[i]
        path.write_text(json.dumps(words))
    else:
        path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(ArtifactError, match=f"{name}: sha256 .* does not match"):
        artifact.load(copy)


def test_an_artifact_without_file_checksums_is_refused_with_a_way_out(copy: Path) -> None:
    meta = artifact.read_metadata(copy)
    del meta["files"]
    artifact.write_metadata(copy, meta)
    with pytest.raises(ArtifactError, match="re-export"):
        artifact.load(copy)


def test_a_listed_file_that_is_gone_is_refused(copy: Path) -> None:
    (copy / "README.md").unlink()
    with pytest.raises(ArtifactError, match="README.md: missing"):
        artifact.load(copy)


def test_the_model_file_must_be_hashed_and_inside(copy: Path, tmp_path: Path) -> None:
    """``onnx.file = "../x.onnx"``: a real, matching model outside the version is refused."""
    outside = tmp_path / "x.onnx"
    shutil.copy(copy / "model.onnx", outside)
    sha = artifact.sha256_file(outside)
    edit(copy, onnx={"file": "../x.onnx", "sha256": sha})
    with pytest.raises(ArtifactError, match="outside the artifact"):
        artifact.load(copy)
    edit(copy, files={**artifact.read_metadata(copy)["files"], "../x.onnx": sha})
    with pytest.raises(ArtifactError, match="outside the artifact"):
        artifact.load(copy)


def test_pipeline_files_must_be_inside_and_hashed(copy: Path, tmp_path: Path) -> None:
    shutil.copy(copy / "vocab.json", tmp_path / "vocab.json")
    spec = json.loads((copy / "pipeline.json").read_text())
    (copy / "pipeline.json").write_text(json.dumps({**spec, "vocab": "../vocab.json"}))
    reseal(copy)  # the checksums agree: only the confinement refuses it
    with pytest.raises(ArtifactError, match="pipeline vocab '../vocab.json' is outside"):
        artifact.load(copy)
    shutil.copy(copy / "vocab.json", copy / "vocab2.json")
    (copy / "pipeline.json").write_text(json.dumps({**spec, "vocab": "vocab2.json"}))
    meta = artifact.read_metadata(copy)
    artifact.record_files(meta, copy)
    del meta["files"]["vocab2.json"]
    artifact.write_metadata(copy, meta)
    with pytest.raises(ArtifactError, match="'vocab2.json' has no checksum"):
        artifact.load(copy)


def test_record_files_skips_metadata_and_hidden_temporaries(copy: Path) -> None:
    (copy / ".metadata.json.tmp").write_text("x")
    meta = artifact.read_metadata(copy)
    artifact.record_files(meta, copy)
    assert "metadata.json" not in meta["files"] and ".metadata.json.tmp" not in meta["files"]
