"""Out-of-fold teachers' data: a teacher run's training examples split in two folds by
sentence, so that each fold can be scored by a teacher that never saw it.

    python benchmarks/oof_folds.py --teacher-run runs/teacher-union-mpnet --out runs/oof \\
        --data <the four training files> --exclude <the four test files>

Rebuilds what the teacher trained on (the files, less the sentences of the test files and of
its dev split, read from its dev.jsonl), checks the count against its run.json, and writes
``fold-a.jsonl`` and ``fold-b.jsonl`` (whole sentences, texts compared as
``drop_overlap`` compares them, so a sentence two files share lands in one fold) and
``dev.jsonl`` (the teacher's dev, which the fold teachers select their epoch on). Then:

    absa train --train runs/oof/fold-a.jsonl --dev runs/oof/dev.jsonl \\
        --config benchmarks/configs/teacher-union-mpnet.json --seed 1 --out runs/teacher-oof-a
    (the same for b), and a student with ``"teacher_folds": [["runs/oof/fold-a.jsonl",
    "runs/teacher-oof-b"], ["runs/oof/fold-b.jsonl", "runs/teacher-oof-a"]]``.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.training.overlap import bracket_free, drop_overlap  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from absa.training.records import Example  # noqa: E402
from absa.training.rundir import read_dev_examples, read_info, write_examples  # noqa: E402

log = logging.getLogger("oof_folds")


def teacher_train(
    examples: Sequence[Example], tests: Sequence[Example], dev: Sequence[Example]
) -> list[Example]:
    """``examples`` less the test sets' sentences (as ``absa train --exclude`` drops them)
    and less the dev split's sentences (held out of them by exact text)."""
    kept, _ = drop_overlap(examples, tests)
    dev_texts = {e.text for e in dev}
    return [e for e in kept if e.text not in dev_texts]


def split_folds(examples: Sequence[Example], seed: int) -> tuple[list[Example], list[Example]]:
    """Two folds of whole sentences (by ``bracket_free`` text: MAMS's and Rest14's copies of
    one sentence, "(" in one, "-LRB-" in the other, go to one fold, or a fold's teacher
    would score out of fold a sentence it trained on), shuffled with ``seed``, each sentence
    to the fold that holds fewer examples so far; each fold in the given order."""
    keys = [bracket_free(e.text) for e in examples]
    sizes = Counter(keys)  # examples per sentence, in first-seen order
    order = list(sizes)
    random.Random(seed).shuffle(order)
    held, fold_of = [0, 0], {}
    for k in order:
        f = 0 if held[0] <= held[1] else 1
        fold_of[k] = f
        held[f] += sizes[k]
    a = [e for e, k in zip(examples, keys, strict=True) if fold_of[k] == 0]
    b = [e for e, k in zip(examples, keys, strict=True) if fold_of[k] == 1]
    return a, b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teacher-run", type=Path, required=True)
    ap.add_argument("--data", nargs="+", required=True, help="the files the teacher trained on")
    ap.add_argument("--exclude", nargs="*", default=[], help="the test files it excluded")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev = read_dev_examples(args.teacher_run)
    tests = read_many(args.exclude).examples if args.exclude else []
    train = teacher_train(read_many(args.data).examples, tests, dev)
    recorded = read_info(args.teacher_run)["n_train"]
    if len(train) != recorded:
        ap.error(f"rebuilt {len(train)} training examples, {args.teacher_run} recorded {recorded}")
    a, b = split_folds(train, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, part in (("fold-a", a), ("fold-b", b), ("dev", dev)):
        write_examples(args.out / f"{name}.jsonl", part)
    log.info("%s: fold-a %d, fold-b %d, dev %d examples", args.out, len(a), len(b), len(dev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
