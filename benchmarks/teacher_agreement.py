"""What teachers' soft targets say beyond the gold label, per training file: how often a
teacher's most probable class is the label, the mean probability it gives the label, and
its mean top probability.

    ABSA_TEACHER_CACHE=runs/teacher-cache python benchmarks/teacher_agreement.py \\
        --teachers runs/teacher-union-mpnet runs/teacher-union-more-mpnet \\
        --data <training files> --name teachers-mpnet --threads 1

Each file's aspects are scored as a student's soft targets are (``training/distill.py``:
the teacher's served probabilities, through the teacher cache when it is on). A teacher
that trained on a file agrees with its labels more, and its targets there carry less
than the label does not already say. Writes benchmarks/results/distill/agreement-<name>.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from absa.training.distill import teacher_targets  # noqa: E402
from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.provenance import code_version, file_info, portable  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402


def agreement(probs: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Agreement with the labels (%), mean probability of the label, mean top probability."""
    rows = np.arange(len(gold))
    return {
        "agree_pct": round(float(100 * (probs.argmax(1) == gold).mean()), 2),
        "p_gold": round(float(probs[rows, gold].mean()), 4),
        "p_max": round(float(probs.max(1).mean()), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teachers", nargs="+", type=Path, required=True)
    ap.add_argument("--data", nargs="+", type=Path, required=True, help="labelled files")
    ap.add_argument("--name", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "distill")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    _, labels = predict_examples(args.teachers[0], [])
    result: dict = {"teachers": [str(t) for t in args.teachers], "files": {}}
    for path in args.data:
        examples = read_examples(str(path)).examples
        gold = np.array([labels.index(e.label) for e in examples])
        per = {str(t): agreement(teacher_targets(t, examples, labels), gold) for t in args.teachers}
        result["files"][portable(path)] = {"file": file_info([path])[0], "n": len(gold), **per}
        for t, a in per.items():
            sys.stdout.write(
                f"{path.name:32s} {Path(t).name:28s} agree {a['agree_pct']:6.2f} %  "
                f"p(gold) {a['p_gold']:.3f}  p(max) {a['p_max']:.3f}\n"
            )
    result["code_version"] = code_version()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"agreement-{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
