"""What ABSA_TRACING costs a request (service/tracing.py): the real app with the shipped
model, in this process through httpx's ASGI transport, answering one-aspect /v1/predict
requests one after another, with tracing off, on, and on for one trace in ten
(OTEL_TRACES_SAMPLER=traceidratio, 0.1), the spans sent by OTLP over HTTP to a collector in
this process that accepts and drops them. Rounds interleave the three, so other work on the
machine slows them alike; the medians over rounds are reported.

    python benchmarks/tracing_overhead.py [--requests 2000] [--rounds 5]

Writes benchmarks/results/latency/tracing-overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("tracing_overhead")
BODY = {"text": "The fries were soggy but the burger was great", "aspects": ["burger"]}


class Drop(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that takes every export and keeps nothing."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def per_request_us(mode: str, requests: int) -> float:
    """Mean microseconds a request in ``mode`` (off, on, or sampled: one trace in ten, by
    OTEL_TRACES_SAMPLER), over ``requests`` after 200 to warm up."""
    import httpx

    from absa.service.app import create_app
    from absa.settings import Settings

    if mode == "sampled":
        os.environ.update(OTEL_TRACES_SAMPLER="traceidratio", OTEL_TRACES_SAMPLER_ARG="0.1")
    else:
        os.environ.pop("OTEL_TRACES_SAMPLER", None)
    settings = Settings(device="cpu", threads=1, max_wait_ms=0.0, tracing=mode != "off")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://absa") as client:
            for _ in range(200):
                (await client.post("/v1/predict", json=BODY)).raise_for_status()
            t0 = time.perf_counter()
            for _ in range(requests):
                (await client.post("/v1/predict", json=BODY)).raise_for_status()
            return (time.perf_counter() - t0) / requests * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    collector = ThreadingHTTPServer(("127.0.0.1", 0), Drop)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{collector.server_port}"
    times: dict[str, list[float]] = {"off": [], "on": [], "sampled": []}
    for r in range(args.rounds):
        for mode in times:
            times[mode].append(asyncio.run(per_request_us(mode, args.requests)))
            log.warning("round %d %s: %.1f us a request", r + 1, mode, times[mode][-1])
    collector.shutdown()
    off, on, sampled = (statistics.median(times[m]) for m in ("off", "on", "sampled"))
    write_record(
        ROOT / "benchmarks" / "results" / "latency" / "tracing-overhead.json",
        requests=args.requests,
        rounds=args.rounds,
        us_per_request={"off": round(off, 1), "on": round(on, 1), "sampled": round(sampled, 1)},
        added_us={"on": round(on - off, 1), "sampled": round(sampled - off, 1)},
        rounds_us={k: [round(v, 1) for v in vs] for k, vs in times.items()},
    )
    print(f"a request: off {off:.1f} us, on {on:.1f} us, one trace in ten {sampled:.1f} us")


if __name__ == "__main__":
    main()
