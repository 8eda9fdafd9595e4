"""Load test over loopback: saturation throughput, then overload.

Starts `absa serve` on a free loopback port, finds the saturation throughput with wrk
(Debian package `wrk`) at a few concurrencies (one-aspect requests to /v1/predict, and
/v1/predict/batch with --batch-items one-aspect items), then offers far more load than
saturates the server for a fixed time (--overload x the saturating concurrency, the
smallest within 5% of the best throughput, but never fewer than --min-overload connections,
320 by default: 10x the c=32 at which the 2-worker server saturates in every quiet run, so
that a saturation search that happens to stop at c=8 does not make the overload easy;
closed loop: wrk2's open loop is not packaged). `--phases` runs a subset. The server must
shed the excess with 503 + Retry-After (ABSA_MAX_IN_FLIGHT requests in flight per worker,
ABSA_MAX_QUEUE aspects queued) instead of growing latency and memory. During the overload
a probe client sends, one at a time, a one-aspect request and GET /healthz over fresh
connections, as a user and a liveness probe would: their latencies are what "accepted
p99" and "/healthz" mean below.
The server's RSS is sampled every second. Every answer must be 200 or 503: any other 5xx
fails the run (exit status 1).

Targets (issue #13): at 10x saturation, p99 of accepted requests <= 250 ms, /healthz
<= 100 ms, RSS growth <= 50 MB, the rest 503 with Retry-After; with 2 workers at
concurrency 64, >= 2,500 aspects/s one-aspect requests and >= 8,000 aspects/s through
/v1/predict/batch. `"targets"` in the results says which were met.

    python benchmarks/load.py --workers 2 --name overload-2w --seconds 30

Writes benchmarks/results/load/<name>.json and prints a summary. Stops by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.records
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "load"
DEFAULT_MODEL = ROOT / "model" / "artifacts" / "default"
SENTENCES = [
    ("The fries were soggy but the burger was great .", "burger"),
    ("The fries were soggy but the burger was great .", "fries"),
    ("Service was slow and the waiter forgot our drinks .", "Service"),
    ("Great wine list , average food , friendly staff .", "wine list"),
    ("The battery life is amazing but the screen scratches easily .", "battery life"),
    ("The battery life is amazing but the screen scratches easily .", "screen"),
    ("I would not come back for the pizza , though the view is lovely .", "pizza"),
    ("Prices are fair for the portion size .", "Prices"),
]

# wrk Lua: rotate the bodies; count statuses in `response` (per wrk thread, summed in `done`)
WRK_LUA = """
local bodies = {BODIES}
local threads = {}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  ok, busy, client_err, server_err = 0, 0, 0, 0
end
request = function()
  i = i + 1
  return wrk.format(nil, "{PATH}", nil, bodies[(i % #bodies) + 1])
end
response = function(status, headers, body)
  if status == 200 then ok = ok + 1
  elseif status == 503 then busy = busy + 1
  elseif status >= 500 then server_err = server_err + 1
  else client_err = client_err + 1 end
end
done = function(summary, latency, requests)
  local c = {ok = 0, busy = 0, client_err = 0, server_err = 0}
  for _, t in ipairs(threads) do
    for k, _ in pairs(c) do c[k] = c[k] + t:get(k) end
  end
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests": %d, "duration_us": %d, "p50_us": %d, '
    .. '"p99_us": %d, "max_us": %d, "200": %d, "503": %d, "other_4xx": %d, "other_5xx": %d, '
    .. '"socket_errors": %d, "timeouts": %d}\\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max, c.ok, c.busy, c.client_err,
    c.server_err, e.connect + e.read + e.write, e.timeout))
end
"""


PHASES = ("saturation", "batch", "heavy", "overload")


def saturating(steps: list[dict]) -> dict | None:
    """The saturation step: the smallest concurrency within 5% of the best throughput."""
    best = max((s["ok_per_s"] for s in steps), default=None)
    return next((s for s in steps if best is not None and s["ok_per_s"] >= 0.95 * best), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of the process and its children (uvicorn workers), in MiB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text().splitlines()
            total += next(int(ln.split()[1]) for ln in status if ln.startswith("VmRSS"))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration):
            continue  # gone, or a kernel thread without VmRSS
    return total / 1024


class RssSampler(threading.Thread):
    def __init__(self, pid: int, every: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, float]] = []
        self.stopped = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append((round(time.monotonic() - self.t0, 1), round(rss_mb(self.pid), 1)))
            self.stopped.wait(self.every)

    def stop(self) -> list[tuple[float, float]]:
        self.stopped.set()
        self.join()
        self.samples.append((round(time.monotonic() - self.t0, 1), round(rss_mb(self.pid), 1)))
        return self.samples


class Prober:
    """Two clients, one request at a time each on a fresh connection: one sends one-aspect
    predicts, the other GET /healthz every ``every`` seconds (apart, so a refused predict's
    pause does not thin out the /healthz samples)."""

    def __init__(self, url: str, every: float = 0.05) -> None:
        self.url, self.every = url, every
        self.stopped = threading.Event()
        self.health: list[float] = []
        self.accepted: list[float] = []
        self.statuses: dict[str, int] = {}
        self.retry_after_missing = 0
        body = {"text": SENTENCES[0][0], "aspects": [SENTENCES[0][1]]}
        self.body = json.dumps(body).encode()
        self.threads = [
            threading.Thread(target=self._predicts, daemon=True),
            threading.Thread(target=self._healthz, daemon=True),
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _timed(self, req: urllib.request.Request) -> tuple[int, float, dict]:
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                r.read()
                status, headers = r.status, {k.lower(): v for k, v in r.headers.items()}
        except urllib.error.HTTPError as e:
            e.read()
            status, headers = e.code, {k.lower(): v for k, v in e.headers.items()}
        except OSError:
            status, headers = 0, {}
        return status, time.perf_counter() - t0, headers

    def _predicts(self) -> None:
        headers = {"Content-Type": "application/json"}
        while not self.stopped.is_set():
            req = urllib.request.Request(f"{self.url}/v1/predict", self.body, headers)
            status, secs, h = self._timed(req)
            self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
            if status == 200:
                self.accepted.append(secs)
            elif status == 503 and "retry-after" not in h:
                self.retry_after_missing += 1
            self.stopped.wait(self.every)

    def _healthz(self) -> None:
        while not self.stopped.is_set():
            status, secs, _ = self._timed(urllib.request.Request(f"{self.url}/healthz"))
            self.health.append(secs if status == 200 else float("inf"))
            self.stopped.wait(self.every)

    def stop(self) -> dict:
        self.stopped.set()
        for t in self.threads:
            t.join()

        def pct(xs: list[float], q: float) -> float | None:
            if not xs:
                return None
            xs = sorted(xs)
            return round(1000 * xs[min(len(xs) - 1, int(q * len(xs)))], 1)

        return {
            "predict_statuses": self.statuses,
            "accepted_p50_ms": pct(self.accepted, 0.5),
            "accepted_p99_ms": pct(self.accepted, 0.99),
            "accepted_max_ms": pct(self.accepted, 1.0),
            "healthz_n": len(self.health),
            "healthz_p50_ms": pct(self.health, 0.5),
            "healthz_p99_ms": pct(self.health, 0.99),
            "healthz_max_ms": pct(self.health, 1.0),
            "retry_after_missing": self.retry_after_missing,
        }


def wrk(url: str, script: str, connections: int, seconds: int, threads: int) -> dict:
    cmd = ["wrk", f"-t{min(threads, connections)}", f"-c{connections}", f"-d{seconds}s"]
    cmd += ["--timeout", "10s", "--latency", "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 60)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("WRKJSON "))
    r = json.loads(line[len("WRKJSON ") :])
    secs = r["duration_us"] / 1e6
    return {
        "connections": connections,
        "seconds": round(secs, 2),
        "requests_per_s": round(r["requests"] / secs, 1),
        "ok_per_s": round(r["200"] / secs, 1),
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "max_ms": r["max_us"] / 1000,
        "statuses": {k: r[k] for k in ("200", "503", "other_4xx", "other_5xx")},
        "socket_errors": r["socket_errors"],
        "timeouts": r["timeouts"],
    }


def metric(url: str, name: str) -> float:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    return sum(float(ln.split()[-1]) for ln in text.splitlines() if ln.startswith(name + " "))


def start_server(args: argparse.Namespace, port: int, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "ABSA_THREADS": str(args.server_threads),
        "ABSA_MAX_QUEUE": str(args.max_queue),
        "ABSA_MAX_IN_FLIGHT": str(args.max_in_flight),
        "ABSA_WORKERS": str(args.workers),
        "ABSA_MAX_ITEMS": str(max(64, args.batch_items)),
        "ABSA_DEVICE": args.device,
        "ABSA_LOG_LEVEL": "warning",  # no access log: it would cost more than the model
    }
    cmd = [sys.executable, "-m", "absa.cli", "serve", "--model", str(args.model)]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as f:
        server = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise SystemExit(f"the server did not become ready:\n{log.read_text()}") from None
            time.sleep(0.2)


def heavy_bodies() -> list[str]:
    """Heavy requests of issue #13: 64 items x 32 aspects, and 32 aspects with explain."""
    words = [f"word{i}" for i in range(40)]
    text = "the " + " and the ".join(words) + " ."
    item = {"text": text, "aspects": words[:32]}
    return [
        json.dumps({"items": [item] * 64}),
        json.dumps({**item, "explain": True}),
    ]


def heavy(url: str, tmp: Path, seconds: int, connections: int = 4) -> dict:
    """/healthz (and a light request) while heavy requests keep the server busy."""
    batch, explain = heavy_bodies()
    out = {}
    for name, path, body in [
        ("batch_64x32", "/v1/predict/batch", batch),
        ("explain_32", "/v1/predict", explain),
    ]:
        script = tmp / f"heavy-{name}.lua"
        script.write_text(
            WRK_LUA.replace("{BODIES}", "{" + json.dumps(body) + "}").replace("{PATH}", path)
        )
        prober = Prober(url, every=0.02)
        prober.start()
        r = wrk(url, str(script), connections, seconds, 1)
        r["probe"] = prober.stop()
        out[name] = r
    return out


def targets(steps: list[dict], batch: dict | None, over: dict | None, heavy: dict) -> dict:
    """Issue #13's targets, met or not, for the phases that ran (aspects/s at c=64: one
    aspect per request; heavy batches: most of them answered, not starved)."""
    out: dict[str, bool] = {}
    c64 = next((s["ok_per_s"] for s in steps if s["connections"] == 64), None)
    if c64 is not None:
        out["c64_ge_2500_aspects_per_s"] = c64 >= 2500
    if batch is not None:
        out["batch_ge_8000_aspects_per_s"] = batch["aspects_per_s"] >= 8000
    if heavy:
        out["healthz_under_heavy_max_le_100ms"] = all(
            h["probe"]["healthz_max_ms"] is not None and h["probe"]["healthz_max_ms"] <= 100
            for h in heavy.values()
        )
        b = heavy["batch_64x32"]["statuses"]
        out["heavy_batches_mostly_answered"] = b["200"] >= 0.5 * (b["200"] + b["503"])
    if over is not None:
        probe = over["probe"]
        acc, health = probe["accepted_p99_ms"], probe["healthz_max_ms"]
        out["accepted_p99_le_250ms"] = acc is not None and acc <= 250
        out["healthz_max_le_100ms"] = health is not None and health <= 100
        out["rss_growth_le_50mb"] = over["rss_growth_mb"] <= 50
        st = over["statuses"]
        out["only_200_or_503"] = (
            st["other_5xx"] + st["other_4xx"] == 0 and probe["retry_after_missing"] == 0
        )
    return out


def overload(
    url: str, script: str, args: argparse.Namespace, server_pid: int, sat_conns: int
) -> dict:
    """Far more connections than saturate the server; a probe measures what users see."""
    conns = max(args.overload * sat_conns, args.min_overload)
    rejected0 = metric(url, "absa_rejected_total")
    shed0 = metric(url, "absa_shed_total")
    rss0 = rss_mb(server_pid)
    prober = Prober(url)
    prober.start()
    over = wrk(url, script, conns, args.seconds, args.wrk_threads)
    over["probe"] = prober.stop()
    over["rss_growth_mb"] = round(rss_mb(server_pid) - rss0, 1)
    # /metrics answers from one worker: a sample, not the total, with several workers
    over["rejected_aspects_server"] = metric(url, "absa_rejected_total") - rejected0
    over["shed_requests_server"] = metric(url, "absa_shed_total") - shed0
    return over


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--model",
        type=Path,
        default=DEFAULT_MODEL if DEFAULT_MODEL.is_dir() else None,
        required=not DEFAULT_MODEL.is_dir(),
        help="artifact directory (default: the shipped model)",
    )
    ap.add_argument("--name", default="load", help="results file name")
    ap.add_argument("--seconds", type=int, default=30, help="length of the overload phase")
    ap.add_argument("--step-seconds", type=int, default=5, help="each saturation step")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument(
        "--overload", type=int, default=10, help="x the saturating concurrency (connections)"
    )
    ap.add_argument("--min-overload", type=int, default=320, help="overload connections, at least")
    ap.add_argument("--heavy-seconds", type=int, default=15, help="each heavy-request phase")
    ap.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    ap.add_argument("--max-queue", type=int, default=8192, help="ABSA_MAX_QUEUE of the server")
    ap.add_argument("--max-in-flight", type=int, default=64, help="ABSA_MAX_IN_FLIGHT")
    ap.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    ap.add_argument("--batch-items", type=int, default=32, help="items per batch request")
    ap.add_argument("--batch-concurrency", type=int, default=16)
    ap.add_argument("--server-threads", type=int, default=1, help="onnxruntime threads")
    ap.add_argument("--wrk-threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    args = ap.parse_args()

    bodies = [json.dumps({"text": t, "aspects": [a]}) for t, a in SENTENCES]
    items = [{"text": t, "aspects": [a]} for t, a in SENTENCES]
    batch = json.dumps({"items": (items * args.batch_items)[: args.batch_items]})

    def lua(path: str, bodies: list[str]) -> str:
        listed = "{" + ",".join(json.dumps(b, ensure_ascii=False) for b in bodies) + "}"
        return WRK_LUA.replace("{BODIES}", listed).replace("{PATH}", path)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="absa-load-") as tmp:
        script = Path(tmp) / "load.lua"
        script.write_text(lua("/v1/predict", bodies))
        batch_script = Path(tmp) / "batch.lua"
        batch_script.write_text(lua("/v1/predict/batch", [batch]))
        load0 = os.getloadavg()[0]  # other work on the machine skews every number
        server = start_server(args, port, Path(tmp) / "server.log")
        sampler = RssSampler(server.pid)
        sampler.start()
        steps: list[dict] = []
        b = over = None
        hv: dict = {}
        try:
            if "saturation" in args.phases:
                for c in sorted(set(args.concurrency)):
                    steps.append(wrk(url, str(script), c, args.step_seconds, args.wrk_threads))
                    print(f"saturation c={c}: {steps[-1]}", flush=True)
            if "batch" in args.phases:
                b = wrk(url, str(batch_script), args.batch_concurrency, args.step_seconds, 2)
                b["aspects_per_s"] = round(b["ok_per_s"] * args.batch_items, 1)
                print(f"batch of {args.batch_items}: {b}", flush=True)
            if "heavy" in args.phases:
                hv = heavy(url, Path(tmp), args.heavy_seconds)
                print(f"heavy: {hv}", flush=True)
            if "overload" in args.phases:
                sat = saturating(steps)
                over = overload(
                    url, str(script), args, server.pid, sat["connections"] if sat else 0
                )
                print(f"overload c={over['connections']}: {over}", flush=True)
        finally:
            samples = sampler.stop()
            server.terminate()
            server.wait(timeout=60)
    rss = [mb for _, mb in samples]
    best = max((s["ok_per_s"] for s in steps), default=None)
    sat = saturating(steps)
    result = {
        "name": args.name,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average_at_start": load0,
        "command": " ".join(["python benchmarks/load.py", *sys.argv[1:]]),
        "model": str(args.model),
        "server": {
            "workers": args.workers,
            "threads": args.server_threads,
            "max_queue": args.max_queue,
            "max_in_flight": args.max_in_flight,
            "device": args.device,
            "exit_code": server.returncode,
        },
        "phases": args.phases,
        "saturation": steps,
        "saturation_ok_per_s": best,
        "saturating_concurrency": sat and sat["connections"],
        "batch": b,
        "heavy": hv,
        "overload": over,
        "targets": targets(steps, b, over, hv),
        "rss_mb": {"start": rss[0], "end": rss[-1], "max": max(rss), "samples": samples},
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{args.name}.json"
    write_record(out, **result)
    print(summary(result, args.batch_items) + f"\nwritten to {out.relative_to(ROOT)}")
    failed = sum(
        r["statuses"]["other_5xx"] for r in [*steps, *hv.values(), b, over] if r is not None
    )
    if failed:
        print(f"FAIL: {failed} answers were 5xx other than 503", file=sys.stderr)
    return 1 if failed else 0


def summary(result: dict, batch_items: int) -> str:
    lines = []
    sat, over, b = result["saturation"], result["overload"], result["batch"]
    if sat:
        s = next(x for x in sat if x["connections"] == result["saturating_concurrency"])
        lines.append(
            f"saturation: {result['saturation_ok_per_s']:.0f} req/s at c={s['connections']} "
            f"(p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms)"
        )
    if b is not None:
        lines.append(f"batch of {batch_items}: {b['aspects_per_s']:.0f} aspects/s")
    for name, h in result["heavy"].items():
        p = h["probe"]
        lines.append(
            f"heavy {name}: statuses {h['statuses']}; /healthz max {p['healthz_max_ms']} ms, "
            f"light request p99 {p['accepted_p99_ms']} ms"
        )
    if over is not None:
        st, p = over["statuses"], over["probe"]
        lines += [
            f"overload c={over['connections']} for {over['seconds']:.0f} s: "
            f"{over['requests_per_s']:.0f} req/s answered, {over['ok_per_s']:.0f} req/s 200; "
            f"p50 {over['p50_ms']:.1f} ms, p99 {over['p99_ms']:.1f} ms",
            f"  statuses: 200={st['200']} 503={st['503']} other 4xx={st['other_4xx']} "
            f"other 5xx={st['other_5xx']}; socket errors {over['socket_errors']}, "
            f"timeouts {over['timeouts']}",
            f"  probe: accepted p99 {p['accepted_p99_ms']} ms, /healthz p99 "
            f"{p['healthz_p99_ms']} ms, max {p['healthz_max_ms']} ms; "
            f"RSS growth {over['rss_growth_mb']} MiB",
        ]
    rss = result["rss_mb"]
    lines += [
        f"targets: {result['targets']}",
        f"server RSS: start {rss['start']:.0f} MiB, end {rss['end']:.0f} MiB, "
        f"max {rss['max']:.0f} MiB",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
