"""Train and evaluate presets on the benchmark sets, several seeds; resumable.

Each (preset, dataset, seed) writes one small JSON file under benchmarks/results/accuracy/;
a run whose file exists is skipped, so an interrupted benchmark continues where it stopped.
Selection uses dev only (MAMS: its official val set; others: a seeded 10% of train).

    python benchmarks/accuracy.py --presets atae-lstm fast --datasets rest14 lap14 --seeds 1 2 3
    python benchmarks/report.py        # writes the table into docs/benchmarks.md

``--jobs N`` runs N at once (each its own process, ``--threads`` torch threads each); on a
borrowed bigger machine give ``--machine`` a label, so the table's s/epoch column keeps
counting only this project's 2-core machine.

Distillation: ``--teacher runs/bench-acc/accurate__{dataset}__s{seed} --tag=-kd`` (the teacher
run kept with ``--keep-runs``; the same seed means the same dev split).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training.evaluate import evaluate  # noqa: E402
from absa.training.presets import PRESETS, load_config  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.rundir import read_info  # noqa: E402
from absa.training.train import fit  # noqa: E402
from benchmarks.datasets import DATASETS, PROJECT_MACHINE, paths  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "accuracy"


def run_one(
    preset_name: str,
    dataset: str,
    seed: int,
    threads: int,
    config: Path | None,
    keep: Path | None = None,
    teacher: str | None = None,
    tag: str = "",
) -> dict:
    p = paths(dataset)
    preset = load_config(config, preset_name)
    preset = replace(preset, train=replace(preset.train, seed=seed, threads=threads))
    if teacher:  # e.g. runs/bench-acc/accurate__{dataset}__s{seed}: same seed, same dev split
        preset = replace(
            preset, train=replace(preset.train, teacher=teacher.format(dataset=dataset, seed=seed))
        )
    train = read_examples(p["train"]).examples
    dev = read_examples(p["dev"]).examples if p["dev"] else None
    test = read_examples(p["test"]).examples
    run_dir = Path(tempfile.mkdtemp(prefix=f"bench-{preset_name}-{dataset}-"))
    if keep is not None:
        run_dir = keep / f"{preset_name}{tag}__{dataset}__s{seed}"  # the result file's name
        shutil.rmtree(run_dir, ignore_errors=True)
    try:
        t0 = time.time()
        res = fit(train, dev, preset, run_dir, progress=False, preset_name=preset_name)
        rep = evaluate(run_dir, test)
        info = read_info(run_dir)
        if info.get("teacher") and info["teacher"]["dev_leak"]:
            raise SystemExit(f"{run_dir}: the teacher trained on the student's dev sentences")
    finally:
        if keep is None:
            shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "preset": preset_name,
        "dataset": dataset,
        "seed": seed,
        "test_accuracy": rep["accuracy"],
        "test_macro_f1": rep["macro_f1"],
        "test_n": rep["n"],
        "dev_accuracy": res.dev["accuracy"],
        "dev_macro_f1": res.dev["macro_f1"],
        "best_epoch": res.best_epoch,
        "epochs_run": len(res.history),
        "seconds_per_epoch": info["seconds_per_epoch"],
        "environment": info["environment"],
        "teacher": info.get("teacher"),
        "train_seconds": round(time.time() - t0, 1),
        "threads": threads,
        "dev_split": info["dev_split"],
        "model_config": preset.model.to_dict(),
        "train_config": preset.train.to_dict(),
        "data_sha256": {k: sha256_file(v) for k, v in p.items() if v},
        "code_version": info["code_version"],  # what trained (at its start), not what is there now
        "command": " ".join(["python benchmarks/accuracy.py", *sys.argv[1:]]),
    }


# longest first, so a pool of workers finishes together
_COST = {"mams": 4, "twitter": 3, "rest14": 2, "lap14": 1}


def _run_and_save(task: dict) -> str:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    r = run_one(
        task["preset"],
        task["dataset"],
        task["seed"],
        task["threads"],
        task["config"],
        task["keep"],
        task["teacher"],
        task["tag"],
    )
    r["tag"] = task["tag"]
    r["machine"] = task["machine"]
    dest = Path(task["dest"])
    tmp = dest.with_suffix(".tmp")
    tmp.write_text(json.dumps(r, indent=1))
    tmp.replace(dest)
    return (
        f"{dest.name}: acc {r['test_accuracy'] * 100:.2f} f1 {r['test_macro_f1'] * 100:.2f} "
        f"({r['seconds_per_epoch']:.1f} s/epoch)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["atae-lstm", "fast"], choices=list(PRESETS))
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process")
    ap.add_argument(
        "--machine",
        default=PROJECT_MACHINE,
        help="where this runs; the table's s/epoch counts only the project machine's runs",
    )
    ap.add_argument("--config", type=Path, help="override file applied on top of each preset")
    ap.add_argument("--tag", default="", help="suffix of the result names (e.g. a variant)")
    ap.add_argument("--force", action="store_true", help="rerun even if a result exists")
    ap.add_argument("--keep-runs", type=Path, help="keep the run directories here (for export)")
    ap.add_argument(
        "--teacher",
        help="distil from this run dir; {dataset} and {seed} are filled in per run",
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    tasks = []
    for dataset in args.datasets:
        for preset in args.presets:
            for seed in args.seeds:
                dest = OUT / f"{preset}{args.tag}__{dataset}__s{seed}.json"
                if dest.exists() and not args.force:
                    continue
                tasks.append(
                    {
                        "preset": preset,
                        "dataset": dataset,
                        "seed": seed,
                        "threads": args.threads,
                        "config": args.config,
                        "keep": args.keep_runs,
                        "teacher": args.teacher,
                        "tag": args.tag,
                        "machine": args.machine,
                        "dest": str(dest),
                    }
                )
    if args.jobs <= 1:
        for t in tasks:
            print(_run_and_save(t), flush=True)
        return
    tasks.sort(key=lambda t: (t["preset"] != "accurate", -_COST[t["dataset"]]))
    ctx = multiprocessing.get_context("spawn")  # no state (or CUDA) shared with the parent
    with ProcessPoolExecutor(args.jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_run_and_save, t): t for t in tasks}
        for f in as_completed(futures):
            t = futures[f]
            try:
                print(f.result(), flush=True)
            except Exception as e:  # one failed run must not lose the others' results
                print(f"{t['preset']}__{t['dataset']}__s{t['seed']}: FAILED {e!r}", flush=True)


if __name__ == "__main__":
    main()
