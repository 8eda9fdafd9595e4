"""Knowledge distillation: a trained teacher's probabilities as soft training targets.

The teacher is any model ``absa evaluate`` accepts (a run directory or an exported
artifact), typically the ``accurate`` preset teaching ``fast``. It scores the training
examples once, before training; the student then learns from
``(1 - distill) * CE(label) + distill * CE(teacher probabilities)``.

The teacher must not have been trained on the student's dev examples (train it with the
same seed and dev split, or on a separate dev file), or early stopping stops being honest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.checkpoint import WEIGHTS, sha256_file
from training.evaluate import model_kind, predict_examples
from training.records import DataError, Example

log = logging.getLogger(__name__)


def teacher_targets(
    teacher: Path, examples: Sequence[Example], labels: Sequence[str]
) -> np.ndarray:
    """The teacher's class probabilities (N, C), columns in the student's label order."""
    teacher = Path(teacher)
    try:
        probs, teacher_labels = predict_examples(teacher, examples)
    except FileNotFoundError as e:
        raise DataError(f"teacher {teacher}: {e}") from None
    if sorted(teacher_labels) != sorted(labels):
        raise DataError(
            f"teacher {teacher}: labels {list(teacher_labels)} differ from {list(labels)}"
        )
    order = [list(teacher_labels).index(lab) for lab in labels]
    probs = probs[:, order].astype(np.float32)
    agree = float((probs.argmax(1) == np.array([labels.index(e.label) for e in examples])).mean())
    log.info(
        "teacher %s scored %d examples; agrees with %.1f%% of the labels",
        teacher,
        len(examples),
        100 * agree,
    )
    return probs


def teacher_info(teacher: Path) -> dict:
    """What identifies the teacher in the student's run.json: path, kind, weights' sha256."""
    teacher = Path(teacher)
    kind = model_kind(teacher)
    weights = teacher / (WEIGHTS if kind == "run" else "model.onnx")
    info = {"path": str(teacher), "kind": kind, "sha256": sha256_file(weights)}
    meta = teacher / ("run.json" if kind == "run" else "metadata.json")
    info["code_version"] = json.loads(meta.read_text()).get("code_version")
    return info
