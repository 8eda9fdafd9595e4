"""More data and leave-one-domain-out: the shipped student recipe (`fast`, no teacher) trained
on "union", "union+new" and "union+new minus one new domain"; resumable.

Setups (one JSON per setup and seed under benchmarks/results/transfer/):

- ``union``: the four sets with a test (the shipped model's data; test sentences removed).
- ``union-new``: union plus the train-only sets (``benchmarks/datasets.py: TRAIN_ONLY``),
  less a seeded 20% of each new set held out by sentence (``HOLDOUT_SEED``, the same for
  every run and seed): the in-domain reference.
- ``lodo-D``: union-new without the new set D at all: D is a domain it never saw.

How the data is combined (test sentences out, each sentence from one file): training/union.py.
A new set's *pool* is its examples whose sentence is in no test set and in no other
training file (most of SemEval-15 repeats SemEval-14 restaurants train); its held-out 20%
comes from the pool, so a model is never scored on a sentence it trained on. Every model
is scored on the four test sets, each new set's held-out part and whole pool, and the
negation / contrast slice (benchmarks/robustness/negation.jsonl).

    python benchmarks/transfer.py --check              # the overlap counts only, no training
    python benchmarks/transfer.py --epochs 10 --setups union union-new --seeds 1 2 3
    python benchmarks/transfer.py --epochs 10 --setups lodo-semeval15 lodo-television \\
        lodo-tshirt lodo-yelp lodo-acos-laptop --seeds 1
    python benchmarks/report.py        # the tables in docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training.evaluate import evaluate, predict_examples  # noqa: E402
from absa.training.overlap import normalise_text  # noqa: E402
from absa.training.presets import load_config  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.records import Example  # noqa: E402
from absa.training.rundir import read_info  # noqa: E402
from absa.training.train import fit  # noqa: E402
from absa.training.train_data import split_dev  # noqa: E402
from absa.training.union import combine  # noqa: E402
from benchmarks.datasets import PROJECT_MACHINE, TRAIN_ONLY, test_files, union_files  # noqa: E402
from benchmarks.robustness.negation import negation_slice  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "transfer"
HOLDOUT, HOLDOUT_SEED = 0.2, 20
SETUPS = ["union", "union-new", *(f"lodo-{d}" for d in TRAIN_ONLY)]
log = logging.getLogger("transfer")


class Data:
    """Every file read once; each new set's pool, held-out part and training part."""

    def __init__(self) -> None:
        self.files = dict(union_files(new=True))
        self.read = {n: read_examples(p).examples for n, p in self.files.items()}
        self.tests = {n: read_examples(p).examples for n, p in test_files().items()}
        self.pool: dict[str, list[Example]] = {}
        self.held: dict[str, list[Example]] = {}
        self.train_part: dict[str, list[Example]] = {}
        for d in TRAIN_ONLY:
            others = [e for n, ex in self.read.items() if n != d for e in ex]
            others += [e for ex in self.tests.values() for e in ex]
            seen = {normalise_text(e.text) for e in others}
            self.pool[d] = [e for e in self.read[d] if normalise_text(e.text) not in seen]
            # by exact text, as when the results were made (split_dev's key since is bracket_free)
            _, self.held[d] = split_dev(self.pool[d], HOLDOUT, HOLDOUT_SEED, key=str)
            held = {normalise_text(e.text) for e in self.held[d]}
            self.train_part[d] = [e for e in self.read[d] if normalise_text(e.text) not in held]

    def training(self, setup: str) -> tuple[list[Example], list[dict]]:
        """The training examples of a setup, and what combining them dropped per file."""
        if setup not in SETUPS:
            raise ValueError(f"unknown setup {setup!r}; one of {', '.join(SETUPS)}")
        without = setup.removeprefix("lodo-") if setup.startswith("lodo-") else None
        names = [n for n, _ in union_files(new=setup != "union", without=without)]
        files = [(n, self.train_part.get(n, self.read[n])) for n in names]
        examples, reports = combine(files, self.tests, fresh=frozenset(TRAIN_ONLY))
        return examples, [r.to_dict() for r in reports]

    def eval_sets(self) -> dict[str, list[Example]]:
        sets = dict(self.tests)
        for d in TRAIN_ONLY:
            sets[f"{d}-held"] = self.held[d]
            sets[f"{d}-pool"] = self.pool[d]
        return sets


