"""The import graph of the training side, read from the source (top-level and function-level
imports alike): no training module imports one that imports it back, and model/ never
imports training/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"absa.model": ROOT / "model", "absa.training": ROOT / "training"}


def modules() -> dict[str, Path]:
    out = {}
    for package, folder in FOLDERS.items():
        for f in sorted(folder.glob("*.py")):
            out[package if f.stem == "__init__" else f"{package}.{f.stem}"] = f
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The known modules a file imports (``from absa.training import rundir`` counts)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found.update(n for n in names if n in known)
    return found


GRAPH = {m: imports(p, set(modules())) - {m} for m, p in modules().items()}


def reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(GRAPH[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(GRAPH.get(m, ()))
    return seen


def test_the_graph_sees_the_modules() -> None:
    assert "absa.training.train" in GRAPH and "absa.model.export" in GRAPH
    assert {"absa.training.rundir", "absa.training.inference"} <= GRAPH["absa.training.train"]


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("absa.training.")))
def test_no_import_cycle(module: str) -> None:
    assert module not in reachable(module)


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("absa.model")))
def test_model_never_imports_training(module: str) -> None:
    assert not {m for m in reachable(module) if m.startswith("absa.training")}
