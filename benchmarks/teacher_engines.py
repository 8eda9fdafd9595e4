"""A teacher run's scoring speed on the CPU through torch and through onnxruntime
(training/onnx_teacher.py, ``teacher_score.py --engine onnx``), round by round on the same
aspects, and the largest difference between the two engines' probabilities.

    python benchmarks/teacher_engines.py --teacher runs/teacher-union-mpnet \
        --data runs/oof/fold-b.jsonl --limit 400 --threads 1 --rounds 2

The export (fp32, no temperature, parity-checked) goes to a temporary directory and is not
timed. Prints a line per round and engine, and a JSON line of the whole.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.onnx_teacher import onnx_scorer  # noqa: E402
from absa.training.readers import read_many  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teacher", type=Path, required=True, help="a teacher run directory")
    ap.add_argument("--data", nargs="+", required=True, help="labelled files to score")
    ap.add_argument("--limit", type=int, default=400, help="the first N aspects")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    examples = read_many(args.data).examples[: args.limit]
    speed: dict[str, list[float]] = {"torch": [], "onnxruntime": []}
    with tempfile.TemporaryDirectory() as tmp:
        onnx = onnx_scorer(args.teacher, args.threads, Path(tmp) / "artifact")
        for r in range(args.rounds):
            t = time.perf_counter()
            want, _ = predict_examples(args.teacher, examples, device="cpu")
            speed["torch"].append(len(examples) / (time.perf_counter() - t))
            t = time.perf_counter()
            got, _ = onnx(examples)
            speed["onnxruntime"].append(len(examples) / (time.perf_counter() - t))
            for engine, s in speed.items():
                sys.stdout.write(f"round {r + 1} {engine}: {s[-1]:.2f} aspects/s\n")
    record = {
        "teacher": str(args.teacher),
        "aspects": len(examples),
        "threads": args.threads,
        "aspects_per_s": {k: statistics.mean(v) for k, v in speed.items()},
        "max_abs_diff": float(np.abs(got - want).max()) if len(examples) else 0.0,
    }
    sys.stdout.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
