"""Word-substitution copies of the students' training sentences, for the transfer set
(training/substitute.py): the annotated aspects of the four union training sets and the
candidates of a transfer set, in sentences that are neither test nor dev sentences.

    python benchmarks/transfer_subst.py --dev-of runs/distill/<a student of the teacher>.s1 \\
        --transfer runs/transfer-set.jsonl --vectors runs/vectors/teacher-mpnet-g50-p100.txt \\
        --copies 2 --p 0.3 --seed 1 --out runs/transfer-subst.jsonl

``--dev-of``: a run whose dev split (dev.jsonl) the students keep (``--dev-seed``): no copy
of a dev sentence is made, so early stopping stays honest. The copies go to ``--out``
(derived from the data: under runs/, never committed); train with both files:
``absa train ... --transfer runs/transfer-set.jsonl runs/transfer-subst.jsonl``. Counts and
the command go to benchmarks/results/transfer_set/<out name>.json. ``--only`` copies only the
sentences of the named source files (path endings, e.g. ``Laptops_Train.xml.seg``): more
copies of the domains where the student lags its teacher most.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training.embeddings import load_glove  # noqa: E402
from absa.training.overlap import bracket_free  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.rundir import read_dev_examples  # noqa: E402
from absa.training.substitute import (  # noqa: E402
    copies,
    from_sources,
    nearest_words,
    source_file,
)
from absa.training.transfer_set import Candidate, read_jsonl, write_jsonl  # noqa: E402
from benchmarks.datasets import DATASETS, paths, test_files  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "transfer_set"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev-of", type=Path, required=True, help="a run: its dev sentences")
    ap.add_argument("--transfer", nargs="*", default=[], help="transfer sets to copy too")
    ap.add_argument("--vectors", required=True, help="a GloVe-format file: the neighbours")
    ap.add_argument("--copies", type=int, default=2, help="copies per sentence")
    ap.add_argument("--p", type=float, default=0.3, help="each word's chance to be replaced")
    ap.add_argument("--k", type=int, default=8, help="neighbours per word")
    ap.add_argument("--min-cosine", type=float, default=0.5)
    ap.add_argument("--skip-top", type=int, default=30, help="the most frequent words stay")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--only", nargs="+", help="copy only sentences from source files with these endings"
    )
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "transfer-subst.jsonl")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    banned = {
        bracket_free(e.text) for p in test_files().values() for e in read_examples(p).examples
    }
    dev = {bracket_free(e.text) for e in read_dev_examples(args.dev_of)}
    found: list[Candidate] = []
    for name in DATASETS:
        for e in read_examples(paths(name)["train"]).examples:
            found.append(Candidate(e.text, e.start, e.end, 1.0, e.source))
    found += read_jsonl(args.transfer)
    if args.only:
        found = from_sources(found, args.only)
        if not found:
            raise SystemExit(f"no aspect comes from a file ending in {' or '.join(args.only)}")
    keep = [c for c in found if bracket_free(c.text) not in banned | dev]  # for the counts
    words, vectors = load_glove(args.vectors)
    near = nearest_words(words, vectors, k=args.k, min_cosine=args.min_cosine)
    for w in words[: args.skip_top]:
        near.pop(w, None)
    made = copies(found, near, banned | dev, n=args.copies, p=args.p, seed=args.seed)
    write_jsonl(args.out, made)

    OUT.mkdir(parents=True, exist_ok=True)
    counts = {
        "aspects_copied": len(keep),
        "sentences_copied": len({c.text for c in keep}),
        "dropped_test_or_dev": len(found) - len(keep),
        "copies": len(made),
        "copy_sentences": len({c.text for c in made}),
        "by_source": dict(Counter(source_file(c.source)[0] for c in made)),
        "vectors": {"path": args.vectors, "sha256": sha256_file(Path(args.vectors))},
        "dev_of": str(args.dev_of),
        "only": args.only,
        "out_sha256": sha256_file(args.out),
        "command": " ".join(["python benchmarks/transfer_subst.py", *sys.argv[1:]]),
    }
    write_record(OUT / f"{args.out.stem}.json", **counts)
    logging.info("%d copies of %d aspects in %d sentences -> %s", len(made), len(keep),
                 counts["sentences_copied"], args.out)  # fmt: skip


if __name__ == "__main__":
    main()
