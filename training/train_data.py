"""The examples a run trains on: dev held out by whole sentences when none is given,
rule-made and oversampled copies, the teacher's soft targets, and a transfer set's aspects
with the teacher's labels (training/train.py's first step)."""

from __future__ import annotations

import itertools
import logging
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from absa.training.augment import augment
from absa.training.distill import ensemble_targets, fold_targets, label_transfer
from absa.training.overlap import bracket_free, drop_overlap
from absa.training.presets import Preset, TrainConfig
from absa.training.provenance import portable
from absa.training.records import DataError, Labelled, term_examples
from absa.training.substitute import source_file
from absa.training.transfer_set import Candidate
from absa.training.union import oversample

log = logging.getLogger(__name__)


@dataclass
class Data:
    """The examples training uses, and how they came to be."""

    train: list[Labelled]
    dev: list[Labelled]
    dev_source: str  # "file", or how dev was held out of train
    label_counts: dict[str, int]  # of train as given: before the split and augmentation
    augmented: int  # rule-made examples added to train
    soft: torch.Tensor | None  # the teacher's probabilities over train (never dev), (N, C)
    # with a transfer set: which items of train have a gold label (its aspects, at the end of
    # train, have the teacher's instead, never trained on), and what came of the set
    gold: torch.Tensor | None = None
    transfer: dict | None = None
    oversampled: int = 0  # copies of the ``oversample`` files' examples added to train
    folds: list[dict] | None = None  # teacher_folds: per fold file, its teacher and items


def prepare_data(
    train: Sequence[Labelled],
    dev: Sequence[Labelled] | None,
    preset: Preset,
    device: torch.device,
    transfer: Sequence[Candidate] = (),
    dev_source: str = "file",
) -> Data:
    """Hold out dev when none is given, augment train, score train with the teacher, and
    append the transfer set's aspects (those not in a dev sentence) with the teacher's labels."""
    tcfg = preset.train
    if preset.model.is_category and (tcfg.augment > 0 or tcfg.teacher or transfer):
        raise ValueError("augment, teacher and transfer are for aspect-term models, not categories")
    if transfer and not tcfg.teacher:
        raise ValueError("a transfer set needs a teacher to label it (train.teacher)")
    counts = {lab: 0 for lab in preset.model.labels}
    for e in itertools.chain(train, dev or ()):  # no copy of the training set
        if e.label not in counts:  # a KeyError naming the label alone
            raise ValueError(
                f"{e.source}: label {e.label!r} is not one of the model's labels "
                f"({', '.join(preset.model.labels)}; model.labels in the config)"
            )
    for e in train:
        counts[e.label] += 1
    if not dev:
        train, dev = split_dev(train, tcfg.dev_fraction, tcfg.split_seed)
        dev_source = f"{tcfg.dev_fraction:.0%} of train held out with seed {tcfg.split_seed}"
        warn_one_label(dev, "the held-out split")
    augmented = 0
    if tcfg.augment > 0:  # train only, after the split: dev never sees synthetic examples
        extra = augment(term_examples(train), seed=tcfg.seed, rate=tcfg.augment)
        train, augmented = [*train, *extra], len(extra)
        log.info("augmented train with %d rule-made example(s)", augmented)
    train, oversampled = oversample(train, tcfg.oversample, tcfg.oversample_times)
    if oversampled:
        log.info("oversampled %s: %d copies added", ", ".join(tcfg.oversample), oversampled)
    log.info("train %d examples, dev %d (%s)", len(train), len(dev), dev_source)
    soft, folds = None, None
    if tcfg.teacher:  # scored with torch's generator forked (distill._cached_predict)
        probs = ensemble_targets(teacher_dirs(tcfg), term_examples(train), preset.model.labels)
        if tcfg.teacher_folds:
            probs, folds = fold_targets(
                probs,
                term_examples(train),
                tcfg.teacher_folds,
                preset.model.labels,
                tcfg.teacher_folds_weight,
            )
        soft = torch.from_numpy(probs).to(device)
    gold, about = None, None
    if transfer:  # never an aspect of a dev sentence: dev shares no text with train
        kept, dropped = drop_overlap(transfer, dev)
        extra, probs = label_transfer(teacher_dirs(tcfg), kept, preset.model.labels)
        about = {
            "given": len(transfer),
            "used": len(extra),
            "dropped_dev_sentences": dropped,
            "teacher_labels": {lab: sum(e.label == lab for e in extra) for lab in counts},
            **transfer_sources(kept),
        }
        gold = torch.tensor([True] * len(train) + [False] * len(extra), device=device)
        train = [*train, *extra]
        soft = torch.cat([soft, torch.from_numpy(probs).to(device)])  # type: ignore[list-item]
        log.info("transfer set added to train with the teacher's targets: %s", about)
    return Data(
        list(train), list(dev), dev_source, counts, augmented, soft, gold, about, oversampled,
        folds,
    )  # fmt: skip


def teacher_dirs(tcfg: TrainConfig) -> list[Path]:
    """``teacher`` and ``teachers_more``: the teachers whose mean probabilities are the soft
    targets."""
    return [Path(t) for t in (tcfg.teacher, *tcfg.teachers_more)]


def transfer_sources(kept: Sequence[Candidate]) -> dict:
    """The used transfer aspects per source file, and how many are substitution copies."""
    found = [source_file(c.source) for c in kept]
    return {
        "by_file": dict(Counter(portable(path) for path, _ in found).most_common()),
        "copies": sum(copy for _, copy in found),
    }


def warn_one_label(dev: Sequence[Labelled], name: str) -> None:
    """A WARNING where the dev set (``name``: its files, or the held-out split) holds one
    label only: its macro-F1 is 100 % for a model that answers that label to everything, and
    the epochs are selected on it."""
    labels = {e.label for e in dev}
    if len(labels) == 1:
        log.warning(
            "%s: the dev set holds one label only (%r): its macro-F1, and the epoch selected "
            "on it, say little",
            name,
            labels.pop(),
        )


def split_dev(
    examples: Sequence[Labelled],
    fraction: float,
    seed: int,
    key: Callable[[str], str] = bracket_free,
) -> tuple[list, list]:
    """Hold out about ``fraction`` of train as dev, by whole sentences, fixed by ``seed``:
    examples of one sentence stay on one side, so dev never shares text with train. A
    sentence is its ``key``: ``bracket_free`` puts the copies of one sentence in two
    tokenisations (MAMS and SemEval-2014 restaurants share 29 of the shipped union's dev
    sentences so) on one side; runs made before it (no ``sentence_key`` in run.json)
    grouped by the exact text (``key=str``)."""
    by_text: dict[str, list[Labelled]] = {}
    for e in examples:
        by_text.setdefault(key(e.text), []).append(e)
    groups = list(by_text.values())
    rng = random.Random(seed)
    rng.shuffle(groups)
    target = max(1, round(len(examples) * fraction))
    dev: list[Labelled] = []
    train: list[Labelled] = []
    for g in groups:
        (dev if len(dev) < target else train).extend(g)
    if not train:
        raise DataError("too few examples to hold out a dev split")
    return train, dev


def split_dev_of_first(
    examples: Sequence[Labelled],
    n: int,
    fraction: float,
    seed: int,
    key: Callable[[str], str] = bracket_free,
) -> tuple[list, list]:
    """``split_dev`` of the first ``n`` examples alone (``absa train --dev-from-train``:
    --train's, which ``union.combine`` keeps first): the rest of them and every later
    example are train, so examples added after them leave dev as it was."""
    train, dev = split_dev(examples[:n], fraction, seed, key)
    return [*train, *examples[n:]], dev
