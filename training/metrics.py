"""Classification metrics (numpy only, shared by run and artifact evaluation)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def classification_report(
    y_true: Sequence[int], y_pred: Sequence[int], labels: Sequence[str]
) -> dict:
    """Accuracy, macro-F1, per-class precision/recall/F1 and the confusion matrix.

    Fractions in 0..1. ``confusion[i][j]`` counts gold label i predicted as j. Macro-F1 is
    the mean F1 of the labels the data holds (support > 0): a label it lacks is listed (F1
    0, support 0) but not averaged, so two models scored on one file are averaged over the
    same labels (over those predicted too, one stray answer in a label the file lacks took a
    third off the score, and a retraining gate turned down the better model)."""
    t = np.asarray(y_true, dtype=np.int64)
    p = np.asarray(y_pred, dtype=np.int64)
    if t.shape != p.shape:
        raise ValueError("y_true and y_pred differ in length")
    k = len(labels)
    conf = np.zeros((k, k), dtype=np.int64)
    np.add.at(conf, (t, p), 1)
    per_class = {}
    f1s = []  # of the labels the data holds
    for i, name in enumerate(labels):
        tp = conf[i, i]
        prec = tp / conf[:, i].sum() if conf[:, i].sum() else 0.0
        rec = tp / conf[i, :].sum() if conf[i, :].sum() else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per_class[name] = {
            "precision": float(prec),
            "recall": float(rec),
            "f1": float(f1),
            "support": int(conf[i, :].sum()),
        }
        if conf[i, :].sum():
            f1s.append(f1)
    n = int(len(t))
    return {
        "n": n,
        "accuracy": float((t == p).mean()) if n else 0.0,
        "macro_f1": float(np.mean(f1s)) if f1s else 0.0,
        "per_class": per_class,
        "confusion": conf.tolist(),
        "labels": list(labels),
    }


def format_report(report: dict) -> str:
    ece = f"  ECE({report['ece_bins']} bins)={report['ece'] * 100:.2f}" if "ece" in report else ""
    if report.get("calibration"):
        ece += f" (calibration: {report['calibration']})"
    lines = [
        f"n={report['n']}  accuracy={report['accuracy'] * 100:.2f}  "
        f"macro-F1={report['macro_f1'] * 100:.2f}{ece}",
        f"{'label':<10} {'prec':>6} {'rec':>6} {'f1':>6} {'support':>8}",
    ]
    for name, c in report["per_class"].items():
        lines.append(
            f"{name:<10} {c['precision'] * 100:6.2f} {c['recall'] * 100:6.2f} "
            f"{c['f1'] * 100:6.2f} {c['support']:8d}"
        )
    labels = report["labels"]
    lines.append("confusion (rows gold, columns predicted): " + " ".join(labels))
    for name, row in zip(labels, report["confusion"], strict=True):
        lines.append(f"{name:<10} " + " ".join(f"{v:6d}" for v in row))
    for name, part in (report.get("by_group") or {}).items():  # each file of several
        lines.append(
            f"{name}: n={part['n']}  accuracy={part['accuracy'] * 100:.2f}  "
            f"macro-F1={part['macro_f1'] * 100:.2f}"
        )
    return "\n".join(lines)
