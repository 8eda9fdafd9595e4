"""Evaluate a training run (torch) or an exported artifact (onnxruntime) on labelled data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.metrics import classification_report
from training.records import Example


def model_kind(model_dir: Path) -> str:
    """'run' for a training run directory, 'artifact' for an exported model directory."""
    model_dir = Path(model_dir)
    if (model_dir / "run.json").is_file():
        return "run"
    if (model_dir / "metadata.json").is_file():
        return "artifact"
    raise FileNotFoundError(
        f"{model_dir}: neither a training run (run.json) nor an artifact (metadata.json)"
    )


def predict_examples(model_dir: Path, examples: Sequence[Example]) -> tuple[np.ndarray, list[str]]:
    """Class probabilities (N, C) for the examples, and the label names."""
    if model_kind(model_dir) == "run":
        from training.checkpoint import load_run
        from training.train import encode_all, predict_probs

        run = load_run(model_dir)
        probs = predict_probs(run.net, encode_all(run.pipeline, examples), run.pipeline.pad_id)
        return probs, list(run.model_config.labels)
    from model.runtime import Runtime

    rt = Runtime.load(model_dir)
    probs = rt.predict_proba([(e.text, e.start, e.end) for e in examples])
    return probs, list(rt.labels)


def evaluate(model_dir: Path, examples: Sequence[Example]) -> dict:
    probs, labels = predict_examples(model_dir, examples)
    gold = [labels.index(e.label) for e in examples]
    return classification_report(gold, probs.argmax(1), labels)


def write_json(path: Path, obj: object) -> None:
    Path(path).write_text(json.dumps(obj, indent=1))
