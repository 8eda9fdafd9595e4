"""Shared fixtures: a synthetic data set, a small GloVe file, a tiny trained run.

Everything here builds in about a second; session-scoped fixtures are read-only for the
tests that use them (a test that changes a run copies it first).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import ASPECTS, WORDS, synthetic_examples, tiny_preset


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread() -> None:
    """The test machines are small and shared: torch computes on one thread (``fit`` sets
    the same from its TrainConfig). Collection has imported torch if any test needs it."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def small_glove(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged GloVe vectors of the synthetic vocabulary, as a GloVe-format text file
    (fit loads it in milliseconds instead of reading all 400k rows)."""
    from training.embeddings import load_glove

    words, matrix = load_glove()
    wanted = {"the", "was", "but", *ASPECTS, *(w for ws in WORDS.values() for w in ws)}
    index = {w: i for i, w in enumerate(words)}
    missing = wanted - set(index)
    assert not missing, f"the packaged GloVe lacks {missing}"
    path = tmp_path_factory.mktemp("glove") / "glove.small.txt"
    lines = [w + " " + " ".join(f"{x:.6f}" for x in matrix[index[w]]) for w in sorted(wanted)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    """A trained atae-lstm run on the synthetic set (dev = train). Do not modify it."""
    from training.train import fit

    examples = synthetic_examples(12, seed=0)
    run_dir = tmp_path_factory.mktemp("runs") / "tiny"
    preset = tiny_preset("atae-lstm", small_glove)
    fit(
        examples,
        examples,
        preset,
        run_dir,
        data_info={"source": "synthetic"},
        progress=False,
        preset_name="atae-lstm",
    )
    return run_dir
