"""Prior correction of a served artifact: per-class log-offsets fitted on dev, scored on test.

    python benchmarks/class_offsets.py model/artifacts/default --run RUN --name offsets-1.7.0

Adds a constant ``b`` to the log of the served probabilities (``argmax(log p + b)``,
``b[neutral] = 0``) and picks ``b`` on a grid to maximise macro-F1 on the run's dev split,
two ways: the mean over dev's sources of their macro-F1 (each training file counts once)
and dev pooled. The four test sets are then scored with each ``b`` and without one. It
asks whether the shipped model's class balance, not its ranking, is what holds a test
number down: an offset that dev picks and the test sets agree with would be a free gain.
Writes benchmarks/results/calibration/<name>.json.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.rundir import read_dev_examples  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.dev_sources import by_source  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("class_offsets")
GRID = np.round(np.arange(-0.6, 0.601, 0.05), 2)


def scores(probs: np.ndarray, gold: np.ndarray, offset: np.ndarray) -> tuple[float, float]:
    """Accuracy and macro-F1 (%) of ``argmax(log probs + offset)``."""
    pred = (np.log(np.clip(probs, 1e-12, None)) + offset).argmax(1)
    rep = classification_report(
        gold.tolist(), pred.tolist(), [str(k) for k in range(probs.shape[1])]
    )
    return 100 * rep["accuracy"], 100 * rep["macro_f1"]


def mean_f1(
    probs: np.ndarray,
    gold: np.ndarray,
    groups: np.ndarray,
    offset: np.ndarray,
    scale: np.ndarray | None = None,
) -> float:
    """The mean over ``groups`` (one group: pooled) of their macro-F1 (%) with ``offset``,
    or with ``scale[i] * offset`` on row i where a per-row ``scale`` is given."""
    rows = np.ones(len(gold)) if scale is None else np.asarray(scale, np.float64)
    parts = [groups == n for n in sorted(set(groups.tolist()))]
    return float(np.mean([scores(probs[m], gold[m], rows[m, None] * offset)[1] for m in parts]))


def best_offset(
    probs: np.ndarray,
    gold: np.ndarray,
    groups: np.ndarray,
    fixed: int,
    grid: Sequence[float],
    scale: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """The grid offset (``offset[fixed]`` = 0) with the highest ``mean_f1`` (``scale``: as
    there), and that F1; the first on ties, so zero wins a tie only where it comes first."""
    free = [k for k in range(probs.shape[1]) if k != fixed]
    best, best_f1 = np.zeros(probs.shape[1]), -1.0
    for values in itertools.product(grid, repeat=len(free)):
        offset = np.zeros(probs.shape[1])
        offset[free] = values
        f1 = mean_f1(probs, gold, groups, offset, scale)
        if f1 > best_f1 + 1e-9:
            best, best_f1 = offset, f1
    return best, best_f1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifact", type=Path, help="a served artifact (or a run)")
    ap.add_argument("--run", type=Path, required=True, help="the run whose dev.jsonl to read")
    ap.add_argument("--name", required=True, help="the result file's name (no .json)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "calibration")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    dev = read_dev_examples(args.run)
    probs, labels = predict_examples(args.artifact, dev)
    gold = np.array([labels.index(e.label) for e in dev])
    files = {d: paths(d)["train"] for d in DATASETS}
    where = {id(e): name for name, group in by_source(dev, files).items() for e in group}
    groups = np.array([where[id(e)] for e in dev])
    fixed = labels.index("neutral") if "neutral" in labels else 0
    fits = {
        "source_mean": best_offset(probs, gold, groups, fixed, GRID),
        "pooled": best_offset(probs, gold, np.zeros(len(dev), dtype=int), fixed, GRID),
    }
    tests = {}
    for name in DATASETS:
        examples = read_examples(str(paths(name)["test"])).examples
        p, _ = predict_examples(args.artifact, examples)
        tests[name] = (p, np.array([labels.index(e.label) for e in examples]))
    zero = np.zeros(len(labels))
    result = {
        "artifact": str(args.artifact),
        "run": str(args.run),
        "labels": labels,
        "grid": [float(GRID[0]), float(GRID[-1]), 0.05],
        "dev_without": {"source_mean": mean_f1(probs, gold, groups, zero),
                        "pooled": scores(probs, gold, zero)[1]},
        "fits": {},
        "code_version": code_version(),
    }  # fmt: skip
    without = {n: scores(*tests[n], zero) for n in tests}
    log.info("without an offset: %s", without)
    for how, (offset, dev_f1) in fits.items():
        test = {n: {"without": without[n], "with": scores(*tests[n], offset)} for n in tests}
        result["fits"][how] = {"offset": offset.tolist(), "dev_macro_f1": dev_f1, "test": test}
        log.info("%s: offset %s, dev F1 %.2f", how, offset.tolist(), dev_f1)
        for n, t in test.items():
            log.info("  %-8s %.2f / %.2f -> %.2f / %.2f", n, *t["without"], *t["with"])
    args.out.mkdir(parents=True, exist_ok=True)
    write_record(args.out / f"{args.name}.json", **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
