"""Extraction of texts of several sentences: MAMS test sentences joined K to a text (a space
between), tagged whole and a sentence at a time (``Extractor.extract(by_sentence=True)``, what
the service does), exact-span precision / recall / F1 against the gold spans moved to their
place in the joined text, as written and in lower case; and the test files as they are,
both ways.

    python benchmarks/extraction_sentences.py --artifact model/artifacts/extractor

Writes benchmarks/results/extraction/sentences__<artifact name>-<version>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.extractor import Extractor  # noqa: E402
from absa.model.sentence_split import sentence_spans  # noqa: E402
from absa.training.sentences import GoldSpan, Sentence, read_sentences  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
TESTS = {
    "rest14": DATA / "semeval14" / "Restaurants_Test_Gold.xml.seg",
    "lap14": DATA / "semeval14" / "Laptops_Test_Gold.xml.seg",
    "mams": DATA / "mams" / "test.xml",
}


def scores(ext: Extractor, sentences: list[Sentence], by_sentence: bool) -> dict:
    found = ext.extract([s.text for s in sentences], by_sentence=by_sentence)
    tp = fp = fn = 0
    for s, spans in zip(sentences, found, strict=True):
        pred = {(f.start, f.end) for f in spans}
        tp += len(pred & s.span_set)
        fp += len(pred - s.span_set)
        fn += len(s.span_set - pred)
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(100 * p, 2), "recall": round(100 * r, 2), "f1": round(100 * f1, 2)}


def joined(sentences: list[Sentence], k: int) -> list[Sentence]:
    """The sentences K to a text, in file order (a last group short of K left out)."""
    out = []
    for i in range(0, len(sentences) - k + 1, k):
        text, spans = "", []
        for s in sentences[i : i + k]:
            at = len(text) + 1 if text else 0
            text = f"{text} {s.text}" if text else s.text
            spans += [GoldSpan(g.start + at, g.end + at, g.label) for g in s.spans]
        out.append(Sentence(text, tuple(spans)))
    return out


def lowered(sentences: list[Sentence]) -> list[Sentence]:
    """The texts in lower case (casual reviews and tweets are written so), spans kept: a
    text whose lower case is not as long is left as it is."""
    return [
        Sentence(s.text.lower(), s.spans) if len(s.text.lower()) == len(s.text) else s
        for s in sentences
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "extractor")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 8])
    args = ap.parse_args()
    ext = Extractor.load(args.artifact, device="cpu", threads=1)
    result: dict = {"artifact": f"{ext.metadata.get('name')}-{ext.metadata.get('version')}"}
    for name, path in TESTS.items():
        sents = read_sentences(path)
        result[name] = {
            "units": len(sents),
            "several_sentences": sum(len(sentence_spans(s.text)) > 1 for s in sents),
            "whole": scores(ext, sents, False),
            "by_sentence": scores(ext, sents, True),
        }
    mams = read_sentences(TESTS["mams"])
    for k in args.k:
        texts = joined(mams, k)
        result[f"mams_joined_{k}"] = {
            "texts": len(texts),
            "whole": scores(ext, texts, False),
            "by_sentence": scores(ext, texts, True),
        }
        lower = lowered(texts)
        result[f"mams_joined_{k}_lower"] = {
            "texts": len(lower),
            "whole": scores(ext, lower, False),
            "by_sentence": scores(ext, lower, True),
        }
    out = ROOT / "benchmarks" / "results" / "extraction" / f"sentences__{result['artifact']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_record(out, **result)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
