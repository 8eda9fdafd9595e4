"""A candidate sentiment artifact as it would ship, against the shipped one and issue #11's
targets: one result file, and a table.

    python benchmarks/served.py runs/ship-2t-s1 --name test-2t-s1 \\
        --as-served "int8-embeddings, top-map, expand-vocab k100k top 65000 (as 1.8.0)"

The artifact is one that ``benchmarks/default_model.py ... --skip-train --out DIR`` wrote (its
``eval.json``: the four test sets), with ``DIR.dev.json`` beside it from
``benchmarks/dev_sources.py DIR --run RUN --json DIR.dev.json`` (its dev split, per source,
as served). Writes benchmarks/results/served/<name>.json and prints, per test set, the
candidate's accuracy / macro-F1, the shipped artifact's (``--against``) and the target; then
how many of the eight numbers it meets, and whether it is ahead of the shipped one on dev
and on every test number (the rule for shipping a new default up to 1.7.0; 1.8.0 shipped as
the best dev of its recipe's seeds meeting every target 1.7.0 met and more of the ECE ones:
docs/distillation.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.artifact import read_metadata  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("served")

# issue #11: accuracy / macro-F1 (%) of the shipped default on each test set
TARGETS = {
    "rest14": (83.0, 76.0),
    "lap14": (77.0, 73.0),
    "twitter": (73.0, 72.0),
    "mams": (81.0, 80.0),
}
OUT = ROOT / "benchmarks" / "results" / "served"


def read_eval(artifact: Path) -> dict:
    """The artifact's eval.json (default_model.py): ``results`` per test set, ``commands``."""
    return json.loads((artifact / "eval.json").read_text())


def test_scores(results: dict) -> dict[str, tuple[float, float]]:
    """Accuracy and macro-F1 (%) per test set from an eval.json's ``results``."""
    return {k: (100 * v["accuracy"], 100 * v["macro_f1"]) for k, v in results.items()}


def dev_all(dev_json: Path) -> tuple[float, float]:
    """Accuracy and macro-F1 (%) of the whole dev split from a dev_sources.py result."""
    d = json.loads(dev_json.read_text())["dev"]["all"]
    return d["accuracy"], d["macro_f1"]


def reference_dev(artifact: Path) -> tuple[float, float]:
    """The artifact's dev accuracy / macro-F1 (%) as served: its int8 graph's where export
    recorded both (``quantization.dev_macro_f1_int8``, from 1.9.0 on), else the run's."""
    meta = read_metadata(artifact)
    q = meta.get("quantization") or {}
    if "dev_macro_f1_int8" in q:
        return 100 * q["dev_accuracy_int8"], 100 * q["dev_macro_f1_int8"]
    m = meta["metrics"]["dev"]
    return 100 * m["accuracy"], 100 * m["macro_f1"]


def compare(
    cand: dict[str, tuple[float, float]], ref: dict[str, tuple[float, float]]
) -> tuple[int, bool, list[str]]:
    """(targets met of 8, ahead of ``ref`` on every test number, table rows)."""
    met, ahead, rows = 0, True, []
    for name, (ta, tf) in TARGETS.items():
        (a, f), (ra, rf) = cand[name], ref[name]
        met += (a >= ta) + (f >= tf)
        ahead &= a > ra and f > rf
        rows.append(f"| {name} | {a:.2f} / {f:.2f} | {ra:.2f} / {rf:.2f} | {ta:g} / {tf:g} |")
    return met, ahead, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifact", type=Path)
    ap.add_argument("--name", required=True, help="the result file's name (no .json)")
    ap.add_argument("--as-served", required=True, help="how it was exported, in words")
    ap.add_argument("--against", type=Path, default=ROOT / "model" / "artifacts" / "default")
    ap.add_argument(
        "--against-dev",
        type=float,
        nargs=2,
        metavar=("ACC", "F1"),
        help="the shipped artifact's dev accuracy / macro-F1 as served (default: its "
        "metadata's, the quantised graph's where export recorded them, else the fp32 run's)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev_json = args.artifact.with_name(args.artifact.name + ".dev.json")
    for need in (args.artifact / "eval.json", dev_json):
        if not need.is_file():
            ap.error(f"{need}: missing (see this script's docstring for what makes it)")
    evaluated = read_eval(args.artifact)
    cand, ref = test_scores(evaluated["results"]), test_scores(read_eval(args.against)["results"])
    dev = dev_all(dev_json)
    ref_dev = tuple(args.against_dev) if args.against_dev else reference_dev(args.against)
    met, ahead, rows = compare(cand, ref)
    ahead &= dev[0] > ref_dev[0] and dev[1] > ref_dev[1]
    meta = read_metadata(args.artifact)
    result = {
        "artifact": str(args.artifact),
        "as_served": args.as_served,
        "test": evaluated["results"],
        "dev": json.loads(dev_json.read_text())["dev"],
        "targets_met": met,
        "ahead_of": {"artifact": str(args.against), "everywhere": ahead},
        "train": meta.get("train", {}),
        "commands": evaluated.get("commands", []),
        "code_version": meta.get("code_version"),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_record(args.out / f"{args.name}.json", **result)
    lines = [
        f"{args.artifact} as served ({args.as_served}), against {args.against}",
        "| test set | candidate acc / F1 | shipped | target |",
        "|---|---|---|---|",
        *rows,
        f"dev {dev[0]:.2f} / {dev[1]:.2f} (shipped {ref_dev[0]:.2f} / {ref_dev[1]:.2f}); "
        f"targets met {met} of 8; ahead of the shipped one everywhere: {'yes' if ahead else 'no'}",
    ]
    log.info("%s", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
