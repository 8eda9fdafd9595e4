"""A linear-chain CRF over the tagger's emissions (training only; serving decodes with the
learned scores in ``absa.model.spans.viterbi``).

The loss is the negative log-likelihood of the gold tag path: the log partition function by
the forward algorithm (log-sum-exp over the previous tag at each step) minus the gold
path's score (start score + emissions + transition scores), over the real words of each
right-padded sentence, averaged over sentences. The BIO rule (``I`` never first, never after
``O``) is a fixed -1e4 on those transitions, as in decoding; touching spans (``B`` after
``B`` or ``I``) stay allowed in training because a few gold sentences have them.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from absa.model.spans import TAGS, Transitions

_FORBIDDEN = -1e4
# [prev, next]: I only after B or I; a sentence may not start with I (spans.py's rule
# without the one against touching spans)
_TRAIN_ALLOWED = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 1, 1]], dtype=torch.bool)
_START_ALLOWED = torch.tensor([1, 1, 0], dtype=torch.bool)


class CRF(nn.Module):
    def __init__(self, n_tags: int = len(TAGS)) -> None:
        super().__init__()
        self.start = nn.Parameter(torch.zeros(n_tags))
        self.pairs = nn.Parameter(torch.zeros(n_tags, n_tags))  # [prev, next]

    def _scores(self) -> tuple[torch.Tensor, torch.Tensor]:
        start = self.start.masked_fill(~_START_ALLOWED, _FORBIDDEN)
        return start, self.pairs.masked_fill(~_TRAIN_ALLOWED, _FORBIDDEN)

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of ``tags`` (B, T) under emissions (B, T, K); every
        sentence has at least one real word and its words come first (``mask`` (B, T))."""
        start, pairs = self._scores()
        m = mask.to(emissions.dtype)  # (B, T)
        em_gold = emissions.gather(2, tags.unsqueeze(-1)).squeeze(-1)  # (B, T)
        gold = start[tags[:, 0]] + (em_gold * m).sum(1)
        gold = gold + (pairs[tags[:, :-1], tags[:, 1:]] * m[:, 1:]).sum(1)
        alpha = start + emissions[:, 0]  # (B, K)
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha.unsqueeze(2) + pairs, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t, None].bool(), step, alpha)
        return (torch.logsumexp(alpha, dim=1) - gold).mean()

    def transitions(self) -> Transitions:
        """The learned scores for the numpy decoder (the BIO rules are its own)."""
        start = self.start.detach().cpu().double().numpy()
        return Transitions(np.array(start), self.pairs.detach().cpu().double().numpy().copy())


def tag_loss(
    crf: CRF | None, logits: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """A tagger's loss: the CRF's negative log-likelihood, or token-level cross-entropy over
    the real words."""
    keep = mask.bool()
    if crf is not None:
        return crf.nll(logits, tags, keep)
    return F.cross_entropy(logits[keep], tags[keep])
