"""Audit an extractor's spurious spans (predicted, overlapping no gold span) on a test set:
are they tagger errors, or aspect terms the annotators left unmarked?

    python benchmarks/extraction_audit.py model/artifacts/extractor --test mams --n 40 --seed 0
    # judge each span in the file written (fill "judgement"), then:
    python benchmarks/extraction_audit.py --judged benchmarks/results/extraction/audit-....json

The first writes a seeded sample of the spurious spans with the sentence and its gold spans,
``judgement`` left null. A judgement is one of ``JUDGEMENTS`` (by the SemEval-2014 aspect
term guidelines: a term naming a part or attribute of the reviewed thing is an aspect,
whether or not an opinion is expressed on it). The second prints the counts, and the
precision and F1 the extractor would have if the judged share of aspects among all its
spurious spans were marked in the gold (an extrapolation from the sample).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.training.provenance import code_version, file_info  # noqa: E402
from absa.training.sentences import Sentence, read_sentences  # noqa: E402
from benchmarks.datasets import data_dir  # noqa: E402
from benchmarks.extraction import TESTS  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "extraction"
JUDGEMENTS = {
    "aspect-opinion": "an aspect term with an opinion on it in the sentence",
    "aspect-mention": "an aspect term mentioned without an opinion",
    "not-aspect": "not an aspect term (a verb, an event, a part of the opinion, a header)",
}


def spurious(artifact: Path, sentences: Sequence[Sentence]) -> tuple[list[dict], dict]:
    """The spurious spans of ``artifact`` on ``sentences`` (in their order) and its scores."""
    from absa.model.extractor import Extractor
    from absa.model.spans import overlaps_any, span_scores

    found = Extractor.load(artifact, device="cpu", threads=1).extract([s.text for s in sentences])
    out = []
    for sent, spans in zip(sentences, found, strict=True):
        gold = sent.span_set
        for f in spans:
            a = (f.start, f.end)
            if not overlaps_any(a, gold):
                out.append(
                    {
                        "text": sent.text,
                        "span": sent.text[a[0] : a[1]],
                        "start": a[0],
                        "gold": [sent.text[s:e] for s, e in sorted(gold)],
                        "judgement": None,
                    }
                )
    pred = [{(f.start, f.end) for f in spans} for spans in found]
    return out, span_scores([s.span_set for s in sentences], pred)


def summary(audit: dict) -> dict:
    """Counts of the judgements and the extrapolated precision / F1."""
    judged = [s["judgement"] for s in audit["sample"]]
    unknown = sorted({repr(j) for j in judged if j not in JUDGEMENTS})
    if unknown:
        raise ValueError(f"judgements must be one of {sorted(JUDGEMENTS)}, not {unknown}")
    counts = Counter(judged)
    share = (counts["aspect-opinion"] + counts["aspect-mention"]) / len(judged)
    s = audit["scores"]
    tp, predicted, gold = s["true_positives"], s["predicted"], s["gold"]
    moved = share * audit["spurious"]  # spurious spans that are aspects, extrapolated
    p, r = (tp + moved) / predicted, (tp + moved) / (gold + moved)
    return {
        "counts": dict(counts),
        "aspect_share": share,
        "as_measured": {"precision": s["precision"], "recall": s["recall"], "f1": s["f1"]},
        "if_marked": {"precision": 100 * p, "recall": 100 * r, "f1": 200 * p * r / (p + r)},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifact", type=Path, nargs="?")
    ap.add_argument("--test", choices=sorted(TESTS), default="mams")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--judged", type=Path, help="an audit file with its judgements filled in")
    args = ap.parse_args()
    if args.judged:
        audit = json.loads(args.judged.read_text())
        audit["summary"] = summary(audit)
        args.judged.write_text(json.dumps(audit, indent=1, ensure_ascii=False) + "\n")
        sys.stdout.write(json.dumps(audit["summary"], indent=1) + "\n")
        return 0
    if args.artifact is None:
        ap.error("give an extractor artifact, or --judged FILE")
    test = str(data_dir() / TESTS[args.test])
    spans, scores = spurious(args.artifact, read_sentences([test]))
    meta = json.loads((args.artifact / "metadata.json").read_text())
    audit = {
        "artifact": f"{meta['name']}-{meta['version']}",
        "test": file_info([test]),
        "scores": scores,
        "spurious": len(spans),
        "sample_seed": args.seed,
        "judgements": JUDGEMENTS,
        "sample": random.Random(args.seed).sample(spans, min(args.n, len(spans))),
        "code_version": code_version(),
    }
    path = OUT / f"audit-{audit['artifact']}-{args.test}.json"
    write_record(path, **audit)
    sys.stdout.write(f"{path}: {len(spans)} spurious spans, {len(audit['sample'])} sampled\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
