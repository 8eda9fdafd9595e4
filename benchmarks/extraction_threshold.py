"""Exact-span precision / recall / F1 of an extractor when spans under a confidence threshold
are dropped, per test set: does trading recall for precision help anywhere?

    python benchmarks/extraction_threshold.py model/artifacts/extractor

Writes benchmarks/results/extraction/threshold-<artifact version>.json and prints a table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.extractor import Extractor  # noqa: E402
from absa.model.spans import span_scores  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from absa.training.sentences import read_sentences  # noqa: E402
from benchmarks.datasets import PROJECT_MACHINE, data_dir  # noqa: E402
from benchmarks.extraction import TESTS  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifact", type=Path)
    args = ap.parse_args()
    ext = Extractor.load(args.artifact, threads=1)
    out: dict = {"artifact": ext.model_id, "thresholds": {}}
    print("| test set | " + " | ".join(f"≥ {t:.1f} P / R / F1" for t in THRESHOLDS) + " |")
    print("|---" * (len(THRESHOLDS) + 1) + "|")
    for name, rel in TESTS.items():
        sentences = read_sentences([str(data_dir() / rel)])
        found = ext.extract([s.text for s in sentences])
        cells = []
        for t in THRESHOLDS:
            pred = [{(f.start, f.end) for f in spans if f.confidence >= t} for spans in found]
            rep = span_scores([s.span_set for s in sentences], pred)
            out["thresholds"].setdefault(name, {})[str(t)] = rep
            cells.append(f"{rep['precision']:.1f} / {rep['recall']:.1f} / **{rep['f1']:.2f}**")
        print(f"| {name} | " + " | ".join(cells) + " |")
    out.update(code_version=code_version(), machine=PROJECT_MACHINE)
    name = ext.model_id.replace(":", "-")
    path = ROOT / "benchmarks" / "results" / "extraction" / f"threshold-{name}.json"
    write_record(path, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
