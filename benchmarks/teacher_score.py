"""Score transfer sets with a teacher ahead of its students, into the teacher cache
(``ABSA_TEACHER_CACHE``, training/teacher_cache.py): resumable, 1,000 aspects per shard.

    ABSA_TEACHER_CACHE=runs/teacher-cache python benchmarks/teacher_score.py \\
        --teacher runs/teacher-union-mpnet --transfer runs/transfer-subst1.jsonl --threads 2 \\
        [--data <labelled training files>]

``--data``: labelled files (any format ``absa train`` reads) whose aspects are scored too,
as a student's soft targets: the training sets a student of this teacher will read.

A student that trains with these files later finds every aspect's probabilities there, so
scoring can run while the machine does other work, and a killed run loses one shard at most.

``--engine onnx``: score through onnxruntime instead of torch, on the CPU (training/
onnx_teacher.py: the run exported once, parity-checked against torch, into
``<cache>/.onnx/<teacher key>``, where it is kept, so a scoring cut off goes on without
exporting again (an mpnet teacher: 430 MB, and 13-18 minutes here with its parity check;
delete ``.onnx`` to free the disk); about 1.8 times torch's aspects a second for an mpnet
teacher on this 2-core CPU). The scores go into the cache under the teacher's own key, as
torch's would.

``--export DIR``: then write the teacher's scores as a directory that stands in for the
teacher where only those are needed (training/teacher_scores.py): a few MB in place of an
mpnet teacher's 451, for a teacher trained on a borrowed machine.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from absa.settings import Settings  # noqa: E402
from absa.training.distill import (  # noqa: E402
    label_transfer,
    teacher_targets,
    transfer_placeholders,
)
from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from absa.training.records import Example  # noqa: E402
from absa.training.teacher_cache import cached_scores, teacher_key  # noqa: E402
from absa.training.teacher_scores import export_scores, is_scores, read_record  # noqa: E402
from absa.training.transfer_set import read_jsonl  # noqa: E402

ONNX = ".onnx"  # in the cache: each teacher's onnxruntime export, under the teacher's key


def prefill(
    args: argparse.Namespace, cache: Path, labelled: list[Example], transfer: list[Example]
) -> None:
    """Score every aspect asked for that the cache lacks through onnxruntime, so that what
    follows finds them all there. The teacher is exported only if one is missing."""
    from absa.training.onnx_teacher import onnx_scorer

    keep = cache / ONNX / teacher_key(args.teacher)  # kept for the next call: made once
    keep.parent.mkdir(parents=True, exist_ok=True)
    score = onnx_scorer(args.teacher, args.threads, keep)
    cached_scores(cache, args.teacher, labelled + transfer, score)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teacher", type=Path, required=True)
    ap.add_argument("--transfer", nargs="+", default=[])
    ap.add_argument("--data", nargs="+", default=[], help="labelled files to score too")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--engine",
        choices=("torch", "onnx"),
        default="torch",
        help="onnx: score a teacher run through onnxruntime on the CPU (faster there)",
    )
    ap.add_argument(
        "--export", type=Path, metavar="DIR", help="then write the teacher's scores to DIR"
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    cache = Settings().teacher_cache_dir()
    if cache is None:
        logging.error("ABSA_TEACHER_CACHE is off: nothing would be kept")
        return 2
    if not args.transfer and not args.data:
        ap.error("nothing to score: give --transfer or --data")
    if args.export and args.export.exists() and not is_scores(args.export):  # before the hours
        ap.error(f"--export {args.export}: exists and is not a scores export; not replaced")
    torch.set_num_threads(args.threads)
    if is_scores(args.teacher):  # a teacher's scores: they answer for what they hold
        labels = read_record(args.teacher)["labels"]
    else:
        _, labels = predict_examples(args.teacher, [])
    labelled = read_many(args.data).examples if args.data else []
    found = read_jsonl(args.transfer)
    if args.engine == "onnx" and not is_scores(args.teacher):
        prefill(args, cache, labelled, transfer_placeholders(found, labels))
    if args.data:
        probs = teacher_targets(args.teacher, labelled, labels)
        logging.info("%d labelled aspects scored, %d kept in the cache", len(labelled), len(probs))
    if args.transfer:
        examples, _ = label_transfer([args.teacher], found, labels)
        logging.info("teacher labels: %s", dict(Counter(e.label for e in examples)))
    if args.export:
        record = export_scores(args.teacher, cache, args.export)
        logging.info("%s: %d aspects' scores of %s", args.export, record["aspects"], args.teacher)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
