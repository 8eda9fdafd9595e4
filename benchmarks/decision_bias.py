"""Issue #11: does a per-class bias on the served logits, chosen on dev for macro-F1, lift the
test sets' macro-F1 (Lap14's neutral aspects, the one number 1.8.0 misses)? Two ways to pick
it on dev, a grid over the negative and neutral offsets (positive's fixed at 0): dev's
macro-F1 as a whole, and the mean of its parts' (Rest14, Lap14, Twitter, MAMS: dev is heavy
in MAMS). The bias is added to the logits after the temperature; argmax decides. Test sets
only measure.

    python benchmarks/decision_bias.py --artifact model/artifacts/default   # ~30 s, 1 thread

One result file, benchmarks/results/calibration/bias__<name>-<version>.json, and a table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.recalibrate import logits  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from benchmarks.calibration import RESULTS, rebuild_dev, spans, test_files  # noqa: E402
from benchmarks.calibration_options import domain_of  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

TESTS = ("rest14", "lap14", "twitter", "mams")
GRID = np.round(np.arange(-1.5, 1.5001, 0.05), 2)


def scores(
    z: np.ndarray, y: np.ndarray, bias: np.ndarray, labels: list[str]
) -> tuple[float, float]:
    """Accuracy and macro-F1 (%) of argmax(z + bias)."""
    rep = classification_report(y, (z + bias).argmax(1), labels)
    return 100 * rep["accuracy"], 100 * rep["macro_f1"]


def pick(objective) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The grid's bias with the highest objective (the first of ties: the grid's order)."""
    best, arg = -1.0, np.zeros(3)
    for b0 in GRID:
        for b1 in GRID:
            b = np.array([b0, b1, 0.0])
            f = objective(b)
            if f > best + 1e-9:
                best, arg = f, b
    return arg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    args = ap.parse_args()
    meta = artifact.read_metadata(args.artifact)
    labels = list(meta["labels"])
    dev = rebuild_dev(meta)
    zd = logits(args.artifact, spans(dev))
    yd = np.array([labels.index(e.label) for e in dev])
    dom = np.array([domain_of(e.source) or "other" for e in dev])
    parts = [d for d in TESTS if (dom == d).any()]
    biases = {
        "none": np.zeros(3),
        "dev": pick(lambda b: scores(zd, yd, b, labels)[1]),
        "dev parts, equal": pick(
            lambda b: np.mean([scores(zd[dom == d], yd[dom == d], b, labels)[1] for d in parts])
        ),
    }
    sets = {"dev": (zd, yd)}
    for name in TESTS:
        ex = read_many([str(f) for f in test_files(name)]).examples
        sets[name] = (
            logits(args.artifact, spans(ex)),
            np.array([labels.index(e.label) for e in ex]),
        )
    result = {
        "artifact": f"{meta['name']}-{meta['version']}",
        "labels": labels,
        "grid": [float(GRID[0]), float(GRID[-1]), 0.05],
        "dev_parts": {d: int((dom == d).sum()) for d in parts},
        "picks": {
            k: {"bias": b.tolist(), **{s: scores(*sets[s], b, labels) for s in sets}}
            for k, b in biases.items()
        },
    }
    out = RESULTS / f"bias__{result['artifact']}.json"
    write_record(out, **result)
    head = "| picked on | bias (neg, neu, pos) | " + " | ".join(sets) + " |"
    rows = [head, "|" + "---|" * (len(sets) + 2)]
    for k, r in result["picks"].items():
        cells = " | ".join(f"{r[s][0]:.2f} / {r[s][1]:.2f}" for s in sets)
        rows.append(f"| {k} | {', '.join(f'{x:+.2f}' for x in r['bias'])} | {cells} |")
    sys.stdout.write("\n".join(rows) + f"\n\n{out.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
