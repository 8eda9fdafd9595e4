"""How consistently a data set marks its aspect terms: of the places where a term that the
set marks elsewhere occurs, the share where it is marked.

    python benchmarks/extraction_marking.py     # the three training XML files

For each file: the terms marked at least ``--min-count`` times (lower-cased, longer than two
characters), every whole-word occurrence of one of them in a sentence with at least
``--min-aspects`` marked aspects, and whether that occurrence is marked. An occurrence inside
a longer marked span (``pizza`` in ``chicken pizza``) counts as neither. A data set that
marks a term wherever it is an aspect has this share near 100 %; the lower it is, the more
a tagger's "spurious" spans are the annotators' omissions (docs: issue #15's MAMS audit).
Reads training files only. Writes benchmarks/results/extraction/marking.json.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.training.provenance import code_version, file_info  # noqa: E402
from absa.training.sentences import Sentence, read_sentences  # noqa: E402
from benchmarks.datasets import data_dir  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

FILES = {
    "rest14": "semeval14/xml/Restaurants_Train_v2.xml",
    "lap14": "semeval14/xml/Laptops_Train_v2.xml",
    "mams": "mams/train.xml",
}


def marking(sentences: Sequence[Sentence], min_count: int = 3, min_aspects: int = 1) -> dict:
    """Occurrences of the recurring marked terms, how many are marked, and the counts per
    term (most frequent first)."""
    sents = [s for s in sentences if len(s.span_set) >= min_aspects]
    counts = Counter(s.text[a:b].lower() for s in sents for a, b in s.span_set)
    terms = sorted(t for t, c in counts.items() if c >= min_count and len(t) > 2)
    patterns = {t: re.compile(r"(?<![\w-])" + re.escape(t) + r"(?![\w-])") for t in terms}
    per: dict[str, list[int]] = {t: [0, 0] for t in terms}
    for s in sents:
        low = s.text.lower()
        for t, pat in patterns.items():
            for m in pat.finditer(low):
                at = (m.start(), m.end())
                if any(a <= at[0] and at[1] <= b and (a, b) != at for a, b in s.span_set):
                    continue  # part of a longer marked term
                per[t][0] += 1
                per[t][1] += at in s.span_set
    occurrences = sum(n for n, _ in per.values())
    marked = sum(m for _, m in per.values())
    top = sorted(per.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return {
        "sentences": len(sents),
        "terms": len(terms),
        "occurrences": occurrences,
        "marked": marked,
        "marked_pct": round(100 * marked / occurrences, 2) if occurrences else None,
        "top_terms": {t: {"occurrences": n, "marked": m} for t, (n, m) in top[:20]},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-count", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/extraction/marking.json")
    args = ap.parse_args(argv)
    result: dict = {"min_count": args.min_count, "sets": {}, "code_version": code_version()}
    for name, rel in FILES.items():
        path = data_dir() / rel
        sentences = read_sentences(path)
        result["sets"][name] = {
            "file": file_info([path])[0],
            **{f"min_aspects_{k}": marking(sentences, args.min_count, k) for k in (1, 2)},
        }
        for k in (1, 2):
            r = result["sets"][name][f"min_aspects_{k}"]
            sys.stdout.write(
                f"{name:7s} sentences with >= {k} aspects: {r['sentences']:5d}, "
                f"{r['terms']} terms, "
                f"{r['marked']} of {r['occurrences']} occurrences marked ({r['marked_pct']} %)\n"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_record(args.out, **result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
