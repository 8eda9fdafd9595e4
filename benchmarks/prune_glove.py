"""Write a GloVe text file with only the words some data sets need, for machines where the
packaged 80 MB table can't travel (e.g. a borrowed accelerator box).

Keeps the ``--top-k`` most frequent words and every word of the given files that GloVe
knows, in GloVe's own (frequency) order, each float32 written exactly, so ``build_vocab``
picks the same vocabulary and ``embedding_matrix`` the same rows as with the full table.
What differs: the random rows of words GloVe lacks are drawn with the pruned table's
standard deviation (printed below).

    python benchmarks/prune_glove.py --out glove-pruned.txt ../shared/data/*/*.xml ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.text import tokenize  # noqa: E402
from absa.training.embeddings import PACKAGED_GLOVE, load_glove  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path, help="data files in any reader format")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--glove", default=PACKAGED_GLOVE)
    ap.add_argument("--top-k", type=int, default=20000)
    args = ap.parse_args()
    words, matrix = load_glove(args.glove)
    need: set[str] = set()
    for f in args.files:
        for e in read_examples(f).examples:
            need.update(t.text.lower() for t in tokenize(e.text))
    keep = [i for i, w in enumerate(words) if i < args.top_k or w in need]
    with args.out.open("w", encoding="utf-8") as out:
        for i in keep:
            out.write(words[i] + " " + " ".join(f"{x:.9g}" for x in matrix[i]) + "\n")
    sub = np.asarray(matrix[keep])
    print(
        f"{args.out}: {len(keep)} of {len(words)} words; std {sub.std():.4f} "
        f"(full table {matrix.std():.4f})"
    )


if __name__ == "__main__":
    main()
