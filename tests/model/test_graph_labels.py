"""The labels a graph was exported with, kept in model.onnx: an artifact whose metadata.json
lists them otherwise (no checksum covers it) is refused; a graph without them serves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from absa.errors import ArtifactError
from absa.model import artifact as art
from absa.model.graph_labels import LABELS_KEY, graph_labels
from absa.model.runtime import Runtime
from absa.training.exporting import export_run
from tests.helpers import ONNX_EXPORT_WARNINGS

pytestmark = ONNX_EXPORT_WARNINGS
SPANS = [("the food was great", 4, 8), ("the service was slow", 4, 11)]


def test_export_stamps_the_labels_in_their_order(artifact: Path) -> None:
    meta = json.loads((artifact / "metadata.json").read_text())
    assert graph_labels(art.check_opens(artifact)) == meta["labels"]


def test_labels_reordered_in_the_metadata_are_refused(artifact: Path, tmp_path: Path) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(artifact, edited)
    meta = json.loads((edited / "metadata.json").read_text())
    meta["labels"] = list(reversed(meta["labels"]))  # every file's sha256 still holds
    (edited / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="not those the graph was exported with"):
        Runtime.load(edited, device="cpu", threads=1)


def test_a_graph_without_labels_serves_as_before(artifact: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(artifact, bare)
    model = onnx.load(str(bare / "model.onnx"))
    keep = [p for p in model.metadata_props if p.key != LABELS_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(keep)
    onnx.save(model, str(bare / "model.onnx"))
    meta = json.loads((bare / "metadata.json").read_text())
    art.record_checksums(meta, bare)  # as an export before the labels were stamped
    art.write_metadata(bare, meta)
    assert graph_labels(art.check_opens(bare)) is None
    got = Runtime.load(bare, device="cpu", threads=1).predict_proba(SPANS)
    want = Runtime.load(artifact, device="cpu", threads=1).predict_proba(SPANS)
    np.testing.assert_array_equal(got, want)


def test_an_int8_export_keeps_them(trained_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "int8"
    meta = export_run(trained_run, out, quantize="int8")
    assert graph_labels(art.check_opens(out)) == meta["labels"]


def test_an_extractor_keeps_its_tags_and_refuses_them_reordered(
    extractor_artifact: Path, tmp_path: Path
) -> None:
    from absa.model.extractor import Extractor

    meta = json.loads((extractor_artifact / "metadata.json").read_text())
    assert graph_labels(art.check_opens(extractor_artifact)) == meta["labels"]  # B, I, O as trained
    edited = tmp_path / "edited"
    shutil.copytree(extractor_artifact, edited)
    meta["labels"] = list(reversed(meta["labels"]))
    (edited / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="not those the graph was exported with"):
        Extractor.load(edited, device="cpu")
