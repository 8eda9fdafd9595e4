"""Distilled union students of one teacher, several seeds: train, export, evaluate; resumable.

    python benchmarks/distill.py --name union-fast-kd-transfer-mpnet \\
        --config benchmarks/configs/default-kd-mpnet.json \\
        --transfer runs/transfer-set-union.jsonl --seeds 1 2 3 [--threads 1] [--jobs 2]
    python benchmarks/distill.py --report [NAME ...]     # the table of the result files

Each seed trains the student the way the shipped model is trained (the four training sets,
their test sentences excluded; ``benchmarks/default_model.py``; ``--train-more``: the
train-only sets' aspects too, dev still held out of the four sets), exports it and evaluates
the artifact on the four test sets; one JSON per (name, seed) in benchmarks/results/distill/,
skipped when it exists. A seed cut off in training goes on from its run's checkpoint
(``absa train --resume``: after each epoch, and every 30 minutes within one). The teacher is
the config's ``train.teacher``, trained beforehand on the same data with one seed
(``default_model.py --teacher-run``): every student keeps that seed's dev split
(``--dev-seed``, default the teacher's seed), so no student's dev sentence was in the
teacher's training data (``teacher.dev_leak`` = 0 in each file, checked). The teacher's own
test scores are measured once per teacher and kept beside the students'.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.training import rundir  # noqa: E402
from absa.training.presets import load_config  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from benchmarks import default_model  # noqa: E402
from benchmarks.datasets import DATASETS, PROJECT_MACHINE, paths, train_more_args  # noqa: E402
from benchmarks.fmt import mean_sd  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "distill"
RUNS = ROOT / "runs" / "distill"
ABSA = [sys.executable, "-m", "absa.cli"]


def tests() -> dict[str, str]:
    return {d: str(paths(d)["test"]) for d in DATASETS}


def teacher_scores(teacher: Path) -> dict:
    """The teacher's test scores, measured once per teacher weights (a file per teacher)."""
    return default_model.teacher_scores(ABSA, teacher, tests(), OUT)


def student(args: argparse.Namespace, seed: int, teacher: dict) -> Path:
    """Train, export and evaluate one seed; write its result file."""
    out = OUT / f"{args.name}.s{seed}.json"
    run, art = RUNS / f"{args.name}.s{seed}", RUNS / f"{args.name}.s{seed}.artifact"
    cmds: list[str] = []

    def step(cmd: list[str], done: bool = False) -> str:
        """Run ``cmd``, or (``done``: its output is there, a session cut off after it) record
        it without running it."""
        return default_model.run(cmd, execute=not done, record=cmds)

    trains = [str(paths(d)["train"]) for d in DATASETS]
    extra = ["--transfer", *map(str, args.transfer)] if args.transfer else []
    if args.train_more:  # dev stays the four sets' split, so dev compares with the others
        extra += [*train_more_args(), "--dev-from-train"]
    step(
        [*ABSA, "train", "--train", *trains, "--exclude", *tests().values()]
        + ["--config", str(args.config), *extra, "--seed", str(seed)]
        + ["--dev-seed", str(args.dev_seed), "--threads", str(args.threads), "--quiet"]
        + ["--out", str(run), "--resume"],  # a seed cut off with the session goes on
        done=(run / "run.json").is_file(),  # trained to the end already
    )
    export = [*ABSA, "export", "--run", str(run), "--out", str(art), "--name", args.name]
    step(export, done=(art / "metadata.json").is_file())  # export writes it whole, or not
    scores = default_model.evaluate_all(ABSA, art, tests(), record=cmds)
    info, metrics = rundir.read_info(run), rundir.read_metrics(run)
    for who in [info["teacher"], *(f["teacher"] for f in info.get("teacher_folds") or [])]:
        if who["dev_leak"] != 0:
            raise SystemExit(f"{run}: {who['dev_leak']} dev sentences teacher {who['path']} saw")
    result = {
        "run": default_model.shown(run),
        "seed": seed,
        "dev_seed": args.dev_seed,
        "preset": info["preset"],
        "config": str(args.config),
        "dev": {k: metrics["dev"][k] for k in ("accuracy", "macro_f1")},
        "dev_by_source": metrics["dev"].get("by_source"),  # runs since source_scores.py
        "best_epoch": metrics["best_epoch"],
        "test": scores,
        "teacher": info["teacher"],
        "teacher_folds": info.get("teacher_folds"),  # the out-of-fold teachers, if any
        "teacher_test": teacher["test"],
        "transfer": info.get("transfer"),
        "data": info["data"],
        "code_version": info["code_version"],  # the code that trained the run (at its start)
        "scored_code_version": code_version(),  # the code that exported and scored it
        "environment": info["environment"],
        "train_seconds": info["train_seconds"],
        "commands": cmds,
        "machine": args.machine,
    }
    write_record(out, **result)
    return out


