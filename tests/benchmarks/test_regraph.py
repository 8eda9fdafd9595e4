"""benchmarks/regraph.py: an artifact's network exported again from its model.onnx alone,
answering every test set's item as before, its int8 word table byte for byte."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
import torch

import absa.model.network as network
from absa.model import artifact
from absa.model.export import export
from absa.training.rundir import load_run
from absa.training.train import fit
from benchmarks import regraph
from tests.helpers import ONNX_EXPORT_WARNINGS, synthetic_examples, tiny_preset

pytestmark = ONNX_EXPORT_WARNINGS
EXAMPLES = synthetic_examples(12, seed=0)
CARD = {"positional": True, "positional_scale": "learned", "attention": "scaled_dot"}


def _trained(tmp: pytest.TempPathFactory, glove: Path, **model: object) -> Path:
    preset = tiny_preset("fast", glove, **model)
    run_dir = tmp.mktemp("runs") / "fast"
    fit(EXAMPLES, EXAMPLES, replace(preset, train=replace(preset.train, epochs=3)), run_dir,
        progress=False)  # fmt: skip
    return run_dir


def _export(run_dir: Path, out: Path, quantize: str | None = "int8-embeddings") -> Path:
    run = load_run(run_dir)
    export(run.net, run.pipeline, run.model_config, EXAMPLES, out, {"preset": "fast"},
           name="tiny", version="1.0.0", quantize=quantize)  # fmt: skip
    return out


def _old_graph(run_dir: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The graph absa export wrote before 31a3894: each direction its own LSTM node, the
    backward one over index-gathered reversals (the one-node step skipped)."""
    with monkeypatch.context() as m:
        m.setattr(network, "recurrence", lambda out, h_n, *rest: (out, h_n))
        return _export(run_dir, out)


def _ops(path: Path) -> Counter[str]:
    return Counter(n.op_type for n in onnx.load(str(path / "model.onnx")).graph.node)


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    return _trained(tmp_path_factory, small_glove, layers=2)


def test_an_old_graph_is_made_one_node_per_layer_with_the_same_answers(
    two_layers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _old_graph(two_layers, tmp_path / "old", monkeypatch)
    assert _ops(old)["LSTM"] == 4 and _ops(old)["GatherElements"] > 0
    new = tmp_path / "new"
    regraph.main(["--artifact", str(old), "--version", "1.0.1", "--out", str(new)])
    assert _ops(new)["LSTM"] == 2 and _ops(new)["GatherElements"] == 0
    meta = artifact.load(new).metadata  # every checksum right
    before = json.loads((old / "metadata.json").read_text())
    assert meta["version"] == "1.0.1" and meta["regraphed"]["from_version"] == "1.0.0"
    assert meta["regraphed"]["command"].endswith(f"--version 1.0.1 --out {new}")  # as given
    assert meta["regraphed"]["from_sha256"] == before["onnx"]["sha256"]
    assert meta["calibration"] == before["calibration"]  # T in the graph, as before
    assert meta["quantization"]["bytes_int8"] == (new / "model.onnx").stat().st_size
    parity = meta["regraphed"]["test_parity"]
    assert set(parity) == {"rest14", "lap14", "twitter", "mams"}
    for r in parity.values():
        assert r["changed_answers"] == 0 and r["max_abs_prob_diff"] <= 1e-5, r
    assert sum(r["n"] for r in parity.values()) > 3000  # every test item, not a sample
    # the int8 word table is the old graph's, byte for byte
    tables = [
        {i.name: i.SerializeToString() for i in onnx.load(str(p / "model.onnx")).graph.initializer
         if i.name.startswith("net.encoder.table.weight_")}
        for p in (old, new)
    ]  # fmt: skip
    assert len(tables[0]) == 3 and tables[0] == tables[1]
    for f in ("vocab.json", "pipeline.json"):
        assert (new / f).read_bytes() == (old / f).read_bytes()


def test_a_new_graph_comes_back_as_itself(two_layers: Path, tmp_path: Path) -> None:
    """Read from the graph this checkout exports (both directions in one node), the weights
    export again to the same bytes."""
    first = _export(two_layers, tmp_path / "a", quantize=None)
    again = tmp_path / "b"
    regraph.main(["--artifact", str(first), "--version", "1.0.1", "--out", str(again)])
    assert (again / "model.onnx").read_bytes() == (first / "model.onnx").read_bytes()


def test_weights_it_cannot_place_are_refused_by_name(
    tmp_path_factory: pytest.TempPathFactory, small_glove: Path, tmp_path: Path
) -> None:
    """A network with parts the reader does not know (the card's: learned scales on the
    positions, which the graph folds into its constants) is refused before anything is
    written."""
    run_dir = _trained(tmp_path_factory, small_glove, **CARD)
    art = _export(run_dir, tmp_path / "a", quantize=None)
    with pytest.raises(SystemExit, match=r"cannot place every weight .*positions"):
        regraph.main(["--artifact", str(art), "--version", "2", "--out", str(tmp_path / "b")])
    assert not (tmp_path / "b").exists()


def test_a_wrong_reading_fails_the_parity_and_writes_nothing(
    two_layers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    art = _export(two_layers, tmp_path / "a")
    real = regraph.weights_of

    def swapped(*args: object) -> dict[str, torch.Tensor]:  # a gate order read wrongly
        state = real(*args)  # type: ignore[arg-type]
        state["rnn.fwd.bias_ih_l0"] = state["rnn.fwd.bias_ih_l0"].flip(0)
        return state

    monkeypatch.setattr(regraph, "weights_of", swapped)
    with pytest.raises(SystemExit, match="answers differently"):
        regraph.main(["--artifact", str(art), "--version", "2", "--out", str(tmp_path / "b")])
    assert not (tmp_path / "b").exists()
