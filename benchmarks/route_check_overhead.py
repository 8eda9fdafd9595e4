"""What refusing over-long lists before validation costs a request (service/routes/predict.py,
``_ListsFirst``): a route taking the service's own ``PredictRequest`` body, called in this
process through the ASGI interface, plain, with the check as the predict routes run it (the
route class), and with the same check as a FastAPI dependency (the first form it took).
Rounds interleave the three, so other work on the machine slows them alike; the medians over
rounds are reported.

    python benchmarks/route_check_overhead.py [--requests 3000] [--rounds 9]

Writes benchmarks/results/latency/route-check-overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastapi import APIRouter, Depends, FastAPI, Request  # noqa: E402

from absa.service.engine import BatchEngine  # noqa: E402
from absa.service.routes import predict  # noqa: E402
from absa.service.schemas import PredictRequest  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("route_check_overhead")
BODY = json.dumps(
    {"text": "The fries were soggy but the burger was great", "aspects": ["burger", "fries"]}
).encode()
SCOPE = {
    "type": "http",
    "method": "POST",
    "path": "/v1/predict",
    "raw_path": b"/v1/predict",
    "query_string": b"",
    "root_path": "",
    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))],
    "http_version": "1.1",
    "scheme": "http",
    "server": ("bench", 80),
    "client": ("bench", 1),
}


async def _as_dependency(request: Request) -> None:
    await predict._lists_fit(request, batch=False)


def make(kind: str) -> FastAPI:
    """An app of one route that validates the body and answers a constant: ``kind`` plain,
    route (the predict routes' class) or dependency."""
    app = FastAPI()
    # what _lists_fit reads: the engine's limit check (BatchEngine.fits, unbound) and settings
    engine = SimpleNamespace(max_batch=64, max_queue=8192, heavy_limit=6144)
    engine.fits = lambda n: BatchEngine.fits(engine, n)  # type: ignore[arg-type]
    app.state.engine, app.state.settings = engine, SimpleNamespace(max_items=64)
    router = APIRouter(route_class=predict._ListsFirst) if kind == "route" else APIRouter()
    deps = [Depends(_as_dependency)] if kind == "dependency" else []

    @router.post("/v1/predict", dependencies=deps)
    async def answer(req: PredictRequest) -> dict:
        return {"n": req.n_aspects}

    app.include_router(router)
    return app


async def call(app: FastAPI) -> None:
    sent: list[dict] = []
    first = True

    async def receive() -> dict:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": BODY, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(msg: dict) -> None:
        sent.append(msg)

    await app(dict(SCOPE), receive, send)
    assert sent[0]["status"] == 200, sent


async def measure(requests: int, rounds: int) -> dict[str, float]:
    apps = {k: make(k) for k in ("plain", "route", "dependency")}
    for app in apps.values():  # warm up
        for _ in range(200):
            await call(app)
    times: dict[str, list[float]] = {k: [] for k in apps}
    for _ in range(rounds):
        for kind, app in apps.items():
            t = time.perf_counter()
            for _ in range(requests):
                await call(app)
            times[kind].append((time.perf_counter() - t) / requests * 1e6)
    return {k: round(statistics.median(v), 2) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    us = asyncio.run(measure(args.requests, args.rounds))
    added = {k: round(v - us["plain"], 2) for k, v in us.items() if k != "plain"}
    log.info("us per request: %s; added: %s", us, added)
    write_record(
        ROOT / "benchmarks" / "results" / "latency" / "route-check-overhead.json",
        requests=args.requests,
        rounds=args.rounds,
        us_per_request_median=us,
        us_added=added,
    )


if __name__ == "__main__":
    main()
