"""Two optional terms on the aspect attention α, added to the training loss (issue #11's seed
notes; both off by default):

- ``attention_coverage`` λ, the doubly-stochastic penalty of Xu et al. (2015) over the
  aspects of one sentence: λ Σ_t (1 − Σ_i α_it)², i the aspects of the sentence in the
  batch, t its words. Each α_i sums to 1 over the words; the penalty asks that the words'
  total attention be spread over the sentence rather than piled by every aspect on the same
  few words. It needs the aspects of one sentence in one batch, so with it the batches keep
  them together (``grouped_batches``). A sentence with one aspect in the batch adds nothing.
- ``attention_entropy`` λ_H: λ_H times the mean entropy −Σ_t α_t log α_t of each item's
  attention. Positive: sharper attention; negative: flatter.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import torch

from absa.model.text import Encoded


def sentence_groups(items: Sequence[Encoded]) -> list[int]:
    """A group id per item: items of the same text's word ids (the aspects, or categories,
    of one sentence; a sentence pair's text part, token type 0, without the category words).
    An item that repeats one of its sentence (an oversampled copy: ``union.oversample``) is
    in a copy of the sentence of its own: its n-th copy of an aspect goes with the n-th
    copies of the others, so a one-aspect sentence given twice is two such sentences, not
    one sentence of two aspects."""
    groups: dict[tuple[tuple[int, ...], int], int] = {}
    copies: Counter[tuple[tuple[int, ...], tuple[int, ...], int | None]] = Counter()
    out = []
    for e in items:
        words = tuple(e.ids)
        if e.token_types is not None:
            words = tuple(i for i, t in zip(e.ids, e.token_types, strict=True) if t == 0)
        aspect = (words, tuple(e.aspect_mask), e.category)
        n = copies[aspect]  # the copies of this aspect before it
        copies[aspect] += 1
        out.append(groups.setdefault((words, n), len(groups)))
    return out


def grouped_batches(
    lengths: Sequence[int], groups: Sequence[int], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches of similar length in which the items of one group are adjacent (a
    group is split only where a batch ends)."""
    order = list(dict.fromkeys(groups))
    rng.shuffle(order)
    rank = {g: r for r, g in enumerate(order)}
    idx = sorted(range(len(lengths)), key=lambda i: rank[groups[i]])
    chunk = batch_size * 50
    out: list[list[int]] = []
    for c in range(0, len(idx), chunk):
        part = sorted(idx[c : c + chunk], key=lambda i: (lengths[i], rank[groups[i]]))
        out.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(out)
    return out


def coverage_penalty(alpha: torch.Tensor, mask: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """Mean over the batch's sentences with two or more aspects of Σ_t (1 − Σ_i α_it)², over
    their words; 0 when there is none. alpha, mask: (B, T); groups: (B,) ids. With K aspects
    over N > K words it is least when the summed attention is K/N on every word: it spreads
    the aspects' attention over the sentence, flattening it as much as it parts them; it
    grows with N against the cross-entropy (a sentence's sum, not its mean)."""
    groups = groups.to(alpha.device)
    _, inverse, counts = torch.unique(groups, return_inverse=True, return_counts=True)
    cover = torch.zeros(len(counts), alpha.size(1), dtype=alpha.dtype, device=alpha.device)
    cover = cover.index_add(0, inverse, alpha)  # (G, T) the words' total attention
    words = torch.zeros_like(cover).index_add(0, inverse, mask.to(alpha.dtype)).clamp(max=1.0)
    per_group = (((1.0 - cover) ** 2) * words).sum(1)
    several = counts > 1
    if not bool(several.any()):
        return alpha.new_zeros(())
    return per_group[several].mean()


def attention_entropy(alpha: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over items of −Σ_t α_t log α_t (padding has α = 0 and adds nothing)."""
    terms = torch.where(mask > 0, alpha * torch.log(alpha.clamp(min=1e-12)), 0.0)
    return -terms.sum(1).mean()


__all__ = ["attention_entropy", "coverage_penalty", "grouped_batches", "sentence_groups"]
