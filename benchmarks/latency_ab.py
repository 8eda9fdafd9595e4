"""Latency of several artifacts side by side: onnxruntime in this process, the artifacts
timed in turn, a short burst each, for several rounds, so that other jobs on the machine
slow them all alike and the ratios stay meaningful even where the absolute numbers do not.

    python benchmarks/latency_ab.py --name card-vs-fast --threads 1 --rounds 10 \\
        --data ../shared/data/semeval14/Restaurants_Test_Gold.xml.seg \\
        --artifact fast=runs/a/fast --artifact card=runs/a/card

Per artifact: batch-1 p50 (median over the rounds of each round's p50) and batch-64
aspects/s (median over the rounds), and both as a ratio to the first artifact; what a plain
prediction fetches (no self-attention maps). Writes
benchmarks/results/latency_ab/<name>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.runtime import Runtime  # noqa: E402
from benchmarks.latency import _items  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "latency_ab"


class Timed:
    """One artifact's runtime and its encoded items."""

    def __init__(self, path: Path, items: list[tuple[str, int, int]], threads: int) -> None:
        self.rt = Runtime.load(path, device="cpu", threads=threads)
        self.enc = [self.rt.encode(*it) for it in items]
        by_len = sorted(self.enc, key=lambda e: len(e.ids))
        self.batches = [by_len[s : s + 64] for s in range(0, len(by_len), 64)]
        self.p50: list[float] = []
        self.thr: list[float] = []
        for e in self.enc[:50]:  # warm up
            self.rt.run_batch([e], self_attention=False)

    def burst(self, seconds: float) -> None:
        lat, i, end = [], 0, time.perf_counter() + seconds / 2
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            self.rt.run_batch([self.enc[i % len(self.enc)]], self_attention=False)
            lat.append(time.perf_counter() - t0)
            i += 1
        self.p50.append(statistics.median(lat) * 1000)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / 2:
            for b in self.batches:
                self.rt.run_batch(b, self_attention=False)
                n += len(b)
        self.thr.append(n / (time.perf_counter() - t0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", action="append", required=True, help="NAME=PATH, repeated")
    ap.add_argument("--data", type=Path, required=True, help="texts (any reader format)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=2.0, help="per artifact per round")
    args = ap.parse_args()
    items = _items(args.data, 2000)
    timed = {}
    for spec in args.artifact:
        name, _, path = spec.partition("=")
        timed[name] = Timed(Path(path), items, args.threads)
    for _ in range(args.rounds):
        for t in timed.values():
            t.burst(args.seconds)
    base = next(iter(timed.values()))
    p50_0, thr_0 = statistics.median(base.p50), statistics.median(base.thr)
    rows = {}
    for name, t in timed.items():
        p50, thr = statistics.median(t.p50), statistics.median(t.thr)
        rows[name] = {
            "batch1_p50_ms": round(p50, 4),
            "batch64_aspects_per_s": round(thr, 1),
            "batch1_ratio": round(p50 / p50_0, 3),
            "batch64_ratio": round(thr_0 / thr, 3),  # > 1: slower than the first
            "rounds_p50_ms": [round(x, 4) for x in t.p50],
        }
        print(
            f"{name:24s} b1 p50 {p50:.3f} ms ({p50 / p50_0:.2f}x)  b64 {thr:,.0f}/s "
            f"({thr_0 / thr:.2f}x)"
        )
    result = {
        "name": args.name,
        "threads": args.threads,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "data": str(args.data),
        "artifacts": {s.partition("=")[0]: s.partition("=")[2] for s in args.artifact},
        "results": rows,
        "command": " ".join(["python benchmarks/latency_ab.py", *sys.argv[1:]]),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.name}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
