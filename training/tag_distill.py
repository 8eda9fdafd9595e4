"""Distilling a tagger: a teacher extractor's per-word tag distributions as soft targets.

The teacher (an extractor artifact, typically the accurate transformer tagger) tags the
student's training sentences once, before training, and any extra unlabelled in-domain
sentences (``absa train --task extract --unlabelled``). The student learns from

    (1 - distill) * gold loss + distill * T^2 * KL(teacher_T || student_T)

on labelled sentences (the gold loss: cross-entropy, or the CRF's) and from the KL term
alone on unlabelled ones; ``_T``: both distributions at temperature ``T``. The teacher's
distribution of a word's tag is its softmax, or for a CRF teacher its marginal over every
tag sequence the decoder allows (forward-backward under its transitions: the softmax of a
CRF's emissions is not its distribution; -kd runs before this used it all the same).

Teacher and student read the same words (``absa.model.tagtext.tag_tokens`` of one word
tokenizer version: a student takes its teacher's, which its pipeline.json and run.json
record; the shipped extractor's is 1, new runs' 2), so the teacher's rows line up with the
student's words whatever the windows (``training.tagging.encode`` refuses a student pipeline
of another version).

The teacher must not have been trained on the student's dev sentences (train it with the
same seed and split), or the choice of epoch stops being honest.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from absa.model.extractor import Extractor
from absa.model.spans import tag_marginals

log = logging.getLogger(__name__)


def load_teacher(teacher: Path | Extractor) -> Extractor:
    """The teacher extractor artifact, on the CPU."""
    if isinstance(teacher, Extractor):
        return teacher
    return Extractor.load(teacher, device="cpu", threads=1)


def teacher_word_probs(teacher: Path | Extractor, texts: Sequence[str]) -> list[np.ndarray]:
    """The teacher's tag distribution (T_i, K) for every word of each text (the words of its
    own word tokenizer): a CRF teacher's per-word marginals (``absa.model.spans.
    tag_marginals``, each window a chain of its own, under the transitions its artifact
    keeps), a softmax teacher's per-word softmax."""
    ext = load_teacher(teacher)
    _, per_text = ext.window_probs(texts)
    k = len(ext.metadata["labels"])
    if ext.learned is not None:
        learned = ext.learned
        log.info("teacher %s has a CRF: its targets are its per-word tag marginals", teacher)
        per_text = [
            [tag_marginals(p.astype(np.float64), learned).astype(np.float32) for p in windows]
            for windows in per_text
        ]
    return [np.concatenate(p) if p else np.zeros((0, k), np.float32) for p in per_text]


def kd_loss(
    logits: torch.Tensor, soft: torch.Tensor, mask: torch.Tensor, temperature: float
) -> torch.Tensor:
    """T^2 * KL(teacher_T || student_T), averaged over the words where ``mask`` (B, T) is set;
    ``soft`` (B, T, K) the teacher's probabilities at temperature 1."""
    keep = mask.bool()
    log_p = torch.log_softmax(torch.log(soft[keep].clamp_min(1e-8)) / temperature, -1)
    log_q = torch.log_softmax(logits[keep] / temperature, -1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    return kl.mean() * temperature**2
