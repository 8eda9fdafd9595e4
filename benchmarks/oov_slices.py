"""A served artifact's accuracy and macro-F1 on each test set, split by whether the aspect
has a word its vocabulary lacks: how much of a test set's error is words the student never
learnt.

    python benchmarks/oov_slices.py [--artifact model/artifacts/default]

Writes benchmarks/results/robustness/oov-slices__<name>-<version>.json and a Markdown table.
The predictions are the served graph's argmax (its temperature and top-label map change none).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.calibration import softmax  # noqa: E402
from absa.model.recalibrate import logits  # noqa: E402
from absa.model.text import TOKENIZER, WordPipeline, load_pipeline  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from absa.training.records import Example  # noqa: E402
from benchmarks.calibration import spans  # noqa: E402
from benchmarks.calibration_dev import aspect_words  # noqa: E402
from benchmarks.class_offsets import scores  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.records import write_record  # noqa: E402


def aspect_has_oov(example: Example, vocab: set[str], tokenizer: int = TOKENIZER) -> bool:
    """Whether a word of the aspect's span (lower-cased, as the pipeline reads it, with its
    word tokenizer) is not in ``vocab``; an aspect that covers no whole word counts its
    sentence's words (``calibration_dev.aspect_words``)."""
    return any(w.text.lower() not in vocab for w in aspect_words(example, tokenizer))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    args = ap.parse_args(argv)
    meta = artifact.read_metadata(args.artifact)
    pipe = load_pipeline(args.artifact)
    if not isinstance(pipe, WordPipeline):
        ap.error(f"{args.artifact}: a word-vocabulary model is needed, not {pipe.kind!r}")
    vocab = set(pipe.words)
    labels = list(meta["labels"])
    out: dict[str, dict] = {}
    print("| test set | aspects with an unknown word: n, acc / F1 | the others |\n|---|---|---|")
    for ds in DATASETS:
        examples = read_many([str(paths(ds)["test"])]).examples
        probs = softmax(logits(args.artifact, spans(examples)), 1.0)
        gold = np.array([labels.index(e.label) for e in examples])
        oov = np.array([aspect_has_oov(e, vocab, pipe.tokenizer) for e in examples])
        out[ds] = {}
        for name, part in (("oov", oov), ("in_vocab", ~oov)):
            acc, f1 = scores(probs[part], gold[part], 0.0)
            out[ds][name] = {"n": int(part.sum()), "accuracy": acc, "macro_f1": f1}
        cells = [f"{c['n']}, {c['accuracy']:.1f} / {c['macro_f1']:.1f}" for c in out[ds].values()]
        print(f"| {ds} | " + " | ".join(cells) + " |")
    name = f"{meta['name']}-{meta['version']}"
    record = {"artifact": name, "vocab": len(vocab), "tests": out, "code_version": code_version()}
    results = ROOT / "benchmarks" / "results" / "robustness"
    results.mkdir(parents=True, exist_ok=True)
    write_record(results / f"oov-slices__{name}.json", **record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
