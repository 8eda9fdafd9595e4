"""Evaluate a training run (torch) or an exported artifact (onnxruntime) on labelled data.

Evaluating an artifact imports no torch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from absa.model import artifact
from absa.model.calibration import ECE_BINS, expected_calibration_error
from absa.model.config import ModelConfig
from absa.training import rundir
from absa.training.metrics import classification_report
from absa.training.records import CategoryExample, Invalid, Labelled


def model_kind(model_dir: Path) -> str:
    """'run' for a training run directory, 'artifact' for an exported model directory."""
    model_dir = Path(model_dir)
    if rundir.is_run(model_dir):
        return "run"
    if artifact.is_artifact(model_dir):
        return "artifact"
    raise FileNotFoundError(
        f"{model_dir}: neither a training run ({rundir.RUN_INFO}) "
        f"nor an artifact ({artifact.METADATA})"
    )


def model_identity(model_dir: Path) -> dict:
    """Which model ``model_dir`` held when it was used (an eval report, a retraining gate):
    an artifact's name, version and ONNX sha256; a run's (sentiment or tagger) weights sha256
    and code version. The path alone names another model once the directory is reused."""
    import json

    model_dir = Path(model_dir)
    record: dict = {"path": str(model_dir)}
    if artifact.is_artifact(model_dir):  # any kind: a sentiment model, an extractor
        meta = json.loads((model_dir / artifact.METADATA).read_text(encoding="utf-8"))
        record.update(kind="artifact", name=meta.get("name"), version=meta.get("version"))
        record["onnx_sha256"] = (meta.get("onnx") or {}).get("sha256")
        return record
    info = json.loads((model_dir / rundir.RUN_INFO).read_text(encoding="utf-8"))
    record.update(kind="run", weights_sha256=artifact.sha256_file(model_dir / rundir.WEIGHTS))
    record["code_version"] = info.get("code_version")
    return record


def model_task(model_dir: Path) -> str:
    """What a run or artifact classifies: "terms" or "category"."""
    from absa.model.categories import task_of

    if model_kind(model_dir) == "run":  # a damaged config: ValueError naming it
        cfg = ModelConfig.load(Path(model_dir) / rundir.MODEL_CONFIG)
        return "category" if cfg.is_category else "terms"
    return task_of(artifact.read_metadata(model_dir))


def model_categories(model_dir: Path) -> list[str]:
    """The categories a run or artifact of the category task classifies (else none)."""
    if model_kind(model_dir) == "run":
        return list(ModelConfig.load(Path(model_dir) / rundir.MODEL_CONFIG).categories or [])
    return list(artifact.read_metadata(model_dir).get("categories") or [])


def known_categories(
    examples: Sequence[CategoryExample], categories: Sequence[str]
) -> tuple[list[CategoryExample], list[Invalid]]:
    """The examples whose category is the model's, named as the model names it ("FOOD" is
    its "food", as predict and the API read it), and those whose category it has not,
    each as an ``Invalid`` naming its file and line."""
    from absa.errors import InputError
    from absa.model.categories import category_id

    kept: list[CategoryExample] = []
    unknown: list[Invalid] = []
    for e in examples:
        try:
            kept.append(replace(e, category=categories[category_id(categories, e.category)]))
        except InputError as err:
            unknown.append(Invalid(e.source, str(err), e.text))
    return kept, unknown


def predict_examples(
    model_dir: Path, examples: Sequence[Labelled], device: str = "auto"
) -> tuple[np.ndarray, list[str]]:
    """Class probabilities (N, C) for the examples, and the label names. A run's network
    runs on ``device`` (auto: a CUDA GPU when torch sees one: a teacher scored on a GPU box
    takes seconds, not minutes); an artifact on onnxruntime's default provider."""
    if model_kind(model_dir) == "run":
        from absa.training.inference import encode_all, predict_probs, resolve_device

        run = rundir.load_run(model_dir)
        run.net.to(resolve_device(device))
        cfg = run.model_config
        encoded = encode_all(run.pipeline, examples, cfg.categories, cfg.pair)
        probs = predict_probs(run.net, encoded, run.pipeline.pad_id)
        return probs, list(run.model_config.labels)
    from absa.model.categories import encode_example
    from absa.model.runtime import Runtime

    rt = Runtime.load(model_dir, task=model_task(model_dir))
    pair = rt.category_pair
    outs = rt.run([encode_example(rt.pipeline, e, rt.categories, pair) for e in examples])
    probs = np.stack([o.probs for o in outs]) if outs else np.zeros((0, len(rt.labels)))
    return probs, list(rt.labels)


def evaluate(
    model_dir: Path, examples: Sequence[Labelled], groups: Sequence[str] | None = None
) -> dict:
    """Accuracy, macro-F1, per-class scores, the confusion matrix and the expected
    calibration error (``ece``, 15 bins, of the probabilities as served) of a run or
    artifact. A run's probabilities are its network's: a temperature comes with export.
    ``groups`` (one name per example, e.g. its file): ``by_group``, each group's n,
    accuracy and macro-F1 beside the pooled scores, from the same predictions."""
    probs, labels = predict_examples(model_dir, examples)
    gold = [labels.index(e.label) for e in examples]
    report = classification_report(gold, probs.argmax(1), labels)
    report["ece"] = expected_calibration_error(probs, np.asarray(gold, dtype=np.int64))
    report["ece_bins"] = ECE_BINS
    report["calibration"] = calibration_of(model_dir)
    if groups is not None:
        report["by_group"] = {}
        for name in dict.fromkeys(groups):
            idx = [i for i, g in enumerate(groups) if g == name]
            part = classification_report([gold[i] for i in idx], probs[idx].argmax(1), labels)
            report["by_group"][name] = {k: part[k] for k in ("n", "accuracy", "macro_f1")}
    return report


def calibration_of(model_dir: Path) -> str:
    """How the probabilities scored were calibrated: a run's and an artifact's ECE differ
    by the temperature that export fits, which the report did not say."""
    if model_kind(model_dir) == "run":
        return "none (a run's network; export fits a temperature on dev)"
    cal = artifact.read_metadata(model_dir).get("calibration")
    if not isinstance(cal, dict) or not isinstance(cal.get("temperature"), int | float):
        return "none"
    top = ", and a top-label map" if cal.get("top_map") else ""
    return f"as served: temperature {cal['temperature']:.3g}{top}"
