"""Distilling a tagger: a teacher extractor's per-word tag distributions as soft targets.

The teacher (an extractor artifact, typically the accurate transformer tagger) tags the
student's training sentences once, before training, and any extra unlabelled in-domain
sentences (``absa train --task extract --unlabelled``). The student learns from

    (1 - distill) * gold loss + distill * T^2 * KL(teacher_T || student_T)

on labelled sentences (the gold loss: cross-entropy, or the CRF's) and from the KL term
alone on unlabelled ones; ``_T``: both distributions at temperature ``T``. Teacher and
student read the same words (``absa.model.tagtext.tag_tokens``), so the teacher's rows line
up with the student's words whatever the windows.

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

log = logging.getLogger(__name__)


def teacher_word_probs(teacher: Path, texts: Sequence[str]) -> list[np.ndarray]:
    """The teacher's tag probabilities (T_i, K) for every word of each text."""
    ext = Extractor.load(teacher, device="cpu", threads=1)
    _, per_text = ext.window_probs(texts)
    k = len(ext.metadata["labels"])
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
