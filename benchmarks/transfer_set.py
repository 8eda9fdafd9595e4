"""Build the distillation transfer set: aspects the shipped extractor finds in the union+new
training sentences that no annotator labelled (training/transfer_set.py); test sentences never.

    python benchmarks/transfer_set.py [--min-confidence 0.5] [--out runs/transfer-set.jsonl] \
        [--only rest14 lap14 twitter mams] [--counts counts.json]

Writes the candidates (derived from the data: kept under runs/, never committed; ``--only``:
those of these training sets' sentences) and their counts per training file to
benchmarks/results/transfer_set/counts.json. A teacher labels them when a student trains
with them: ``absa train ... --config <teacher config> --transfer runs/transfer-set.jsonl``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.extractor import DEFAULT_EXTRACTOR_DIR, Extractor  # noqa: E402
from absa.training.overlap import bracket_free  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.transfer_set import candidates, write_jsonl  # noqa: E402
from absa.training.union import combine  # noqa: E402
from benchmarks.datasets import TRAIN_ONLY, test_files, union_files  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "transfer_set"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-confidence", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "transfer-set.jsonl")
    ap.add_argument("--only", nargs="+", help="write only the candidates of these training sets")
    ap.add_argument("--counts", default="counts.json", help="the counts' file name in " + str(OUT))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    tests = {n: read_examples(p).examples for n, p in test_files().items()}
    banned = {bracket_free(e.text) for ex in tests.values() for e in ex}
    files = [(n, read_examples(p).examples) for n, p in union_files(new=True)]
    train, _ = combine(files, tests, fresh=frozenset(TRAIN_ONLY))
    ext = Extractor.load(DEFAULT_EXTRACTOR_DIR, threads=1)

    def extract(texts: list[str]) -> list[list[tuple[int, int, float]]]:
        return [[(s.start, s.end, s.confidence) for s in f] for f in ext.extract(texts)]

    found = candidates(train, extract, banned, args.min_confidence)
    if args.only:
        keep = tuple(f"{path}:" for name, path in union_files(new=True) if name in args.only)
        write_jsonl(args.out, [c for c in found if c.source.startswith(keep)])
    else:
        write_jsonl(args.out, found)
    by_file: dict[str, dict] = {}
    for name, path in union_files(new=True):
        mine = [c for c in found if c.source.startswith(f"{path}:")]
        terms = Counter(c.aspect.lower() for c in mine).most_common(10)
        sentences = {e.text for e in train if e.source.startswith(f"{path}:")}
        by_file[name] = {"sentences": len(sentences), "candidates": len(mine), "top": terms}
    OUT.mkdir(parents=True, exist_ok=True)
    counts = {
        "extractor": ext.model_id,
        "min_confidence": args.min_confidence,
        "total": len(found),
        "by_file": by_file,
        "command": " ".join(["python benchmarks/transfer_set.py", *sys.argv[1:]]),
    }
    write_record(OUT / args.counts, **counts)
    for name, c in by_file.items():
        print(f"{name}: {c['candidates']} candidates in {c['sentences']} sentences; {c['top'][:5]}")


if __name__ == "__main__":
    main()
