"""How sure a category model is about categories a sentence does not mention. It labels any
category it is asked about, mentioned or not (it does not detect categories): this measures
how confident those answers are, against the answers about the categories the annotators
marked, on SemEval-2014's Restaurants_Train_v2.xml.

    OMP_NUM_THREADS=1 python benchmarks/category_unmentioned.py [--artifact DIR]   # ~4 s

No test set with categories is here, so it reads the training file: an unmentioned
(sentence, category) pair was never a training item (the model never saw a label for it),
but the mentioned pairs were, so their confidence is in-sample (an upper bound).
Result: benchmarks/results/categories/unmentioned__NAME-VERSION.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.datasets import data_dir  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "categories"
DATA = "semeval14/xml/Restaurants_Train_v2.xml"


def summary(scores: list[float]) -> dict:
    """The top probabilities' mean, quartiles and the share at 0.8 or more."""
    a = np.asarray(scores)
    q1, median, q3 = np.percentile(a, [25, 50, 75])
    return {
        "n": int(a.size),
        "mean": round(float(a.mean()), 4),
        "q1": round(float(q1), 4),
        "median": round(float(median), 4),
        "q3": round(float(q3), 4),
        "share_at_least_0.8": round(float((a >= 0.8).mean()), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "category")
    ap.add_argument("--data", type=Path, default=None, help=f"default: {DATA} under the data")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from absa import load

    clf = load(args.artifact)
    cats = clf.categories
    if cats is None:
        ap.error(f"{args.artifact} is no category model")
    path = args.data or data_dir() / DATA
    mentioned: list[tuple[str, list[str]]] = []
    unmentioned: list[tuple[str, list[str]]] = []
    for s in ET.parse(path).getroot().iter("sentence"):
        text = s.findtext("text") or ""
        have = {a.get("category") for a in s.iter("aspectCategory")}
        asked = [c for c in cats if c in have]
        if asked:
            mentioned.append((text, asked))
        if len(asked) < len(cats):
            unmentioned.append((text, [c for c in cats if c not in have]))
    top = {
        kind: [p.score for r in clf.batch(items) for p in r]
        for kind, items in (("mentioned", mentioned), ("unmentioned", unmentioned))
    }
    meta = clf.metadata
    result = {
        "artifact": f"{meta.get('name')}-{meta.get('version')}",
        "data": DATA if args.data is None else str(args.data),
        "categories": cats,
        "top_probability": {kind: summary(scores) for kind, scores in top.items()},
        "note": "mentioned pairs were training items (in-sample); unmentioned ones never were",
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"unmentioned__{result['artifact']}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for kind, s in result["top_probability"].items():
        logging.info(
            "%-11s %5d asks: top probability mean %.3f, median %.3f (quartiles %.3f-%.3f), "
            "%.0f %% at 0.8 or more",
            kind, s["n"], s["mean"], s["median"], s["q1"], s["q3"], 100 * s["share_at_least_0.8"],
        )  # fmt: skip
    logging.info("wrote %s", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