def scores(run_dir: Path, sets: dict[str, list[Example]]) -> dict:
    out = {}
    for name, examples in sets.items():
        rep = evaluate(run_dir, examples)
        out[name] = {"accuracy": rep["accuracy"], "macro_f1": rep["macro_f1"], "n": rep["n"]}
    return out


def predict_labels(model_dir: Path, examples: list[Example]) -> list[str]:
    probs, labels = predict_examples(model_dir, examples)
    return [labels[i] for i in probs.argmax(1)]


def run_one(data: Data, setup: str, seed: int, args: argparse.Namespace) -> dict:
    preset = load_config(None, args.preset)  # fast: default-kd.json without its teacher
    over = {"seed": seed, "threads": 1} | ({"epochs": args.epochs} if args.epochs else {})
    preset = replace(preset, train=replace(preset.train, **over))
    train, reports = data.training(setup)
    run_dir = Path(tempfile.mkdtemp(prefix=f"transfer-{setup}-"))
    if args.keep_runs:
        run_dir = args.keep_runs / f"{setup}__s{seed}"
        shutil.rmtree(run_dir, ignore_errors=True)
    try:
        t0 = time.time()
        res = fit(train, None, preset, run_dir, progress=False, preset_name=args.preset)
        train_seconds = round(time.time() - t0, 1)
        result = scores(run_dir, data.eval_sets())
        negation = negation_slice(run_dir, predict_labels)
        info = read_info(run_dir)
    finally:
        if not args.keep_runs:
            shutil.rmtree(run_dir, ignore_errors=True)
    negation.pop("wrong")
    return {
        "setup": setup,
        "preset": args.preset,
        "seed": seed,
        "n_train": len(train),
        "combine": reports,
        "results": result,
        "negation": negation,
        "dev_accuracy": res.dev["accuracy"],
        "dev_macro_f1": res.dev["macro_f1"],
        "dev_split": info["dev_split"],
        "best_epoch": res.best_epoch,
        "epochs_run": len(res.history),
        "seconds_per_epoch": info["seconds_per_epoch"],
        "train_seconds": train_seconds,
        "environment": info["environment"],
        "machine": args.machine,
        "holdout": {"fraction": HOLDOUT, "seed": HOLDOUT_SEED},
        "train_config": preset.train.to_dict(),
        "data_sha256": {n: sha256_file(p) for n, p in data.files.items()},
        "code_version": info["code_version"],  # of the code that started training
        "command": " ".join(["python benchmarks/transfer.py", *sys.argv[1:]]),
    }


def check(data: Data) -> None:
    """Print what combining drops for union-new, and each new set's pool and held-out size."""
    _, reports = data.training("union-new")
    for r in reports:
        print(json.dumps(r))
    for d in TRAIN_ONLY:
        print(f"{d}: {len(data.read[d])} read, pool {len(data.pool[d])}, held {len(data.held[d])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setups", nargs="+", default=SETUPS, choices=SETUPS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[1])
    ap.add_argument("--epochs", type=int, help="cap on the preset's epochs (early stopping stays)")
    ap.add_argument(
        "--preset", default="fast", help="the network trained (default: fast, the shipped one)"
    )
    ap.add_argument(
        "--machine", default=PROJECT_MACHINE, help="where this runs, and what shared it"
    )
    ap.add_argument("--keep-runs", type=Path, help="keep the run directories here")
    ap.add_argument("--force", action="store_true", help="rerun even if a result exists")
    ap.add_argument("--check", action="store_true", help="print the overlap counts and stop")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    data = Data()
    if args.check:
        check(data)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        for setup in args.setups:
            name = setup if args.preset == "fast" else f"{setup}.{args.preset}"
            dest = OUT / f"{name}.s{seed}.json"  # not "__": "television__" reads as the data set
            if dest.exists() and not args.force:
                continue
            r = run_one(data, setup, seed, args)
            tmp = dest.with_suffix(".tmp")
            tmp.write_text(json.dumps(r, indent=1))
            tmp.replace(dest)
            line = ", ".join(
                f"{k} {v['accuracy'] * 100:.1f}/{v['macro_f1'] * 100:.1f}"
                for k, v in r["results"].items()
            )
            log.info("%s: %s; negation %.1f", dest.name, line, r["negation"]["accuracy"] * 100)


if __name__ == "__main__":
    main()
