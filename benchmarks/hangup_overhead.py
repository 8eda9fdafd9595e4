"""What watching for hung-up clients costs a request (service/hangup.py): the layer around an
app that answers after two turns of the event loop, in this process, against the app alone,
and with the connection watched from the start (WATCH_AFTER_S 0: a task per request, what
every request would pay without the delay, and what a request slower than the delay pays).
Rounds interleave the three, so other work on the machine slows them alike; the medians over
rounds are reported.

    python benchmarks/hangup_overhead.py [--requests 20000] [--rounds 5]

Writes benchmarks/results/latency/hangup-overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.service import hangup  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("hangup_overhead")
SCOPE = {"type": "http", "method": "POST", "path": "/v1/predict"}


async def app(scope: dict, receive: object, send: object) -> None:
    """Reads the body, waits on the event loop twice (as a handler awaits the batcher), and
    answers."""
    await receive()  # type: ignore[operator]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": b"{}"})  # type: ignore[operator]


class Connection:
    """A server's side of one request: the body, then http.disconnect once it is answered."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.first = True

    async def receive(self) -> dict:
        if self.first:
            self.first = False
            return {"type": "http.request", "body": b"{}"}
        await self.done.wait()
        return {"type": "http.disconnect"}

    async def send(self, msg: dict) -> None:
        if msg["type"] == "http.response.body":
            self.done.set()


async def per_request_us(layer: object, n: int) -> float:
    """Mean microseconds per request through ``layer``."""
    t0 = time.perf_counter()
    for _ in range(n):
        conn = Connection()
        await layer(SCOPE, conn.receive, conn.send)  # type: ignore[operator]
    return (time.perf_counter() - t0) / n * 1e6


async def measure(n: int, rounds: int) -> dict[str, list[float]]:
    layer = hangup.CancelOnHangUp(app, frozenset({"/v1/predict"}), lambda s: s["path"])
    delay = hangup.WATCH_AFTER_S
    out: dict[str, list[float]] = {"app alone": [], "layer": [], "layer, watched at once": []}
    for _ in range(rounds):
        out["app alone"].append(await per_request_us(app, n))
        out["layer"].append(await per_request_us(layer, n))
        hangup.WATCH_AFTER_S = 0.0
        try:
            out["layer, watched at once"].append(await per_request_us(layer, n))
        finally:
            hangup.WATCH_AFTER_S = delay
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rounds = asyncio.run(measure(args.requests, args.rounds))
    medians = {k: round(statistics.median(v), 2) for k, v in rounds.items()}
    base = medians["app alone"]
    for k, v in medians.items():
        log.info("%-24s %7.2f us a request (+%.2f)", k, v, v - base)
    write_record(
        ROOT / "benchmarks" / "results" / "latency" / "hangup-overhead.json",
        watch_after_s=hangup.WATCH_AFTER_S,
        requests_per_round=args.requests,
        median_us=medians,
        rounds_us={k: [round(x, 2) for x in v] for k, v in rounds.items()},
    )


if __name__ == "__main__":
    main()
