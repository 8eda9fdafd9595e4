"""The retraining job's gate and drift check: whether a challenger's metrics on the fixed
evaluation sets pass (a floor, and no more than the allowed drop against what is served), and
how far its training labels moved from the champion's (total variation distance)."""

from __future__ import annotations

import logging

from absa.model.registry import Registry
from absa.training.readers import label_counts
from absa.training.records import Example
from absa.training.retrain_config import Gate

log = logging.getLogger(__name__)

#: float slack of the gate's comparisons (far below one item in any evaluation set)
_GATE_EPS = 1e-9


def label_shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values()) or 1
    return {k: v / total for k, v in counts.items()}


def drift(old: dict[str, int], new: dict[str, int]) -> float:
    """Total variation distance between two label distributions (0 = same, 1 = disjoint)."""
    a, b = label_shares(old), label_shares(new)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def check_gate(
    gate: Gate, challenger: dict, champion: dict | None, against: str = "champion"
) -> tuple[bool, list[str]]:
    """The gate: the floor, and no more than the allowed drop against ``champion`` (the
    metrics of what is served now: the registry's champion, or the baseline before one)."""
    reasons, ok = [], True
    for name, c in challenger.items():
        if c["accuracy"] < gate.min_accuracy:
            ok = False
            reasons.append(f"{name}: accuracy {c['accuracy']:.4f} < floor {gate.min_accuracy:.4f}")
        if champion is None:
            continue
        ch = champion[name]
        # a drop of exactly the tolerance passes: 0.8 - 0.1 is 0.7000000000000001 in floats
        if c["accuracy"] < ch["accuracy"] - gate.max_accuracy_drop - _GATE_EPS:
            ok = False
            reasons.append(
                f"{name}: accuracy {c['accuracy']:.4f} < {against} {ch['accuracy']:.4f} "
                f"- {gate.max_accuracy_drop}"
            )
        if c["macro_f1"] < ch["macro_f1"] - gate.max_macro_f1_drop - _GATE_EPS:
            ok = False
            reasons.append(
                f"{name}: macro-F1 {c['macro_f1']:.4f} < {against} {ch['macro_f1']:.4f} "
                f"- {gate.max_macro_f1_drop}"
            )
    if ok:
        reasons.append(
            "passes: "
            + ("no model to compare with" if champion is None else f"within tolerance of {against}")
        )
    return ok, reasons


def apply_gate(g: Gate, challenger: dict, champion: dict | None, against: str = "champion") -> dict:
    """The gate's verdict as the report and the metadata record it."""
    passed, reasons = check_gate(g, challenger, champion, against)
    return {"passed": passed, "reasons": reasons, **g.__dict__}


def check_drift(
    reg: Registry, champion: str | None, train: list[Example], threshold: float
) -> dict | None:
    """Label drift against the champion's training data (None without a champion that
    recorded its label counts); warns past ``threshold``."""
    old = reg.metadata(champion).get("train", {}).get("label_counts") if champion else None
    if not old:
        return None
    counts = label_counts(train)
    d = drift(old, counts)
    if d > threshold:
        log.warning("label distribution drift %.3f > %.3f against %s", d, threshold, champion)
    return {
        "tvd": d,
        "champion": label_shares(old),
        "challenger": label_shares(counts),
        "threshold": threshold,
        "warning": d > threshold,
    }
