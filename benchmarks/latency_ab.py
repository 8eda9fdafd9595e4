"""Latency of several artifacts side by side: onnxruntime in this process, the artifacts
timed in turn, a short burst each, for several rounds, so that other jobs on the machine
slow them all alike and the ratios stay meaningful even where the absolute numbers do not.

    python benchmarks/latency_ab.py --name card-vs-fast --threads 1 --rounds 10 \\
        --data ../shared/data/semeval14/Restaurants_Test_Gold.xml.seg \\
        --artifact fast=runs/a/fast --artifact card=runs/a/card

Per artifact: batch-1 p50 (median over the rounds of each round's p50) and batch-64
aspects/s (median over the rounds), and both as a ratio to the first artifact; what a plain
prediction fetches (no self-attention maps). ``--extract``: extractor artifacts, one
sentence per call and all sentences in batches of 64 (sentences/s). Writes
benchmarks/results/latency_ab/<name>.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.extractor import Extractor  # noqa: E402
from absa.model.runtime import Runtime  # noqa: E402
from absa.training.sentences import read_sentences  # noqa: E402
from benchmarks.latency import _items  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "latency_ab"


class Timed:
    """One artifact's calls: ``one(i)`` serves the i-th item alone, ``every()`` serves every
    item in batches of 64 and returns how many."""

    def __init__(self, one: Callable[[int], object], every: Callable[[], int]) -> None:
        self.one, self.every = one, every
        self.p50: list[float] = []
        self.thr: list[float] = []
        for i in range(50):  # warm up
            one(i)

    @classmethod
    def sentiment(cls, path: Path, items: list[tuple[str, int, int]], threads: int) -> Timed:
        rt = Runtime.load(path, device="cpu", threads=threads)
        enc = [rt.encode(*it) for it in items]
        by_len = sorted(enc, key=lambda e: len(e.ids))
        batches = [by_len[s : s + 64] for s in range(0, len(by_len), 64)]

        def every() -> int:
            for b in batches:
                rt.run_batch(b, self_attention=False)
            return len(enc)

        return cls(lambda i: rt.run_batch([enc[i % len(enc)]], self_attention=False), every)

    @classmethod
    def extractor(cls, path: Path, texts: list[str], threads: int) -> Timed:
        ext = Extractor.load(path, device="cpu", threads=threads)
        return cls(lambda i: ext.extract([texts[i % len(texts)]]),
                   lambda: len(ext.extract(texts, max_batch=64)))  # fmt: skip

    def burst(self, seconds: float) -> None:
        lat, i, end = [], 0, time.perf_counter() + seconds / 2
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            self.one(i)
            lat.append(time.perf_counter() - t0)
            i += 1
        self.p50.append(statistics.median(lat) * 1000)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / 2:
            n += self.every()
        self.thr.append(n / (time.perf_counter() - t0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", action="append", required=True, help="NAME=PATH, repeated")
    ap.add_argument("--data", type=Path, required=True, help="texts (any reader format)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=2.0, help="per artifact per round")
    ap.add_argument("--extract", action="store_true",
                    help="extractor artifacts, timed on the data's sentence texts")  # fmt: skip
    args = ap.parse_args()
    timed = {}
    if args.extract:
        texts = [s.text for s in read_sentences(args.data)]
    else:
        items = _items(args.data, 2000)
    for spec in args.artifact:
        name, _, path = spec.partition("=")
        if args.extract:
            timed[name] = Timed.extractor(Path(path), texts, args.threads)
        else:
            timed[name] = Timed.sentiment(Path(path), items, args.threads)
    unit = "sentences" if args.extract else "aspects"
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
            f"batch64_{unit}_per_s": round(thr, 1),
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
    write_record(OUT / f"{args.name}.json", **result)


if __name__ == "__main__":
    main()
