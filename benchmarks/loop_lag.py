"""Event-loop lag while threads encode heavy requests: why the service uses one thread for
heavy work and a 1 ms GIL switch interval (service/app.py, service/engine.py).

An asyncio loop sleeps 1 ms at a time and records how late it wakes, while N threads encode
a 32-aspect request over and over (pure Python, holding the GIL), for each switch interval.

    python benchmarks/loop_lag.py --name default

Writes benchmarks/results/loop_lag/<name>.json. Run it on a quiet machine: other processes
add their own delays.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path

from absa.api import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.records
from benchmarks.records import write_record  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "loop_lag"
WORDS = [f"word{i}" for i in range(40)]
TEXT = "the " + " and the ".join(WORDS) + " ."


async def lag(threads: int, seconds: float) -> dict:
    predictor = load().predictor
    stop = threading.Event()

    def encode() -> None:
        while not stop.is_set():
            predictor.preprocess(TEXT, WORDS[:32])

    workers = [threading.Thread(target=encode) for _ in range(threads)]
    for t in workers:
        t.start()
    lags: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - t0 - 0.001)
        sum(range(2000))  # a little Python work, as a request's handling has
    stop.set()
    for t in workers:
        t.join()
    lags.sort()

    def ms(q: float) -> float:
        return round(1000 * lags[min(len(lags) - 1, int(q * len(lags)))], 2)

    return {"wakeups": len(lags), "p50_ms": ms(0.5), "p99_ms": ms(0.99), "max_ms": ms(1.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="loop-lag")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--intervals-ms", type=float, nargs="+", default=[5.0, 1.0])
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    rows = []
    for interval in args.intervals_ms:
        for n in args.threads:
            sys.setswitchinterval(interval / 1000)
            row = {"switch_interval_ms": interval, "threads": n}
            row.update(asyncio.run(lag(n, args.seconds)))
            rows.append(row)
            print(row, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    out = {
        "name": args.name,
        "machine": f"{os.cpu_count()} cores",
        "load_average_at_end": os.getloadavg()[0],
        "command": " ".join(["python benchmarks/loop_lag.py", *sys.argv[1:]]),
        "rows": rows,
    }
    write_record(OUT / f"{args.name}.json", **out)


if __name__ == "__main__":
    main()
