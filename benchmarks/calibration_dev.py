"""Which top-label map to ship, chosen on dev alone: each kind's ECE (15 bins) out of fold on
an artifact's dev split (5 folds, each fitted on the other four, over ``SPLITS`` fold draws),
pooled and on each source's part. The kinds: the shipped one (isotonic, knots at its blocks'
centres), the plain isotonic step function (knots at its blocks' ends), the shipped kind with
dev's sources weighted equally, and a logistic recalibration of "the top class is right" on
the top probability's logit, alone and with what a request's text says about it (the share
of its words out of the vocabulary, of the aspect's words, its log length).

    python benchmarks/calibration_dev.py --artifact model/artifacts/default

Dev is rebuilt from the artifact's metadata (benchmarks/calibration.py), the probabilities are
the served graph's after its temperature. One result file,
benchmarks/results/calibration/dev-oof__<name>-<version>.json, and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.calibration import (  # noqa: E402
    apply_top_map,
    expected_calibration_error,
    fit_top_map,
    held_out_folds,
    set_top,
    softmax,
)
from absa.model.recalibrate import logits  # noqa: E402
from absa.model.text import tokenize  # noqa: E402
from benchmarks.calibration import RESULTS, rebuild_dev, spans  # noqa: E402
from benchmarks.calibration_options import domain_of, source_weights, step_knots  # noqa: E402

FOLDS, SPLITS = 5, 20
# a kind: (dev probabilities, features, gold) of the fitting folds -> a function that maps
# the held-out fold's (probabilities, features) to calibrated probabilities
Mapping = Callable[[np.ndarray, np.ndarray], np.ndarray]
Kind = Callable[[np.ndarray, np.ndarray, np.ndarray], Mapping]


def knots(kind: str) -> Kind:
    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        if kind == "centres":
            xs, ys = fit_top_map(p, y)
        elif kind == "balanced":
            xs, ys = fit_top_map(p, y, weights=source_weights(x[:, -1]))
        else:  # "ends": the step function
            xs, ys = step_knots(p, y)
        return lambda ph, _x: apply_top_map(ph, xs, ys)

    return fit


def logistic(columns: int) -> Kind:
    """Logistic regression of correctness on the top logit and the first ``columns - 1``
    text features."""

    def design(p: np.ndarray, x: np.ndarray) -> np.ndarray:
        c = np.clip(p.max(1), 1e-6, 1 - 1e-6)
        return np.column_stack([np.log(c / (1 - c)), x[:, : columns - 1].astype(float)])

    def fit(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> Mapping:
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression().fit(design(p, x), p.argmax(1) == y)
        return lambda ph, xh: set_top(ph, lr.predict_proba(design(ph, xh))[:, 1])

    return fit


KINDS: dict[str, Kind] = {
    "top map (shipped: block centres)": knots("centres"),
    "step function (block ends)": knots("ends"),
    "sources weighted equally": knots("balanced"),
    "logistic, top logit": logistic(1),
    "logistic, top logit + out-of-vocabulary words": logistic(2),
    "logistic, + aspect's out-of-vocabulary words, log length": logistic(4),
}


def out_of_fold(fit: Kind, p: np.ndarray, x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    out = p.copy()
    for held in held_out_folds(len(y), FOLDS, seed):
        out[held] = fit(p[~held], x[~held], y[~held])(p[held], x[held])
    return out


def features(examples: list, vocab: set[str]) -> np.ndarray:
    """Per example: its words' out-of-vocabulary share, its aspect words', log word count,
    and (last, for the balanced map) its source data set."""
    rows = []
    for e in examples:
        words = tokenize(e.text)
        aspect = [w for w in words if w.start >= e.start and w.end <= e.end] or words
        rows.append(
            [
                np.mean([w.text.lower() not in vocab for w in words]),
                np.mean([w.text.lower() not in vocab for w in aspect]),
                np.log(len(words) + 1),
                str(domain_of(e.source)),
            ]
        )
    return np.array(rows, dtype=object)


def measure(p: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict[str, dict[str, list[float]]]:
    """Each kind's out-of-fold ECE per fold draw, pooled ("all") and per source."""
    src = x[:, -1]
    out: dict[str, dict[str, list[float]]] = {}
    for name, fit in KINDS.items():
        got: dict[str, list[float]] = {"all": [], **{s: [] for s in sorted(set(src))}}
        for seed in range(SPLITS):
            q = out_of_fold(fit, p, x, y, seed)
            got["all"].append(expected_calibration_error(q, y))
            for s in sorted(set(src)):
                got[s].append(expected_calibration_error(q[src == s], y[src == s]))
        out[name] = got
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    meta = artifact.read_metadata(args.artifact)
    dev = rebuild_dev(meta)
    vocab = set(json.loads((args.artifact / "vocab.json").read_text()))
    p = softmax(logits(args.artifact, spans(dev)), meta["calibration"]["temperature"])
    y = np.array([meta["labels"].index(e.label) for e in dev])
    x = features(dev, vocab)
    ece = measure(p, x, y)
    sources = [s for s in next(iter(ece.values())) if s != "all"]
    record = {
        "artifact": f"{meta['name']}-{meta['version']}",
        "dev_n": len(y),
        "dev_n_by_source": {s: int((x[:, -1] == s).sum()) for s in sources},
        "folds": FOLDS,
        "splits": SPLITS,
        "ece_before_map": expected_calibration_error(p, y),
        "ece_out_of_fold": ece,
    }
    out = RESULTS / f"dev-oof__{record['artifact']}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"| kind (dev {len(y)}, out of {FOLDS} folds x {SPLITS}) | all | "
        + " | ".join(sources)
        + " |"
    )
    print("|---" * (2 + len(sources)) + "|")
    for name, got in ece.items():
        cells = [f"{100 * np.mean(got[s]):.2f} ± {100 * np.std(got[s]):.2f}" for s in got]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
