"""benchmarks/soup.py: the mean of several runs' weights, written as a run."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from absa.training.evaluate import evaluate
from absa.training.exporting import export_run
from absa.training.rundir import read_dev_examples
from absa.training.train import fit
from benchmarks.soup import main
from tests.helpers import synthetic_examples, tiny_preset

WEIGHTS = "weights.safetensors"


@pytest.fixture(scope="module")
def sibling(tiny_run: Path, small_glove: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two more epochs of the tiny run from its weights, with another seed."""
    preset = tiny_preset("atae-lstm", small_glove)
    preset = replace(
        preset, train=replace(preset.train, init_from=str(tiny_run), epochs=2, seed=7, lr=0.01)
    )
    data = synthetic_examples(12, seed=0)
    out = tmp_path_factory.mktemp("soup") / "sibling"
    fit(data, data, preset, out, progress=False)
    return out


def test_the_soup_is_the_mean_of_its_parts(tiny_run: Path, sibling: Path, tmp_path: Path) -> None:
    out = tmp_path / "soup"
    main(["--runs", str(tiny_run), str(sibling), "--out", str(out)])
    a, b, soup = (load_file(p / WEIGHTS) for p in (tiny_run, sibling, out))
    assert any(not torch.equal(a[k], b[k]) for k in a), "the sibling must have moved"
    for key in a:
        torch.testing.assert_close(soup[key], (a[key].double() + b[key].double()).div(2).float())
    info = json.loads((out / "run.json").read_text())
    assert info["soup"]["parts"] == [str(tiny_run), str(sibling)]
    assert len(info["soup"]["weights_sha256"]) == 2
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["soup_of"] == 2
    assert metrics["dev"]["accuracy"] == evaluate(out, read_dev_examples(out))["accuracy"]
    assert not (tmp_path / "soup.tmp").exists()
    export_run(out, tmp_path / "art", calibrate=False)  # the artifact says what it is made of
    meta = json.loads((tmp_path / "art" / "metadata.json").read_text())
    assert meta["train"]["soup"] == info["soup"]
    assert meta["train"]["init_from"] is None  # the first part's: the tiny run started at random


def test_greedy_leaves_out_a_part_that_lowers_dev(tiny_run: Path, tmp_path: Path) -> None:
    """A copy of the run with its classifier's sign flipped lowers the soup's dev: left out."""
    broken = tmp_path / "broken"
    shutil.copytree(tiny_run, broken)
    state = load_file(broken / WEIGHTS)
    head = [k for k in state if k.startswith("classifier")]
    assert head, sorted(state)
    save_file({k: -3 * v if k in head else v for k, v in state.items()}, str(broken / WEIGHTS))
    metrics = json.loads((broken / "metrics.json").read_text())
    metrics["dev"] = evaluate(broken, read_dev_examples(broken))
    (broken / "metrics.json").write_text(json.dumps(metrics))
    assert metrics["dev"]["accuracy"] < evaluate(tiny_run, read_dev_examples(tiny_run))["accuracy"]
    out = tmp_path / "soup"
    main(["--runs", str(broken), str(tiny_run), "--out", str(out), "--greedy"])
    assert json.loads((out / "run.json").read_text())["soup"]["parts"] == [str(tiny_run)]
    assert not (tmp_path / "soup.trial").exists()


def test_runs_of_other_words_are_refused(tiny_run: Path, small_glove: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    data = [e for e in synthetic_examples(12, seed=0) if "decor" not in e.text]
    preset = tiny_preset("atae-lstm", small_glove)
    fit(data, data, replace(preset, train=replace(preset.train, epochs=1)), other, progress=False)
    with pytest.raises(SystemExit, match="differs from"):
        main(["--runs", str(tiny_run), str(other), "--out", str(tmp_path / "soup")])
    assert not (tmp_path / "soup").exists()


def test_an_existing_output_is_never_overwritten(
    tiny_run: Path, sibling: Path, tmp_path: Path
) -> None:
    (tmp_path / "soup").mkdir()
    with pytest.raises(SystemExit, match="exists"):
        main(["--runs", str(tiny_run), str(sibling), "--out", str(tmp_path / "soup")])


def test_parts_with_other_tensors_are_refused(tiny_run: Path, tmp_path: Path) -> None:
    """A part missing a tensor is named as such (not a KeyError half way through)."""
    short = tmp_path / "short"
    shutil.copytree(tiny_run, short)
    state = load_file(short / WEIGHTS)
    save_file(
        {k: v for k, v in state.items() if not k.startswith("classifier")}, str(short / WEIGHTS)
    )
    with pytest.raises(SystemExit, match="different tensors"):
        main(["--runs", str(tiny_run), str(short), "--out", str(tmp_path / "soup")])
    assert not (tmp_path / "soup").exists()
