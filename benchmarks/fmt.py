"""Formatting shared by the benchmark tables."""

from __future__ import annotations

import statistics


def mean_sd(values: list[float], digits: int = 2) -> str:
    """Fractions as a percentage "mean ± sd" (one value: the value; none: a dash)."""
    if not values:
        return "–"
    mean = statistics.mean(values) * 100
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values) * 100:.{digits}f}"
