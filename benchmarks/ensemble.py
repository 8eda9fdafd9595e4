"""Accuracy / macro-F1 of sentiment models alone and of their average (the mean of their
probabilities) on the four test sets: what an ensemble of students, or of teachers, buys.

    python benchmarks/ensemble.py --name subst1-s1-s2 \
        --artifacts runs/distill/A.s1.artifact runs/distill/A.s2.artifact
    ABSA_TEACHER_CACHE=runs/teacher-cache python benchmarks/ensemble.py --name teachers \
        --runs runs/teacher-union-mpnet runs/teacher-union-more-mpnet --threads 2

``--artifacts``: served probabilities (onnxruntime). ``--runs``: training runs (e.g. the
teachers of ``train.teachers_more``), scored as a student's soft targets are, through the
teacher cache, and on the first run's dev split too (the runs should share it).
Writes benchmarks/results/ensemble/<name>.json and prints a table. An ensemble
of n students costs n times the compute per answer: it is a measure of how far seeds
disagree, not a shipping option at the 1 ms budget; an ensemble of teachers costs only
its students' training.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.runtime import Runtime  # noqa: E402
from absa.training.distill import teacher_targets  # noqa: E402
from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.provenance import code_version, file_info  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from absa.training.rundir import read_dev_examples  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ensemble"
Member = Callable[[list], np.ndarray]


def scores(probs: np.ndarray, gold: list[str], labels: list[str]) -> dict:
    rep = classification_report([labels.index(g) for g in gold], probs.argmax(1), labels)
    return {"accuracy": 100 * rep["accuracy"], "macro_f1": 100 * rep["macro_f1"]}


def cell(s: dict) -> str:
    return f"{s['accuracy']:.2f} / {s['macro_f1']:.2f}"


def members(artifacts: list[Path], runs: list[Path]) -> tuple[list[Member], list[str]]:
    """A probability function per model (examples -> (N, C), columns in ``labels``)."""
    runtimes = [Runtime.load(a, device="cpu", threads=1) for a in artifacts]
    labels = list(runtimes[0].labels) if runtimes else predict_examples(runs[0], [])[1]
    if any(sorted(rt.labels) != sorted(labels) for rt in runtimes):
        raise SystemExit("the models' labels differ")
    order = [[list(rt.labels).index(lab) for lab in labels] for rt in runtimes]
    out: list[Member] = [
        lambda ex, rt=rt, o=o: rt.predict_proba([(e.text, e.start, e.end) for e in ex])[:, o]
        for rt, o in zip(runtimes, order, strict=True)
    ]
    out += [lambda ex, r=r: teacher_targets(r, ex, labels) for r in runs]
    return out, labels


def row(models: list[Member], examples: list, labels: list[str]) -> dict:
    gold = [e.label for e in examples]
    probs = [m(examples) for m in models]
    return {
        "members": [scores(p, gold, labels) for p in probs],
        "mean": scores(np.mean(probs, axis=0), gold, labels),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--artifacts", nargs="+", type=Path, default=[])
    ap.add_argument("--runs", nargs="+", type=Path, default=[])
    ap.add_argument("--threads", type=int, default=1, help="torch threads for --runs")
    args = ap.parse_args()
    if not args.artifacts and not args.runs:
        ap.error("give --artifacts, --runs or both")
    torch.set_num_threads(args.threads)
    models, labels = members(args.artifacts, args.runs)
    out: dict = {"artifacts": [str(a) for a in args.artifacts], "test": {}}
    if args.runs:
        out["runs"] = [str(r) for r in args.runs]
        out["dev"] = row(models, read_dev_examples(args.runs[0]), labels)
    for name in DATASETS:
        test = paths(name)["test"]
        res = row(models, read_many([str(test)]).examples, labels)
        out["test"][name] = {"file": file_info([str(test)])[0], **res}
        cells = [cell(s) for s in (*res["members"], res["mean"])]
        sys.stdout.write(f"| {name} | {' | '.join(cells)} |\n")
    out["code_version"] = code_version()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.name}.json"
    write_record(path, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
