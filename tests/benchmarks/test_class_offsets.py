"""benchmarks/class_offsets.py: the grid search for a prior correction."""

from __future__ import annotations

import numpy as np

from benchmarks import class_offsets


def _underpredicts_last_class(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Gold cycles 0, 1, 2; the model ranks right but puts class 2 below class 1 when
    class 2 is the answer (p = 0.2 / 0.42 / 0.38): a shift of class 2 by +0.2 fixes it."""
    gold = np.arange(n) % 3
    probs = np.full((n, 3), 0.1)
    probs[gold == 0] = [0.8, 0.1, 0.1]
    probs[gold == 1] = [0.1, 0.8, 0.1]
    probs[gold == 2] = [0.2, 0.42, 0.38]
    return probs, gold


def test_the_offset_found_fixes_a_class_the_model_puts_too_low() -> None:
    probs, gold = _underpredicts_last_class()
    assert class_offsets.scores(probs, gold, np.zeros(3))[0] < 70
    offset, f1 = class_offsets.best_offset(probs, gold, np.zeros(len(gold)), 1, class_offsets.GRID)
    assert offset[1] == 0.0  # the fixed class stays at zero
    assert offset[2] - offset[1] > np.log(0.42 / 0.38)  # enough to lift class 2 over class 1
    assert f1 == 100.0
    assert class_offsets.scores(probs, gold, offset) == (100.0, 100.0)


def test_groups_count_once_each_whatever_their_size() -> None:
    """The source mean weighs a small group like a large one: a group the offset would
    break outweighs a bigger group it would fix only when groups, not items, are averaged."""
    probs, gold = _underpredicts_last_class(30)
    # a large group that is already right with no offset, a third of whose class-1 items any
    # shift of class 2 by more than 0.1 breaks (they sit at 0.45 / 0.42); like every source
    # of dev, it holds all three classes (macro-F1 averages the classes a group holds)
    big = np.repeat([[0.13, 0.45, 0.42], [0.1, 0.8, 0.1]], [100, 200], axis=0)
    sure = np.array([[0.9, 0.05, 0.05], [0.05, 0.05, 0.9]])  # classes 0 and 2, right anyway
    probs = np.vstack([probs, big, np.repeat(sure, 10, axis=0)])
    gold = np.concatenate([gold, np.ones(300, dtype=int), [0] * 10, [2] * 10])
    groups = np.array(["small"] * 30 + ["big"] * 320)
    pooled, _ = class_offsets.best_offset(probs, gold, np.zeros(len(gold)), 1, class_offsets.GRID)
    by_group, _ = class_offsets.best_offset(probs, gold, groups, 1, class_offsets.GRID)
    assert pooled[2] - pooled[1] <= np.log(0.45 / 0.42)  # pooled: the big group wins
    assert by_group[2] - by_group[1] > np.log(0.42 / 0.38)  # per group: the small one is fixed
