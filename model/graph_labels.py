"""The labels a sentiment graph was exported with, kept in the graph itself.

The metadata lists the labels in the order of the graph's ``probs`` columns, and no checksum
covers metadata.json (it holds the others'): one edited by hand to reorder or rename them
served every answer under the wrong label. Export writes them into model.onnx's
``metadata_props`` (``absa.labels``, a JSON list), which the file's sha256 covers, and the
runtime (the extractor too, for its tags) refuses an artifact whose metadata says otherwise.
Graphs exported before this carry none and are served as before. Stamping needs ``onnx``
(export); reading, onnxruntime only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from absa.errors import ArtifactError

__all__ = ["LABELS_KEY", "check_graph_labels", "graph_labels", "stamp_labels"]

LABELS_KEY = "absa.labels"


def stamp_labels(path: Path, labels: Sequence[str]) -> None:
    """Write ``labels`` into the graph at ``path`` (replacing any there)."""
    import onnx

    model = onnx.load(str(path))
    props = [p for p in model.metadata_props if p.key != LABELS_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(props)
    model.metadata_props.add(key=LABELS_KEY, value=json.dumps(list(labels)))
    onnx.save(model, str(path))


def graph_labels(session: Any) -> list[str] | None:
    """The labels an onnxruntime session's graph was stamped with; None where it has none
    (exported before they were, or by another tool) or they do not read as a list of text."""
    raw = session.get_modelmeta().custom_metadata_map.get(LABELS_KEY)
    try:
        labels = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    ok = isinstance(labels, list) and all(isinstance(x, str) for x in labels)
    return labels if ok else None


def check_graph_labels(session: Any, labels: Sequence[str], model_dir: Path) -> None:
    """ArtifactError where the graph was stamped with other labels than ``labels`` (the
    metadata's), or in another order."""
    stamped = graph_labels(session)
    if stamped is not None and stamped != list(labels):  # the metadata edited since
        raise ArtifactError(
            f"{model_dir}: the metadata's labels {list(labels)} are not those the graph was "
            f"exported with, in its order: {stamped}"
        )
