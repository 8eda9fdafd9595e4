"""Issue #11: how often students scored as served meet each of the eight test targets, and
how far each target is from the students' mean: whether more seeds of the recipes tried
could meet all eight, or the mean has to move.

    python benchmarks/target_odds.py [--results benchmarks/results/served] \
        [--glob 'test-*-s*.json'] [--json benchmarks/results/served/target-odds.json]

Reads every served result file (benchmarks/served.py writes them: one student, one seed) and
prints a Markdown table: per target, the students that meet it, the mean and standard
deviation over them, and the gap from the mean to the target; then how many targets each
student meets. Every student counts once, whatever its recipe: the question is what the
recipes tried so far reach, not which one is best.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.records import write_record  # noqa: E402
from benchmarks.served import OUT, TARGETS, test_scores  # noqa: E402

KINDS = ("accuracy", "macro-F1")


def met_count(scores: dict[str, tuple[float, float]]) -> int:
    """How many of the eight targets one student's test scores meet."""
    return sum(scores[n][i] >= TARGETS[n][i] for n in TARGETS for i in (0, 1))


def odds(files: list[Path]) -> dict:
    """Per target (``"<set> <kind>"``): met, mean, sd, gap (target - mean, > 0: short);
    ``met_of_8``: how many students meet n targets; ``all``: the students that meet all."""
    scores = {f.stem: test_scores(json.loads(f.read_text())["test"]) for f in files}
    targets, met = {}, Counter()
    for name, (ta, tf) in TARGETS.items():
        for kind, target, i in ((KINDS[0], ta, 0), (KINDS[1], tf, 1)):
            values = [s[name][i] for s in scores.values()]
            targets[f"{name} {kind}"] = {
                "target": target,
                "met": sum(v >= target for v in values),
                "mean": statistics.mean(values),
                "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
                "gap": target - statistics.mean(values),
            }
    meets = {k: met_count(s) for k, s in scores.items()}
    met.update(meets.values())
    every = [k for k, m in meets.items() if m == 2 * len(TARGETS)]
    return {
        "students": len(scores),
        "targets": targets,
        "met_of_8": dict(sorted(met.items())),
        "all": every,
    }


def table(result: dict) -> str:
    n = result["students"]
    rows = [
        f"| target | value | met (of {n}) | mean ± sd | mean short by |",
        "|---|---|---|---|---|",
    ]
    for key, t in result["targets"].items():
        short = f"{t['gap']:.2f}" if t["gap"] > 0 else "–"
        rows.append(
            f"| {key} | {t['target']:g} | {t['met']} | {t['mean']:.2f} ± {t['sd']:.2f} | {short} |"
        )
    spread = ", ".join(f"{k}: {v}" for k, v in result["met_of_8"].items())
    rows += ["", f"Targets met per student (of 8: students): {spread}."]
    rows.append(f"All eight: {', '.join(result['all']) or 'none'}.")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=OUT)
    ap.add_argument("--glob", default="test-*-s*.json", help="which result files count")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    files = sorted(args.results.glob(args.glob))
    if not files:
        raise SystemExit(f"no result files {args.glob} in {args.results}")
    result = odds(files)
    if args.json:
        write_record(args.json, **{**result, "files": [f.name for f in files]})
    sys.stdout.write(table(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
