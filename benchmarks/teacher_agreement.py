"""What teachers' soft targets say beyond the gold label, per training file: how often a
teacher's most probable class is the label, the mean probability it gives the label, and
its mean top probability.

    ABSA_TEACHER_CACHE=runs/teacher-cache python benchmarks/teacher_agreement.py \\
        --teachers runs/teacher-union-mpnet runs/teacher-union-more-mpnet \\
        --data <training files> --name teachers-mpnet --threads 1 [--by-source <files>]

``--by-source``: files the --data items came from (a fold file of several sets, say); each
item is told to the first of them holding its sentence (texts compared as ``drop_overlap``
does) and each file's items are reported per source as well.

Each file's aspects are scored as a student's soft targets are (``training/distill.py``:
the teacher's served probabilities, through the teacher cache when it is on). A teacher
that trained on a file agrees with its labels more, and its targets there carry less
than the label does not already say. Writes benchmarks/results/distill/agreement-<name>.json.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from absa.training.distill import teacher_targets  # noqa: E402
from absa.training.evaluate import predict_examples  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.overlap import normalise_text  # noqa: E402
from absa.training.provenance import code_version, file_info, portable  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from benchmarks.dev_sources import sources  # noqa: E402
from benchmarks.records import write_record  # noqa: E402


def agreement(probs: np.ndarray, gold: np.ndarray, labels: list[str]) -> dict:
    """Agreement with the labels (%), mean probability of the label, mean top probability,
    per label the share of its items the teacher calls it (%), and each label's share of
    the items, as labelled and as the teacher calls them (%): whether a file's label mix
    is its sentences' (the teacher finds it too) or its annotators' (it does not)."""
    report = classification_report(gold, probs.argmax(1), labels)
    called = probs.argmax(1)

    def share(which: np.ndarray) -> dict[str, float]:
        return {name: round(100 * float((which == i).mean()), 2) for i, name in enumerate(labels)}

    return {
        "label_share_pct": share(gold),
        "called_share_pct": share(called),
        "agree_pct": round(100 * report["accuracy"], 2),
        "p_gold": round(float(probs[np.arange(len(gold)), gold].mean()), 4),
        "p_max": round(float(probs.max(1).mean()), 4),
        "recall_pct": {
            name: round(100 * c["recall"], 2)
            for name, c in report["per_class"].items()
            if c["support"]
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teachers", nargs="+", type=Path, required=True)
    ap.add_argument("--data", nargs="+", type=Path, required=True, help="labelled files")
    ap.add_argument("--name", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--by-source", nargs="*", type=Path, default=[], help="where items came from")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "distill")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    _, labels = predict_examples(args.teachers[0], [])
    where = sources({portable(p): p for p in args.by_source})
    result: dict = {"teachers": [str(t) for t in args.teachers], "files": {}}
    for path in args.data:
        examples = read_examples(str(path)).examples
        gold = np.array([labels.index(e.label) for e in examples])
        probs = {str(t): teacher_targets(t, examples, labels) for t in args.teachers}
        per = {t: agreement(p, gold, labels) for t, p in probs.items()}
        entry = {"file": file_info([path])[0], "n": len(gold), **per}
        _write(path.name, per)
        if where:
            came = np.array([where.get(normalise_text(e.text), "?") for e in examples])
            entry["by_source"] = {}
            for src in sorted(set(came)):
                rows = came == src
                part = {t: agreement(p[rows], gold[rows], labels) for t, p in probs.items()}
                entry["by_source"][src] = {"n": int(rows.sum()), **part}
                _write(f"  {Path(src).name}", part)
        result["files"][portable(path)] = entry
    result["code_version"] = code_version()
    args.out.mkdir(parents=True, exist_ok=True)
    write_record(args.out / f"agreement-{args.name}.json", **result)
    return 0


def _write(what: str, per: dict[str, dict]) -> None:
    for t, a in per.items():
        sys.stdout.write(
            f"{what:32s} {Path(t).name:28s} agree {a['agree_pct']:6.2f} %  "
            f"p(gold) {a['p_gold']:.3f}  p(max) {a['p_max']:.3f}  recall "
            + " ".join(f"{k} {v:.1f}" for k, v in a["recall_pct"].items())
            + "\n"
        )


if __name__ == "__main__":
    raise SystemExit(main())
