"""Choosing the tagger's epoch on dev: exact-span F1 per source, and the criterion.

The dev split of a union of files is pooled: its spans mostly come from the larger sets
(MAMS, ACOS laptop), so pooled F1 weights the domains unlike the targets (one F1 per test
set). ``by_source`` scores each source file's part of dev alone; ``criterion`` is pooled F1
(``select="pooled"``) or the plain mean of the per-source F1s (``select="source_mean"``),
leaving out the sources whose name contains a ``select_skip`` part (e.g. ACOS laptop,
which has no test set here).

A source's name is the last two parts of its file's path (``mams/train.xml``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import PurePath

from absa.model.spans import span_scores
from absa.training.sentences import Sentence
from absa.training.tag_config import TagTrainConfig


def source_name(source: str) -> str:
    """``/data/mams/train.xml:42`` -> ``mams/train.xml``."""
    path = PurePath(source.rsplit(":", 1)[0] if ":" in source else source)
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def by_source(dev: Sequence[Sentence], pred: Sequence[set]) -> dict[str, dict]:
    """Exact-span scores of each source's dev sentences, by source name."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(dev):
        groups.setdefault(source_name(s.source), []).append(i)
    return {
        name: span_scores([dev[i].span_set for i in idx], [pred[i] for i in idx])
        for name, idx in sorted(groups.items())
    }


def criterion(pooled: dict, sources: dict[str, dict], tcfg: TagTrainConfig) -> float:
    """The number the epoch is chosen by (higher is better)."""
    if tcfg.select == "pooled":
        return float(pooled["f1"])
    kept = [r["f1"] for name, r in sources.items() if not any(p in name for p in tcfg.select_skip)]
    if not kept:
        raise ValueError(f"select_skip {list(tcfg.select_skip)} leaves no dev source")
    return statistics.fmean(kept)
