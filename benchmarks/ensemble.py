"""Accuracy / macro-F1 of sentiment artifacts alone and of their average (the mean of the
served probabilities) on the four test sets: what an ensemble of students would buy.

    python benchmarks/ensemble.py --name subst1-s1-s2 \
        --artifacts runs/distill/A.s1.artifact runs/distill/A.s2.artifact

Writes benchmarks/results/ensemble/<name>.json and prints a table. An ensemble
of n students costs n times the compute per answer: it is a measure of how far seeds
disagree, not a shipping option at the 1 ms budget.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.runtime import Runtime  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.provenance import code_version, file_info  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ensemble"


def scores(probs: np.ndarray, gold: list[str], labels: list[str]) -> dict:
    rep = classification_report([labels.index(g) for g in gold], probs.argmax(1), labels)
    return {"accuracy": 100 * rep["accuracy"], "macro_f1": 100 * rep["macro_f1"]}


def cell(s: dict) -> str:
    return f"{s['accuracy']:.2f} / {s['macro_f1']:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--artifacts", nargs="+", type=Path, required=True)
    args = ap.parse_args()
    runtimes = [Runtime.load(a, device="cpu", threads=1) for a in args.artifacts]
    labels = list(runtimes[0].labels)
    if any(list(rt.labels) != labels for rt in runtimes):
        ap.error("the artifacts' labels differ")
    out: dict = {"artifacts": [str(a) for a in args.artifacts], "test": {}}
    for name in DATASETS:
        test = paths(name)["test"]
        examples = read_many([str(test)]).examples
        spans = [(e.text, e.start, e.end) for e in examples]
        gold = [e.label for e in examples]
        probs = [rt.predict_proba(spans) for rt in runtimes]
        out["test"][name] = {
            "file": file_info([str(test)])[0],
            "members": [scores(p, gold, labels) for p in probs],
            "mean": scores(np.mean(probs, axis=0), gold, labels),
        }
        cells = [cell(s) for s in (*out["test"][name]["members"], out["test"][name]["mean"])]
        sys.stdout.write(f"| {name} | {' | '.join(cells)} |\n")
    out["code_version"] = code_version()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.name}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
