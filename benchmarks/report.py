"""Aggregate benchmarks/results/ (accuracy, latency, bulk, transfer) into docs/benchmarks.md.

    python benchmarks/report.py

Rewrites the part of docs/benchmarks.md between the accuracy markers; mean ± std over seeds.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.datasets import PROJECT_MACHINE  # noqa: E402
from benchmarks.fmt import mean_sd  # noqa: E402
from benchmarks.transfer_table import tables as transfer_tables  # noqa: E402

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"
START, END = "<!-- accuracy:start -->", "<!-- accuracy:end -->"
DATASETS = ["rest14", "lap14", "twitter", "mams"]


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
            if rs:
                seeds.add(len(rs))
            cells += [mean_sd([r[f"test_{m}"] for r in rs]) for m in ("accuracy", "macro_f1")]
        spe = [  # speed on the project's own 2-core machine only
            r["seconds_per_epoch"]
            for r in runs.get((p, "rest14"), [])
            if r.get("machine", PROJECT_MACHINE) == PROJECT_MACHINE
        ]
        speed = f"{statistics.mean(spe):.1f}" if spe else "–"
        lines.append(
            f"| {p} | "
            + " | ".join(cells)
            + f" | {speed} | {'/'.join(str(s) for s in sorted(seeds))} |"
        )
    return "\n".join(lines)


def latency_table(folder: str = "latency") -> str:
    """benchmarks/results/<folder>/*.json (benchmarks/latency.py): a row per run; the GPU
    runs (folder ``gpu``) with the device each ran on and HTTP at 256 connections too."""
    gpu = folder == "gpu"
    rows = [
        "| model | artifact | torch b1 p50 / p99 ms | ort b1 p50 / p99 ms | torch b64 /s "
        "| ort b64 /s | HTTP c1 p50 / p99 ms | HTTP c8 p50 / p99, /s | HTTP c64 p50 / p99, /s |"
        + (" HTTP c256 p50 / p99, /s, non-2xx | device |" if gpu else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if gpu else ""),
    ]
    for f in sorted((HERE / "results" / folder).glob("*.json")):
        r = json.loads(f.read_text())
        if "ort" not in r:  # not a latency.py result (gpu_check.py's)
            continue
        t, o = r.get("torch"), r["ort"]
        http = {h["concurrency"]: h for h in r["http"]}

        def h(c: int, rate: bool = True, http: dict = http) -> str:
            x = http.get(c)
            if not x:
                return "–"
            s = f"{x['p50_ms']:.1f} / {x['p99_ms']:.1f}"
            return s + (f", {x['aspects_per_s']:.0f}" if rate else "")

        tb1 = f"{t['batch1']['p50_ms']:.2f} / {t['batch1']['p99_ms']:.1f}" if t else "–"
        tb64 = f"{t['batch64_aspects_per_s']:.0f}" if t else "–"
        workers = r.get("workers", 1)
        rows.append(
            f"| {r['name']} ({workers} worker{'s' if workers > 1 else ''}) "
            f"| {r['artifact_bytes'] / 1e6:.1f} MB {r['quantization']} | {tb1} "
            f"| {o['batch1']['p50_ms']:.2f} / {o['batch1']['p99_ms']:.1f} | {tb64} "
            f"| {o['batch64_aspects_per_s']:.0f} | {h(1, False)} | {h(8)} | {h(64)} |"
        )
        if gpu:
            x = http.get(256)
            bad = f", {x['non2xx']}" if x else ""
            device = r.get("gpu", "").split(",")[0] or f"CPU, {o['threads']} threads"
            rows[-1] += f" {h(256)}{bad} | {device} |"
    return "\n".join(rows)


def bulk_table() -> str:
    """benchmarks/results/bulk/*.json (benchmarks/bulk.py): one row per config."""
    rows = [
        "| config | rows | seconds | rows/s | rows/s per worker | start-up s | peak RSS "
        "| load avg (1 min) before / after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted((HERE / "results" / "bulk").glob("*.json")):
        r = json.loads(path.read_text())
        rss = f"{r['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in r else "–"
        rows.append(
            f"| {r['config']} | {r['rows']:,} | {r['seconds']:.1f} | {r['rows_per_s']:,.0f} "
            f"| {r['rows_per_s_per_worker']:,.0f} | {r.get('startup_seconds', 0):.1f} | {rss} "
            f"| {r['loadavg_before'][0]:.1f} / {r['loadavg_after'][0]:.1f} |"
        )
    return "\n".join(rows)


def _replace(doc: str, start: str, end: str, body: str) -> str:
    if start not in doc or end not in doc:
        raise SystemExit(f"{DOC}: the markers {start} ... {end} are missing")
    pre, rest = doc.split(start, 1)
    _, post = rest.split(end, 1)
    return pre + start + "\n" + body + "\n" + end + post


def main() -> None:
    doc = DOC.read_text()
    doc = _replace(doc, START, END, table())
    doc = _replace(doc, "<!-- latency:start -->", "<!-- latency:end -->", latency_table())
    doc = _replace(doc, "<!-- gpu:start -->", "<!-- gpu:end -->", latency_table("gpu"))
    doc = _replace(doc, "<!-- bulk:start -->", "<!-- bulk:end -->", bulk_table())
    doc = _replace(doc, "<!-- transfer:start -->", "<!-- transfer:end -->", transfer_tables())
    DOC.write_text(doc)
    print(table())
    print(latency_table())


if __name__ == "__main__":
    main()
