"""Two calibration kinds of benchmarks/calibration_dev.py compared over many artifacts: per
artifact the dev ECE out of fold (pooled and on one part) and each test set's, then the means
and how often the second kind is lower.

    python benchmarks/calibration_compare.py benchmarks/results/calibration/dev-oof/*.json \\
        benchmarks/results/calibration/dev-oof__absa-default-1.9.1.json

The kinds default to the shipped top map and the laptop temperature before it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

SHIPPED = "top map (shipped: block centres)"
LAPTOP_T = "a temperature of its own for laptop-like sentences, then the top map"
TESTS = ("rest14", "lap14", "twitter", "mams")


def columns(record: dict, kind: str, part: str) -> list[float]:
    """ECE % of one kind: dev pooled and dev's ``part`` (means over the fold draws), each test
    set's, and the worst test set's."""
    oof, tests = record["ece_out_of_fold"][kind], record["ece_tests"][kind]
    cells = [np.mean(oof["all"]), np.mean(oof[part])] + [tests[t] for t in TESTS]
    return [100 * float(c) for c in [*cells, max(tests[t] for t in TESTS)]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path, help="calibration_dev.py result files")
    ap.add_argument("--kinds", nargs=2, default=[SHIPPED, LAPTOP_T], metavar=("A", "B"))
    ap.add_argument("--part", default="lap14", help="the dev part shown beside pooled dev")
    args = ap.parse_args()
    a, b = args.kinds
    names = ["dev", f"dev {args.part}", *TESTS, "worst test"]
    print("| artifact (ECE %, A -> B) | " + " | ".join(names) + " |")
    print("|---" * (1 + len(names)) + "|")
    pairs = []
    for path in args.results:
        record = json.loads(path.read_text())
        x, y = columns(record, a, args.part), columns(record, b, args.part)
        pairs.append((x, y))
        cells = [f"{p:.2f} -> {q:.2f}" for p, q in zip(x, y, strict=True)]
        print(f"| {path.stem} | " + " | ".join(cells) + " |")
    xs, ys = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    lower = (ys < xs).sum(0)
    cells = [
        f"{p:.2f} -> {q:.2f} ({k} of {len(pairs)} lower)"
        for p, q, k in zip(xs.mean(0), ys.mean(0), lower, strict=True)
    ]
    print("| **mean** | " + " | ".join(cells) + " |")
    print(f"\nA: {a}\nB: {b}")


if __name__ == "__main__":
    main()
