"""The shipped artifacts name files as records do (``training.provenance.portable``): beside
the checkout, relative to it. The category and extractor models named the machine they were
made on (``/work/shared/data/...``, a worktree's run), which no one else has."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from absa.model.artifact import sha256_file

SHIPPED = sorted(
    p for p in (Path(__file__).parents[2] / "model" / "artifacts").iterdir() if p.is_dir()
)


def _paths(node: object) -> Iterator[str]:
    """Every string under a ``path`` or ``source_run`` key, however deep."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("path", "source_run") and isinstance(value, str):
                yield value
            else:
                yield from _paths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _paths(value)


@pytest.mark.parametrize("artifact", SHIPPED, ids=[p.name for p in SHIPPED])
def test_a_shipped_artifact_names_no_absolute_path(artifact: Path) -> None:
    metadata = json.loads((artifact / "metadata.json").read_text())
    named = list(_paths(metadata))
    assert named, "no path found: the walk is looking in the wrong place"
    assert [p for p in named if Path(p).is_absolute()] == []
    card = (artifact / "README.md").read_text()
    assert "/work/" not in card
    assert metadata["files"]["README.md"] == sha256_file(artifact / "README.md")