def report(names: list[str] | None = None) -> str:
    """A markdown table of the result files: per student name, accuracy / macro-F1 on dev and
    the four test sets, mean ± sd over its seeds (the seeds listed), teacher rows first."""
    rows = [
        "| model | seeds | dev | " + " | ".join(DATASETS) + " |",
        "|---" * (3 + len(DATASETS)) + "|",
    ]
    for path in sorted(OUT.glob("teacher-*.json")):
        if path.name.startswith("teacher-gap__"):  # benchmarks/teacher_gap.py's, not a record
            continue
        t = json.loads(path.read_text())
        cells = [_cell([t["dev"]])] + [_cell([t["test"][d]]) for d in DATASETS]
        who = f"teacher `{t['teacher']}` (weights {t['sha256'][:8]})"
        rows.append(f"| {who} | {t['seed']} | " + " | ".join(cells) + " |")
    by_name: dict[str, list[dict]] = {}
    for path in sorted(OUT.glob("*.s*.json")):
        name = path.name.rsplit(".s", 1)[0]
        if names is None or name in names:
            by_name.setdefault(name, []).append(json.loads(path.read_text()))
    for name, results in by_name.items():
        seeds = ", ".join(str(r["seed"]) for r in results)
        cells = [_cell([r["dev"] for r in results])]
        cells += [_cell([r["test"][d] for r in results]) for d in DATASETS]
        rows.append(f"| {name} | {seeds} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _cell(scores: list[dict]) -> str:
    acc = mean_sd([s["accuracy"] for s in scores])
    return f"{acc} / {mean_sd([s['macro_f1'] for s in scores])}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", help="the result files' stem")
    ap.add_argument("--config", type=Path, help="a student config with a teacher")
    ap.add_argument(
        "--transfer", type=Path, nargs="+",
        help="transfer sets (benchmarks/transfer_set.py, benchmarks/transfer_subst.py)",
    )  # fmt: skip
    ap.add_argument(
        "--train-more",
        action="store_true",
        help="the train-only sets' aspects too (--train-more, dev held out of the four sets)",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--dev-seed", type=int, help="default: the teacher run's seed")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per student")
    ap.add_argument("--jobs", type=int, default=1, help="students trained at once")
    ap.add_argument("--machine", default=f"the {PROJECT_MACHINE}")
    ap.add_argument(
        "--report", nargs="*", metavar="NAME", help="print the table of the results (these names)"
    )
    args = ap.parse_args()
    if args.report is not None:
        print(report(args.report or None))
        return
    if not (args.name and args.config):
        ap.error("--name and --config are needed to train students")
    teacher_dir = Path(load_config(args.config, None).train.teacher)
    if not rundir.is_run(teacher_dir):
        raise SystemExit(f"{args.config}: teacher {teacher_dir} is not a training run")
    if args.dev_seed is None:
        args.dev_seed = rundir.read_info(teacher_dir)["seed"]
    teacher = teacher_scores(teacher_dir)
    todo = [s for s in args.seeds if not (OUT / f"{args.name}.s{s}.json").exists()]
    RUNS.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # each student is a subprocess
        for path in pool.map(lambda s: student(args, s, teacher), todo):
            print(f"wrote {default_model.shown(path)}", flush=True)


if __name__ == "__main__":
    main()
