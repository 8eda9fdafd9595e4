"""Mixed precision (``train.precision``): the training step of a transformer run in bfloat16
autocast, everything else (weights, optimiser, dev scoring, export) in float32."""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from _pytest.logging import LogCaptureFixture

from absa.cli import main
from absa.model.runtime import Runtime
from absa.training.exporting import export_run
from absa.training.presets import Preset, TrainConfig
from absa.training.train import fit, step_precision
from tests.helpers import synthetic_examples, tiny_pair_preset, write_jsonl

TRAIN = synthetic_examples(12, seed=0)


def preset(transformer: Path, **train: object) -> Preset:
    """The tiny transformer under the ``accurate`` head, as a term model."""
    p = tiny_pair_preset(transformer, category_pair=False)
    return replace(p, train=replace(p.train, **{"epochs": 30, **train}))


def step_dtypes(monkeypatch: pytest.MonkeyPatch) -> list[torch.dtype]:
    """The dtype of every linear layer's output in training mode (the encoder's and the
    head's), from here on."""
    seen: list[torch.dtype] = []
    real = torch.nn.Linear.forward

    def spy(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
        out = real(self, x)
        if self.training:
            seen.append(out.dtype)
        return out

    monkeypatch.setattr(torch.nn.Linear, "forward", spy)
    return seen


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision must be fp32 or bf16, not 'fp16'"):
        TrainConfig(precision="fp16")


def test_bf16_is_autocast_and_fp32_is_not() -> None:
    lin = torch.nn.Linear(4, 4)
    with step_precision("bf16", torch.device("cpu")):
        assert lin(torch.ones(1, 4)).dtype == torch.bfloat16
    with step_precision("fp32", torch.device("cpu")):
        assert lin(torch.ones(1, 4)).dtype == torch.float32


def test_a_bf16_run_trains_in_bf16_and_exports_float32_with_parity(
    tiny_transformer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's products run in bfloat16; the run still fits the set, its weights are
    float32, and the export's parity check (torch float32 against onnxruntime) passes."""
    seen = step_dtypes(monkeypatch)
    result = fit(TRAIN, TRAIN, preset(tiny_transformer, precision="bf16"), tmp_path / "run",
                 progress=False)  # fmt: skip
    assert seen and set(seen) == {torch.bfloat16}
    assert result.dev["accuracy"] >= 0.9
    run = tmp_path / "run"
    assert json.loads((run / "train_config.json").read_text())["precision"] == "bf16"
    assert [s["precision"] for s in json.loads((run / "run.json").read_text())["sessions"]] == [
        "bf16"
    ]
    from safetensors.torch import load_file

    weights = load_file(str(run / "weights.safetensors"))
    assert {t.dtype for t in weights.values() if t.is_floating_point()} == {torch.float32}
    export_run(tmp_path / "run", tmp_path / "artifact")
    rt = Runtime.load(tmp_path / "artifact", device="cpu", threads=1)
    probs = np.stack([o.probs for o in rt.run([rt.encode(e.text, e.start, e.end) for e in TRAIN])])
    assert probs.dtype == np.float32
    assert (probs.argmax(1) == [rt.labels.index(e.label) for e in TRAIN]).mean() >= 0.9


def test_fp32_trains_in_float32(
    tiny_transformer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = step_dtypes(monkeypatch)
    fit(TRAIN, TRAIN, preset(tiny_transformer, epochs=1), tmp_path / "run", progress=False)
    assert seen and set(seen) == {torch.float32}


def test_a_run_begun_in_fp32_goes_on_in_bf16_and_says_so(
    tiny_transformer: Path, tmp_path: Path, caplog: LogCaptureFixture
) -> None:
    """Precision is free between sessions, as the device is: the checkpoint resumes, the
    sessions record each one's, and the reproduce command says it is not bit for bit."""
    run = tmp_path / "run"
    p = preset(tiny_transformer, epochs=3)
    assert fit(TRAIN, TRAIN, p, run, progress=False, stop_after=0).stopped
    bf16 = replace(p, train=replace(p.train, precision="bf16"))
    with caplog.at_level(logging.WARNING, logger="absa.training.train"):
        last = fit(TRAIN, TRAIN, bf16, run, progress=False, resume=True, reproduce="absa train")
    assert last.resumed_after == 1
    assert "1 thread(s) on cpu, this session on 1 thread(s) on cpu in bf16" in caplog.text
    info = json.loads((run / "run.json").read_text())
    assert [(s["from_epoch"], s["precision"]) for s in info["sessions"]] == [
        (1, "fp32"),
        (2, "bf16"),
    ]
    assert "1 thread(s) on cpu and 1 thread(s) on cpu in bf16" in info["reproduce"]


def test_the_cli_sets_the_precision_and_refuses_it_for_extraction(
    tiny_transformer: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", TRAIN)
    p = preset(tiny_transformer, epochs=1)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"preset": "accurate", "model": p.model.to_dict(),
                               "train": p.train.to_dict()}))  # fmt: skip
    out = tmp_path / "run"
    argv = ["train", "--train", str(data), "--dev", str(data), "--config", str(cfg)]
    assert main([*argv, "--out", str(out), "--precision", "bf16", "--quiet"]) == 0
    assert json.loads((out / "train_config.json").read_text())["precision"] == "bf16"
    code = main(["train", "--task", "extract", "--train", str(data), "--precision", "bf16",
                 "--out", str(tmp_path / "tags")])  # fmt: skip
    assert code == 2
    assert "--precision: for sentiment models" in capsys.readouterr().err


def test_the_cli_offers_the_precisions_a_config_takes() -> None:
    """absa train's --precision lists its choices itself (the parser is built without
    importing training): they must be TrainConfig's."""
    from absa.cli import build_parser
    from absa.training.presets import PRECISIONS

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    train = sub.choices["train"]
    action = next(a for a in train._actions if a.dest == "precision")
    assert tuple(action.choices) == PRECISIONS
