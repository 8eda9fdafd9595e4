"""How many sentences and aspects the word tokenizer's versions split differently
(``absa.model.text.TOKENIZERS``): whether moving new pipelines from version 1 to 2 can move
the benchmark numbers, or only the answers to text with a quote before a word.

    python benchmarks/tokenizer_versions.py [--old 1] [--new 2]

Reads the four sets' training and test files and the train-only sets (../shared/data);
writes benchmarks/results/robustness/tokenizer-versions-<old>-<new>.json and logs a table.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.text import tokenize  # noqa: E402
from absa.training.provenance import file_info  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("tokenizer_versions")
DATA = ROOT.parent / "shared" / "data"
FILES = [
    "semeval14/Restaurants_Train.xml.seg",
    "semeval14/Laptops_Train.xml.seg",
    "twitter/train.raw",
    "mams/train.xml",
    "semeval15/restaurant_train.raw",
    "television/Television_Train.xml.seg",
    "tshirt/Menstshirt_Train.xml.seg",
    "yelp/yelp.train.txt",
    "acos-laptop/train.jsonl",
    "semeval14/Restaurants_Test_Gold.xml.seg",
    "semeval14/Laptops_Test_Gold.xml.seg",
    "twitter/test.raw",
    "mams/test.xml",
]


def differs(text: str, old: int, new: int) -> bool:
    return [t.text for t in tokenize(text, old)] != [t.text for t in tokenize(text, new)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=int, default=1)
    ap.add_argument("--new", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    for name in FILES:
        path = DATA / name
        examples = read_examples(path).examples
        texts = {e.text for e in examples}
        changed = {t for t in texts if differs(t, args.old, args.new)}
        rows.append(
            {
                **file_info([path])[0],
                "sentences": len(texts),
                "sentences_split_differently": len(changed),
                "aspects": len(examples),
                "aspects_in_those": sum(e.text in changed for e in examples),
                "examples": sorted(changed)[:3],
            }
        )
        r = rows[-1]
        log.info(
            "%-40s %5d of %5d sentences, %4d of %5d aspects",
            name,
            r["sentences_split_differently"],
            r["sentences"],
            r["aspects_in_those"],
            r["aspects"],
        )
    write_record(
        ROOT
        / "benchmarks"
        / "results"
        / "robustness"
        / f"tokenizer-versions-{args.old}-{args.new}.json",
        old=args.old,
        new=args.new,
        files=rows,
    )


if __name__ == "__main__":
    main()
