"""A sentiment run's dev split, scored per training file: which domain an epoch or a recipe
gains or loses on, read off dev rather than the test sets.

    python benchmarks/dev_sources.py runs/distill/<name>.s1.artifact --run runs/distill/<name>.s1
    python benchmarks/dev_sources.py runs/distill/<name>.s1 [--json out.json]

The dev examples (dev.jsonl of ``--run``, or of the model when it is a run) carry no source,
so each is matched by its sentence (lower-cased, punctuation and spaces removed) to the
union's training files (benchmarks/datasets.py); a sentence found in none is counted as
``other``. Accuracy and macro-F1 per file, as the model serves its probabilities (a run's:
its network's; an artifact's: with its temperature and map).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.overlap import normalise_text  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.records import Labelled  # noqa: E402
from absa.training.rundir import read_dev_examples  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402


def sources(files: dict[str, Path]) -> dict[str, str]:
    """Normalised sentence -> the name of the first training file that has it."""
    out: dict[str, str] = {}
    for name, path in files.items():
        for e in read_examples(str(path)).examples:
            out.setdefault(normalise_text(e.text), name)
    return out


def by_source(dev: list[Labelled], files: dict[str, Path]) -> dict[str, list[Labelled]]:
    where = sources(files)
    groups: dict[str, list[Labelled]] = defaultdict(list)
    for e in dev:
        groups[where.get(normalise_text(e.text), "other")].append(e)
    return dict(groups)


def score(model: Path, dev: list[Labelled], files: dict[str, Path]) -> dict[str, dict]:
    """Per source: n, accuracy and macro-F1 (%), and the same over all of dev; the model
    predicts each dev example once."""
    probs, labels = predict_examples(model, dev)
    pred = {id(e): int(k) for e, k in zip(dev, probs.argmax(1), strict=True)}

    def scored(examples: list[Labelled]) -> dict:
        gold = [labels.index(e.label) for e in examples]
        rep = classification_report(gold, [pred[id(e)] for e in examples], labels)
        return {"n": len(examples), **_pct(rep)}

    out = {name: scored(ex) for name, ex in sorted(by_source(dev, files).items())}
    out["all"] = scored(dev)
    return out


def _pct(rep: dict) -> dict:
    return {k: round(rep[k] * 100, 2) for k in ("accuracy", "macro_f1")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="a run or an artifact")
    ap.add_argument("--run", type=Path, help="the run whose dev.jsonl to read (default: model)")
    ap.add_argument("--json", type=Path, help="also write the scores here")
    args = ap.parse_args()
    files = {d: paths(d)["train"] for d in DATASETS}
    dev = read_dev_examples(args.run or args.model)
    scores = score(args.model, dev, files)
    for name, s in scores.items():
        sys.stdout.write(f"{name:10s} {s['n']:5d}  {s['accuracy']:6.2f} / {s['macro_f1']:6.2f}\n")
    if args.json:
        args.json.write_text(json.dumps({"model": str(args.model), "dev": scores}, indent=1))


if __name__ == "__main__":
    main()
