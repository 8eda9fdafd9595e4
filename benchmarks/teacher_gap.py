"""Where a served student and its teacher part, per gold class on each test set: whether the
student's misses are its own or its teacher's too (a gap a better student network could
close, against one only a better teacher can).

    ABSA_TEACHER_CACHE=runs/teacher-cache python benchmarks/teacher_gap.py \\
        [--teacher runs/teacher-union-mpnet] [--artifact model/artifacts/default] \\
        [--sets lap14 twitter]

Writes benchmarks/results/distill/teacher-gap__<name>-<version>.json and a Markdown table.
The student's predictions are the served graph's argmax; the teacher's are its soft targets'
(training/distill.py, through the teacher cache where one is set; on this 2-core CPU about
4 aspects a second beside other work). The record says whether the teacher is the one the
artifact learnt from (its weights' sha256 against the artifact's ``train.teacher``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.artifact import sha256_file  # noqa: E402
from absa.model.calibration import softmax  # noqa: E402
from absa.model.recalibrate import logits  # noqa: E402
from absa.training.distill import teacher_targets  # noqa: E402
from absa.training.provenance import code_version, portable  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from benchmarks.calibration import spans  # noqa: E402
from benchmarks.class_offsets import scores  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.records import write_record  # noqa: E402


def gap(gold: np.ndarray, student: np.ndarray, teacher: np.ndarray, labels: Sequence[str]) -> dict:
    """Per gold class: n, each model's recall (%), and the items one gets right and the other
    not; the two confusion matrices (rows gold, columns predicted) and their agreement (%)."""
    per_class = {}
    for c, lab in enumerate(labels):
        m = gold == c
        per_class[lab] = {
            "n": int(m.sum()),
            "teacher_recall": float(100 * np.mean(teacher[m] == c)) if m.any() else None,
            "student_recall": float(100 * np.mean(student[m] == c)) if m.any() else None,
            "teacher_only": int(np.sum(m & (teacher == c) & (student != c))),
            "student_only": int(np.sum(m & (student == c) & (teacher != c))),
        }
    k = len(labels)
    return {
        "by_class": per_class,
        "student_confusion": np.bincount(gold * k + student, minlength=k * k)
        .reshape(k, k)
        .tolist(),
        "teacher_confusion": np.bincount(gold * k + teacher, minlength=k * k)
        .reshape(k, k)
        .tolist(),
        "agreement": float(100 * np.mean(student == teacher)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teacher", type=Path, default=ROOT / "runs" / "teacher-union-mpnet")
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    ap.add_argument("--sets", nargs="+", choices=DATASETS, default=list(DATASETS))
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the teacher")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    meta = artifact.read_metadata(args.artifact)
    labels = list(meta["labels"])
    out: dict[str, dict] = {}
    print(
        "| test set | class | n | teacher recall | student recall | teacher only | student only |"
        "\n|---|---|---|---|---|---|---|"
    )
    for ds in args.sets:
        examples = read_many([str(paths(ds)["test"])]).examples
        gold = np.array([labels.index(e.label) for e in examples])
        s_probs = softmax(logits(args.artifact, spans(examples)), 1.0)
        t_probs = teacher_targets(args.teacher, examples, labels)
        out[ds] = gap(gold, s_probs.argmax(1), t_probs.argmax(1), labels)
        for who, probs in (("student", s_probs), ("teacher", t_probs)):
            acc, f1 = scores(probs, gold, 0.0)
            out[ds][who] = {"accuracy": acc, "macro_f1": f1}
        for lab, row in out[ds]["by_class"].items():
            print(
                f"| {ds} | {lab} | {row['n']} | {row['teacher_recall']:.1f} | "
                f"{row['student_recall']:.1f} | {row['teacher_only']} | {row['student_only']} |"
            )
    name = f"{meta['name']}-{meta['version']}"
    weights = args.teacher / "weights.safetensors"
    sha = sha256_file(weights) if weights.is_file() else None
    own = sha is not None and sha == meta.get("train", {}).get("teacher", {}).get("sha256")
    if not own:
        print(f"\n(the teacher, {sha and sha[:8]}, is not the one the artifact learnt from)")
    record = {
        "artifact": name,
        "teacher": {"path": portable(args.teacher), "sha256": sha, "the_artifacts_own": own},
        "tests": out,
        "code_version": code_version(),
    }
    results = ROOT / "benchmarks" / "results" / "distill"
    results.mkdir(parents=True, exist_ok=True)
    write_record(results / f"teacher-gap__{name}.json", **record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
