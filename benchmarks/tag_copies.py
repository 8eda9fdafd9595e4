"""Word-substitution copies of the extractor's training sentences, for a tagger teacher to
tag (``absa train --task extract --unlabelled``; training/substitute.py ``sentence_copies``):
the fast tagger learns the teacher's tags on many more sentences than the annotators wrote,
and on neighbours of the terms it saw (GloVe's nearest words replace any word but the most
frequent ones, each with probability ``p``).

    python benchmarks/tag_copies.py --split-of runs/bench-extract/union-minilm-crf-r__s1 \\
        --copies 2 --p 0.3 --seed 1 --out runs/tag-copies2.jsonl

Only training sentences are copied: not a test sentence (the three test files), nor one of
the dev or held-out aspect-free sentences of ``--split-of`` (a run of the same training
files and seed as the student, so the student holds out the same ones). The copies go to
``--out`` (under runs/, never committed); counts, the command and the file's sha256 to
benchmarks/results/extraction/copies-<out name>.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training.embeddings import PACKAGED_GLOVE, load_glove  # noqa: E402
from absa.training.overlap import bracket_free  # noqa: E402
from absa.training.sentences import read_sentences  # noqa: E402
from absa.training.substitute import nearest_words, sentence_copies  # noqa: E402
from absa.training.tag_select import source_name  # noqa: E402
from benchmarks.extraction import OUT, TESTS, UNION, code_version, data_dir  # noqa: E402

log = logging.getLogger("tag_copies")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split-of", type=Path, required=True, help="a tagger run: its dev split")
    ap.add_argument("--train", nargs="+", default=list(UNION), help="files under the data dir")
    ap.add_argument("--copies", type=int, default=2)
    ap.add_argument("--p", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vectors", default=PACKAGED_GLOVE, help="neighbours: a GloVe table")
    ap.add_argument("--vocab", type=int, default=20000, help="neighbours among the first N")
    ap.add_argument("--skip-top", type=int, default=150,
                    help="GloVe's N most frequent words (function words) stay")  # fmt: skip
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--record", type=Path, default=OUT, help="where the counts' JSON goes")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    d = data_dir()
    held = [args.split_of / "dev.jsonl", args.split_of / "heldout_empty.jsonl"]
    if not held[0].is_file():
        ap.error(f"--split-of: no {held[0]}")
    banned = {bracket_free(s.text) for s in read_sentences([str(f) for f in held if f.is_file()])}
    tests = read_sentences([str(d / f) for f in TESTS.values()])
    banned |= {bracket_free(s.text) for s in tests}
    sentences = read_sentences([str(d / f) for f in args.train])
    words, vectors = load_glove(args.vectors)
    near = nearest_words(words, vectors, vocab=args.vocab)
    for w in words[: args.skip_top]:  # "the", "was", "but": a copy stays a sentence
        near.pop(w, None)
    texts = [s.text for s in sentences]
    made = sentence_copies(texts, near, banned, args.copies, args.p, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for text, k in made:
            rec = {"text": text, "spans": [], "source": f"copy:{sentences[k].source}"}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    by_source = Counter(source_name(sentences[k].source) for _, k in made)
    record = {
        "out": str(args.out),
        "sha256": sha256_file(args.out),
        "copies": len(made),
        "by_source": dict(sorted(by_source.items())),
        "sentences_read": len(sentences),
        "banned_texts": len(banned),
        "args": {k: str(v) for k, v in vars(args).items()},
        "command": "python benchmarks/tag_copies.py " + " ".join(argv or sys.argv[1:]),
        "code_version": code_version(),
    }
    args.record.mkdir(parents=True, exist_ok=True)
    (args.record / f"copies-{args.out.stem}.json").write_text(json.dumps(record, indent=1) + "\n")
    log.info("%d copies -> %s", len(made), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
