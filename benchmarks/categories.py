"""Aspect categories: 5-fold cross-validation on Rest14's train XML, and ACOS laptop's dev.

Rest14 (SemEval-2014 restaurants, ``Restaurants_Train_v2.xml``; no official category test
here): the sentences are shuffled with ``--fold-seed`` and dealt into 5 folds, so the
categories of one sentence stay in one fold; each fold is the test set once, the model
trains on the other four (dev: a seeded 10% of them, by sentence). ACOS laptop: train on
``train.categories.jsonl``, select on a seeded 10% of it, evaluate on ``dev.categories.jsonl``
(its dev examples whose category train never has are counted and left out). ``conflict`` is
dropped: 3-way accuracy and macro-F1.

Each (preset, dataset, fold, seed) writes one JSON file under benchmarks/results/categories/
with the fold's hash (sha256 of its sorted sentence texts); a run whose file exists is
skipped, so an interrupted benchmark continues where it stopped.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/categories.py --presets atae-lstm fast
    python benchmarks/categories.py --report     # the Markdown table for docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training.categories import category_preset  # noqa: E402
from absa.training.category_readers import categories_of, read_categories  # noqa: E402
from absa.training.evaluate import evaluate  # noqa: E402
from absa.training.presets import PRESETS, load_config  # noqa: E402
from absa.training.records import CategoryExample  # noqa: E402
from absa.training.rundir import read_info  # noqa: E402
from absa.training.train import fit  # noqa: E402
from benchmarks.datasets import PROJECT_MACHINE, data_dir  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "categories"
FOLDS = 5
DATASETS = ("rest14-cv", "acos-laptop")
log = logging.getLogger("categories")


def folds(examples: Sequence[CategoryExample], k: int, seed: int) -> list[list[CategoryExample]]:
    """``k`` folds by sentence: the sentences shuffled with ``seed``, dealt round-robin."""
    texts = sorted({e.text for e in examples})
    random.Random(seed).shuffle(texts)
    fold_of = {t: i % k for i, t in enumerate(texts)}
    out: list[list[CategoryExample]] = [[] for _ in range(k)]
    for e in examples:
        out[fold_of[e.text]].append(e)
    return out


def fold_hash(examples: Sequence[CategoryExample]) -> str:
    return hashlib.sha256("\n".join(sorted({e.text for e in examples})).encode()).hexdigest()


def splits(dataset: str, fold: int, fold_seed: int) -> tuple[list, list, dict]:
    """(train, test, data record) for one fold of Rest14 or for ACOS (fold 0 only)."""
    root = data_dir()
    if dataset == "rest14-cv":
        path = root / "semeval14" / "xml" / "Restaurants_Train_v2.xml"
        parts = folds(read_categories(path).examples, FOLDS, fold_seed)
        test = parts[fold]
        train = [e for i, p in enumerate(parts) if i != fold for e in p]
        info = {"file": str(path), "sha256": sha256_file(path), "fold_seed": fold_seed}
        info["fold_sha256"] = fold_hash(test)
        return train, test, info
    tr, dv = (
        root / "acos-laptop" / "train.categories.jsonl",
        root / "acos-laptop" / "dev.categories.jsonl",
    )
    train = read_categories(tr).examples
    known = set(categories_of(train))
    dev = read_categories(dv).examples
    test = [e for e in dev if e.category in known]
    info = {f.name: sha256_file(f) for f in (tr, dv)}
    info["dev_unseen_category_dropped"] = len(dev) - len(test)
    return train, test, info


def run_one(preset_name: str, dataset: str, fold: int, seed: int, args: argparse.Namespace) -> dict:
    train, test, data = splits(dataset, fold, args.fold_seed)
    preset = load_config(args.config, preset_name)
    preset = replace(preset, train=replace(preset.train, seed=seed, threads=args.threads))
    preset = category_preset(preset, categories_of(train))
    run_dir = Path(tempfile.mkdtemp(prefix=f"bench-cat-{preset_name}-"))
    try:
        t0 = time.time()
        res = fit(train, None, preset, run_dir, progress=False, preset_name=preset_name)
        rep = evaluate(run_dir, test)
        info = read_info(run_dir)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "preset": preset_name,
        "dataset": dataset,
        "fold": fold,
        "seed": seed,
        "data": data,
        "n_train": len(train),
        "test_accuracy": rep["accuracy"],
        "test_macro_f1": rep["macro_f1"],
        "test_n": rep["n"],
        "dev_accuracy": res.dev["accuracy"],
        "best_epoch": res.best_epoch,
        "epochs_run": len(res.history),
        "seconds_per_epoch": info["seconds_per_epoch"],
        "train_seconds": round(time.time() - t0, 1),
        "threads": args.threads,
        "machine": args.machine,
        "environment": info["environment"],
        "dev_split": info["dev_split"],
        "model_config": preset.model.to_dict(),
        "train_config": preset.train.to_dict(),
        "code_version": info["code_version"],  # of the code that trained (run.json)
        "command": " ".join(["python benchmarks/categories.py", *sys.argv[1:]]),
    }


def report() -> str:
    """A Markdown table: per preset, dataset and seed, the mean (and spread) over folds."""
    rows: dict[tuple[str, str, int], list[dict]] = {}
    for f in sorted(OUT.glob("*.json")):
        r = json.loads(f.read_text())
        rows.setdefault((r["preset"] + r.get("tag", ""), r["dataset"], r["seed"]), []).append(r)
    out = [
        "| preset | data | seed | folds | accuracy | macro-F1 | per fold (acc) | s/epoch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (preset, dataset, seed), rs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        acc = [r["test_accuracy"] * 100 for r in rs]
        f1 = [r["test_macro_f1"] * 100 for r in rs]
        sd = f" ± {statistics.stdev(acc):.2f}" if len(acc) > 1 else ""
        each = ", ".join(f"{a:.1f}" for a in acc)
        spe = statistics.mean(r["seconds_per_epoch"] for r in rs)
        out.append(
            f"| {preset} | {dataset} | {seed} | {len(rs)} | {statistics.mean(acc):.2f}{sd} | "
            f"{statistics.mean(f1):.2f} | {each} | {spe:.1f} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["atae-lstm", "fast"], choices=list(PRESETS))
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--folds", nargs="+", type=int, default=list(range(FOLDS)))
    ap.add_argument("--seeds", nargs="+", type=int, default=[1])
    ap.add_argument("--fold-seed", type=int, default=0, help="shuffles the sentences into folds")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--config", type=Path, help="override file applied on top of each preset")
    ap.add_argument("--tag", default="", help="suffix of the result names (e.g. a variant)")
    ap.add_argument("--machine", default=PROJECT_MACHINE, help="where this runs")
    ap.add_argument("--force", action="store_true", help="rerun even if a result exists")
    ap.add_argument("--report", action="store_true", help="print the results table, run nothing")
    args = ap.parse_args()
    if args.report:
        print(report())
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    for dataset in args.datasets:
        for preset in args.presets:
            for seed in args.seeds:
                for fold in args.folds if dataset == "rest14-cv" else [0]:
                    name = f"{preset}{args.tag}__{dataset}__f{fold}__s{seed}.json"
                    dest = OUT / name
                    if dest.exists() and not args.force:
                        continue
                    r = run_one(preset, dataset, fold, seed, args)
                    r["tag"] = args.tag
                    tmp = dest.with_suffix(".tmp")
                    tmp.write_text(json.dumps(r, indent=1))
                    tmp.replace(dest)
                    print(
                        f"{name}: acc {r['test_accuracy'] * 100:.2f} "
                        f"f1 {r['test_macro_f1'] * 100:.2f} ({r['seconds_per_epoch']:.1f} s/epoch)",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
