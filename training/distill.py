"""Knowledge distillation: a trained teacher's probabilities as soft training targets.

The teacher is any model ``absa evaluate`` accepts (a run directory or an exported
artifact: its probabilities as served, with the temperature export fitted), typically the
``accurate`` preset teaching ``fast``. It scores the training
examples once, before training; the student then learns from
``(1 - distill) * CE(label) + distill * CE(teacher probabilities)``.

A transfer set (``absa train --transfer``, ``training/transfer_set.py``) adds aspects that
carry no label: the teacher's probabilities are their only target, CE(teacher probabilities)
at full weight, and their label loss is masked out (``mixed_loss``).

The teacher must not have been trained on the student's dev examples (train it with the
same seed and dev split, or on a separate dev file), or early stopping stops being honest.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from absa.model import artifact
from absa.training import rundir, teacher_scores
from absa.training.evaluate import model_kind, predict_examples
from absa.training.readers import read_examples
from absa.training.records import TRANSFER, DataError, Example, term_examples
from absa.training.teacher_cache import cached_scores, file_sha256
from absa.training.transfer_set import Candidate

log = logging.getLogger(__name__)


def teacher_targets(
    teacher: Path, examples: Sequence[Example], labels: Sequence[str]
) -> np.ndarray:
    """The teacher's class probabilities (N, C), columns in the student's label order."""
    teacher = Path(teacher)
    probs = _teacher_probs(teacher, examples, labels)
    agree = float((probs.argmax(1) == np.array([labels.index(e.label) for e in examples])).mean())
    log.info(
        "teacher %s scored %d examples; agrees with %.1f%% of the labels",
        teacher,
        len(examples),
        100 * agree,
    )
    return probs


def ensemble_targets(
    teachers: Sequence[Path], examples: Sequence[Example], labels: Sequence[str]
) -> np.ndarray:
    """The mean of the teachers' class probabilities (N, C), equal weights: one teacher's
    own when there is one. Each teacher is scored (and cached) on its own."""
    if not teachers:
        raise ValueError("no teacher")
    probs = np.mean([teacher_targets(t, examples, labels) for t in teachers], axis=0)
    if len(teachers) > 1:
        agree = probs.argmax(1) == np.array([labels.index(e.label) for e in examples])
        log.info(
            "%d teachers' mean agrees with %.1f%% of the labels", len(teachers), 100 * agree.mean()
        )
    return probs.astype(np.float32)


def fold_targets(
    soft: np.ndarray,
    examples: Sequence[Example],
    folds: Sequence[tuple[str, str]],
    labels: Sequence[str],
    weight: float = 1.0,
) -> tuple[np.ndarray, list[dict]]:
    """Out-of-fold targets: ``soft`` (N, C) over ``examples`` with the rows of each fold
    file's spans (sentence, start, end) replaced by its teacher's probabilities (``weight``
    < 1: by ``weight`` x those + (1 - ``weight``) x ``soft``'s, a blend). A fold file named
    in several pairs takes the mean of their teachers' probabilities (draws of the fold
    teacher, as ``teachers_more`` is for ``teacher``). A teacher whose run records that
    fold file (by sha256) among its training data is refused: it trained on the items it
    would score. Returns the targets and, per pair, what it did."""
    out, about = soft.copy(), []
    by_fold: dict[str, list[str]] = {}
    for fold, teacher in folds:
        by_fold.setdefault(fold, []).append(teacher)
    for fold, teachers in by_fold.items():
        sha = file_sha256(Path(fold))
        for teacher in teachers:
            if model_kind(Path(teacher)) == "run":
                trained = rundir.read_info(Path(teacher)).get("data", {}).get("train", [])
                if any(entry.get("sha256") == sha for entry in trained):
                    raise DataError(f"teacher {teacher} trained on {fold}: not out of fold")
        spans = {(e.text, e.start, e.end) for e in term_examples(read_examples(fold).examples)}
        rows = [i for i, e in enumerate(examples) if (e.text, e.start, e.end) in spans]
        if rows:
            items = [examples[i] for i in rows]
            theirs = ensemble_targets([Path(t) for t in teachers], items, labels)
            out[rows] = weight * theirs + (1.0 - weight) * soft[rows]
        about += [
            {"file": fold, "sha256": sha, "teacher": t, "items": len(rows), "weight": weight}
            for t in teachers
        ]
        log.info(
            "out-of-fold targets: %d training item(s) of %s from %s",
            len(rows), fold, " and ".join(teachers),
        )  # fmt: skip
    return out, about


def _teacher_probs(teacher: Path, examples: Sequence[Example], labels: Sequence[str]) -> np.ndarray:
    from absa.training.evaluate import model_task

    try:
        # a category model said "a category model needs category_ids", naming no teacher
        if not teacher_scores.is_scores(teacher) and model_task(teacher) != "terms":
            raise DataError(
                f"teacher {teacher} is an aspect-category model: a student of aspect terms "
                "learns from an aspect-term model"
            )
        probs, teacher_labels = _cached_predict(teacher, examples)
    except FileNotFoundError as e:
        raise DataError(f"teacher {teacher}: {e}") from None
    if sorted(teacher_labels) != sorted(labels):
        raise DataError(
            f"teacher {teacher}: labels {list(teacher_labels)} differ from {list(labels)}"
        )
    order = [list(teacher_labels).index(lab) for lab in labels]
    return probs[:, order].astype(np.float32)


def _cached_predict(teacher: Path, examples: Sequence[Example]) -> tuple[np.ndarray, list[str]]:
    """``predict_examples``, through the teacher cache (``ABSA_TEACHER_CACHE``,
    ``training/teacher_cache.py``): every student of one teacher asks it much the same. A
    teacher's scores carried without it (``training/teacher_scores.py``) answer for it."""
    from absa.settings import OfflineSettings

    if teacher_scores.is_scores(teacher):
        return teacher_scores.scores_of(teacher, examples)
    root = OfflineSettings().teacher_cache_dir()
    # a teacher run's network draws from torch's generator as it is built, on a cache miss
    # alone: the student's draws that follow were another as the cache was cold or warm
    with torch.random.fork_rng():
        if root is None:
            return predict_examples(teacher, examples)
        return cached_scores(root, teacher, examples, functools.partial(predict_examples, teacher))


