"""Aggregate benchmarks/results/accuracy/*.json into the table in docs/benchmarks.md.

    python benchmarks/report.py

Rewrites the part of docs/benchmarks.md between the accuracy markers; mean ± std over seeds.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"
START, END = "<!-- accuracy:start -->", "<!-- accuracy:end -->"
DATASETS = ["rest14", "lap14", "twitter", "mams"]


def _ms(values: list[float]) -> str:
    if not values:
        return "–"
    mean = statistics.mean(values) * 100
    if len(values) == 1:
        return f"{mean:.2f}"
    return f"{mean:.2f} ± {statistics.stdev(values) * 100:.2f}"


def table() -> str:
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for f in sorted((HERE / "results" / "accuracy").glob("*.json")):
        r = json.loads(f.read_text())
        runs[(r["preset"] + r.get("tag", ""), r["dataset"])].append(r)
    presets = sorted({p for p, _ in runs}, key=lambda p: (p in ("fast", "accurate"), p))
    head = (
        "| preset | "
        + " | ".join(f"{d} acc | {d} F1" for d in DATASETS)
        + " | s/epoch (rest14) | seeds |"
    )
    sep = "|---" * (2 + 2 * len(DATASETS) + 1) + "|"
    lines = [head, sep]
    for p in presets:
        cells = []
        seeds = set()
        for d in DATASETS:
            rs = runs.get((p, d), [])
            seeds.add(len(rs))
            cells += [_ms([r["test_accuracy"] for r in rs]), _ms([r["test_macro_f1"] for r in rs])]
        spe = [r["seconds_per_epoch"] for r in runs.get((p, "rest14"), [])]
        speed = f"{statistics.mean(spe):.1f}" if spe else "–"
        lines.append(
            f"| {p} | "
            + " | ".join(cells)
            + f" | {speed} | {'/'.join(str(s) for s in sorted(seeds))} |"
        )
    return "\n".join(lines)


def main() -> None:
    doc = DOC.read_text()
    if START not in doc or END not in doc:
        raise SystemExit(f"{DOC}: the accuracy markers are missing")
    pre, rest = doc.split(START, 1)
    _, post = rest.split(END, 1)
    DOC.write_text(pre + START + "\n" + table() + "\n" + END + post)
    print(table())


if __name__ == "__main__":
    main()
