"""The NLL-best temperature of each part of an artifact's dev split and of each test set, on the
served graph's logits, beside the one the artifact carries: where one T fits and where a
domain wants its own.

    python benchmarks/temperature_by_set.py model/artifacts/default runs/ship-...   # ~20 s each

Dev is rebuilt from the artifact's metadata (benchmarks/calibration.py). Prints one Markdown
row per artifact: the stored T, dev's, each dev part's (by training file) and each test set's,
and the four test sets pooled. Nothing is written.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.calibration import fit_temperature  # noqa: E402
from absa.model.recalibrate import logits  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from benchmarks.calibration import rebuild_dev, spans  # noqa: E402
from benchmarks.calibration_options import domain_of  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402


def temperatures(model: Path) -> dict[str, float]:
    """Stored T, then the NLL-best T of dev, of each dev part and of each test set."""
    meta = artifact.read_metadata(model)
    labels = meta["labels"]
    dev = rebuild_dev(meta)
    z, y = logits(model, spans(dev)), np.array([labels.index(e.label) for e in dev])
    src = np.array([str(domain_of(e.source)) for e in dev])
    out = {"stored": float(meta["calibration"]["temperature"]), "dev": fit_temperature(z, y)}
    for part in sorted(set(src)):
        out[f"dev {part}"] = fit_temperature(z[src == part], y[src == part])
    zs, ys = [], []
    for name in DATASETS:
        examples = read_many([str(paths(name)["test"])]).examples
        zs.append(logits(model, spans(examples)))
        ys.append(np.array([labels.index(e.label) for e in examples]))
        out[name] = fit_temperature(zs[-1], ys[-1])
    out["tests pooled"] = fit_temperature(np.concatenate(zs), np.concatenate(ys))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifacts", nargs="+", type=Path)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    header = None
    for model in args.artifacts:
        got = temperatures(model)
        if header is None:
            header = list(got)
            print("| artifact | " + " | ".join(header) + " |")
            print("|---" * (1 + len(header)) + "|")
        print(
            f"| {model.name} | "
            + " | ".join(f"{got.get(k, float('nan')):.3f}" for k in header)
            + " |"
        )


if __name__ == "__main__":
    main()