def transfer_placeholders(found: Sequence[Candidate], labels: Sequence[str]) -> list[Example]:
    """The transfer set's aspects as examples to be scored: each carries the first label as a
    placeholder (never trained on) and its source marked as a transfer set's."""
    return [Example(c.text, c.start, c.end, labels[0], TRANSFER + c.source) for c in found]


def label_transfer(
    teachers: Sequence[Path], found: Sequence[Candidate], labels: Sequence[str]
) -> tuple[list[Example], np.ndarray]:
    """The transfer set's aspects as examples labelled with the teachers' most probable class
    (the label is never trained on: ``mixed_loss`` masks it), and the teachers' mean
    probabilities (N, C) in the student's label order."""
    placeholder = transfer_placeholders(found, labels)
    if not placeholder:
        return [], np.zeros((0, len(labels)), np.float32)
    probs = np.mean([_teacher_probs(Path(t), placeholder, labels) for t in teachers], axis=0)
    examples = [
        Example(e.text, e.start, e.end, labels[int(k)], e.source)
        for e, k in zip(placeholder, probs.argmax(1), strict=True)
    ]
    return examples, probs


def mixed_loss(
    logits: torch.Tensor,
    y: torch.Tensor,
    soft: torch.Tensor,
    gold: torch.Tensor,
    distill: float,
    weight: torch.Tensor | None = None,
    label_smoothing: float = 0.0,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Mean over the batch of ``(1 - distill) * CE(label) + distill * KD`` for the items
    with a gold label (``gold`` True) and ``KD`` alone for the others (a transfer set's
    aspects: their ``y`` is not used), KD being ``kd_loss``. ``weight``: per-class weights
    of the label term."""
    label = F.cross_entropy(
        logits, y, weight=weight, label_smoothing=label_smoothing, reduction="none"
    )
    kd = kd_loss(logits, soft, temperature, reduction="none")
    return torch.where(gold, (1.0 - distill) * label + distill * kd, kd).mean()


def kd_loss(
    logits: torch.Tensor, soft: torch.Tensor, temperature: float = 1.0, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy of the student's ``logits`` with the teacher's probabilities ``soft``,
    both softened by ``temperature`` T (Hinton et al. 2015): the teacher's as
    ``softmax(log p / T)``, since its probabilities are all that is kept of it, and the
    term times T^2 so that its gradients keep their scale. T = 1 is the plain soft CE."""
    if temperature == 1.0:
        return F.cross_entropy(logits, soft, reduction=reduction)
    target = torch.softmax(torch.log(soft.clamp_min(1e-8)) / temperature, dim=-1)
    ce = F.cross_entropy(logits / temperature, target, reduction=reduction)
    return ce * temperature**2


def dev_leak(teacher: Path, dev: Sequence[Example]) -> int | None:
    """How many of the student's dev sentences the teacher may have trained on: those not
    in the teacher run's own dev set. None when the teacher's dev set is unknown (an
    artifact). Non-zero means the student's early stopping sees a teacher that knows dev."""
    if model_kind(teacher) != "run":
        return None
    try:
        seen = {e.text for e in rundir.read_dev_examples(teacher)}
    except FileNotFoundError:
        return None
    leak = len({e.text for e in dev} - seen)
    if leak:
        log.warning(
            "%d of the student's dev sentences are not in teacher %s's dev set: it may have "
            "trained on them (use the same seed and dev split for both)",
            leak,
            teacher,
        )
    return leak


def teacher_info(teacher: Path, dev: Sequence[Example]) -> dict:
    """What identifies the teacher in the student's run.json: path, kind, weights' sha256,
    and the dev sentences it may have trained on (``dev_leak``). A teacher's scores (kind
    "scores") name the weights they came from."""
    teacher = Path(teacher)
    kind = model_kind(teacher)
    if teacher_scores.is_scores(teacher):
        kind, about = "scores", rundir.read_info(teacher)
        sha = teacher_scores.read_record(teacher)["weights_sha256"]
    elif kind == "run":
        about = rundir.read_info(teacher)
        sha = file_sha256(teacher / rundir.WEIGHTS)
    else:
        about = artifact.read_metadata(teacher)
        sha = file_sha256(teacher / artifact.ONNX)
    info = {"path": str(teacher), "kind": kind, "sha256": sha}
    info["code_version"] = about.get("code_version")
    info["dev_leak"] = dev_leak(teacher, dev)
    return info


def teachers_info(teachers: Sequence[Path], dev: Sequence[Example]) -> dict:
    """``teacher_info`` of the first teacher; with more, theirs under ``more`` and
    ``dev_leak`` the most any of them may have seen (None when one of them cannot tell:
    an exported teacher)."""
    info = teacher_info(teachers[0], dev)
    if len(teachers) > 1:
        info["more"] = [teacher_info(t, dev) for t in teachers[1:]]
        leaks = [i["dev_leak"] for i in (info, *info["more"])]
        info["dev_leak"] = None if None in leaks else max(leaks)
    return info
