"""train.init_from: a run started from another run's weights, and what it refuses."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from safetensors.torch import load_file

from absa.model.artifact import sha256_file
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_preset


def child(
    parent: Path, out: Path, glove: Path, examples: list | None = None, **train: object
) -> Path:
    """A run of the tiny run's preset on its data, started from ``parent``."""
    preset = tiny_preset("atae-lstm", glove)
    preset = replace(preset, train=replace(preset.train, init_from=str(parent), **train))
    data = synthetic_examples(12, seed=0) if examples is None else examples
    fit(data, data, preset, out, progress=False)
    return out


def frozen(parent: Path | str, out: Path, glove: Path) -> Path:
    """One epoch at learning rate 0: the saved weights are the start's."""
    return child(parent, out, glove, epochs=1, lr=0.0, embed_lr=0.0)  # type: ignore[arg-type]


def test_a_child_starts_from_its_parent(tiny_run: Path, small_glove: Path, tmp_path: Path) -> None:
    run = frozen(tiny_run, tmp_path / "child", small_glove)
    theirs, ours = (
        load_file(tiny_run / "weights.safetensors"),
        load_file(run / "weights.safetensors"),
    )
    assert set(theirs) == set(ours)
    for key, tensor in theirs.items():
        assert (tensor == ours[key]).all(), key
    info = json.loads((run / "run.json").read_text())
    assert info["init_from"] == {
        "run": str(tiny_run),
        "weights_sha256": sha256_file(tiny_run / "weights.safetensors"),
    }
    assert json.loads((run / "metrics.json").read_text())["dev"]["accuracy"] == pytest.approx(
        json.loads((tiny_run / "metrics.json").read_text())["dev"]["accuracy"]
    )


def test_without_init_from_the_same_epoch_starts_elsewhere(
    tiny_run: Path, small_glove: Path, tmp_path: Path
) -> None:
    """The control: the same frozen epoch from a random start saves other weights."""
    run = frozen("", tmp_path / "fresh", small_glove)
    theirs, ours = (
        load_file(tiny_run / "weights.safetensors"),
        load_file(run / "weights.safetensors"),
    )
    assert not all((theirs[k] == ours[k]).all() for k in theirs)
    assert json.loads((run / "run.json").read_text())["init_from"] is None


def test_another_vocabulary_is_refused(tiny_run: Path, small_glove: Path, tmp_path: Path) -> None:
    examples = synthetic_examples(12, seed=0)
    fewer = [e for e in examples if "decor" not in e.text]
    assert 0 < len(fewer) < len(examples), "some synthetic sentences (not all) name the decor"
    with pytest.raises(ValueError, match="other words"):
        child(tiny_run, tmp_path / "c", small_glove, examples=fewer)


def test_another_tokenizer_is_refused(tiny_run: Path, small_glove: Path, tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    shutil.copytree(tiny_run, parent)
    spec = json.loads((parent / "pipeline.json").read_text())
    assert spec.pop("word_tokenizer") == 2  # the default; a pipeline without the key: 1
    (parent / "pipeline.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="words of tokenizer 1, this run those of 2"):
        child(parent, tmp_path / "c", small_glove)


def test_another_network_is_refused(tiny_run: Path, small_glove: Path, tmp_path: Path) -> None:
    preset = tiny_preset("atae-lstm", small_glove, hidden_size=8)
    preset = replace(preset, train=replace(preset.train, init_from=str(tiny_run)))
    data = synthetic_examples(12, seed=0)
    with pytest.raises(ValueError, match="another network: its hidden_size differ"):
        fit(data, data, preset, tmp_path / "c", progress=False)


def test_a_directory_that_is_no_run_is_refused(small_glove: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a finished run"):
        frozen(tmp_path, tmp_path / "c", small_glove)
