"""Latency and throughput: onnxruntime vs torch eager in-process, and HTTP end to end.

Each in-process runtime is timed in its own process (onnxruntime's spinning threads slow
torch down when both live in one). HTTP is measured with wrk (Debian package `wrk`) over
loopback against `absa serve`, at several concurrencies, for a fixed time each.

    python benchmarks/latency.py --run runs/rest-fast --artifact artifacts/rest-fast \\
        --name fast --data ../shared/data/semeval14/Restaurants_Test_Gold.xml.seg

Writes benchmarks/results/latency/<name>.json; `python benchmarks/report.py` puts it in the docs.
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
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.records import write_record  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "latency"


def _items(data: Path, n: int) -> list[tuple[str, int, int]]:
    from absa.training.readers import read_examples

    ex = read_examples(data).examples[:n]
    return [(e.text, e.start, e.end) for e in ex]


def _percentiles(xs: list[float]) -> dict:
    import numpy as np

    a = np.asarray(xs) * 1000
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99))}


def inproc(
    kind: str, model: Path, data: Path, threads: int, seconds: float, device: str = "cpu"
) -> dict:
    """Batch-1 latency and batch-64 throughput of one runtime, in this process; ``device``
    (cpu|cuda): onnxruntime's execution provider (torch eager runs on the CPU)."""
    items = _items(data, 2000)
    if kind == "torch":
        import torch

        from absa.training.inference import to_tensors
        from absa.training.rundir import load_run

        torch.set_num_threads(threads)
        run = load_run(model)
        enc = [run.pipeline.encode(*it) for it in items]

        def call(batch):  # type: ignore[no-untyped-def]
            with torch.no_grad():
                run.net(**to_tensors(batch, run.pipeline.pad_id))

    else:
        from absa.model.runtime import Runtime

        rt = Runtime.load(model, device=device, threads=threads)
        enc = [rt.encode(*it) for it in items]

        def call(batch):  # type: ignore[no-untyped-def]
            rt.run_batch(batch, self_attention=False)  # what a plain prediction fetches

    for e in enc[:50]:
        call([e])
    lat = []
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end or len(lat) < 200:
        t0 = time.perf_counter()
        call([enc[i % len(enc)]])
        lat.append(time.perf_counter() - t0)
        i += 1
    # batch 64, items sorted by length as the runtime's bucketing does
    enc_sorted = sorted(enc, key=lambda e: len(e.ids))
    batches = [enc_sorted[s : s + 64] for s in range(0, len(enc_sorted), 64)]
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for b in batches:
            call(b)
            n += len(b)
    thr = n / (time.perf_counter() - t0)
    return {
        "kind": kind,
        "threads": threads,
        "providers": rt.providers if kind == "ort" else ["torch eager"],
        "batch1": _percentiles(lat),
        "n_batch1": len(lat),
        "batch64_aspects_per_s": thr,
    }


WRK_LUA = """
local bodies = {BODIES}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i + 1
  return wrk.format(nil, "/v1/predict", nil, bodies[(i % #bodies) + 1])
end
done = function(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, '
    .. '"non2xx": %d, "errors": %d}\\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wrk_script(data: Path) -> Path:
    """A wrk Lua script sending one-aspect /v1/predict requests of 300 items of ``data``."""
    items = _items(data, 300)
    bodies = [
        json.dumps({"text": t, "aspects": [{"term": t[s:e], "start": s, "end": e}]})
        for t, s, e in items
    ]
    lua = WRK_LUA.replace("{BODIES}", "{" + ",".join(json.dumps(b) for b in bodies) + "}")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua)
    return Path(f.name)


@contextmanager
def serving(
    artifact: Path, threads: int, workers: int, device: str = "cpu", **env: str
) -> Iterator[tuple[int, subprocess.Popen]]:
    """``absa serve`` on ``artifact`` on a free loopback port, ready: (port, process);
    ``env``: more of its variables (ABSA_SHADOW_MODEL=...). Stopped on leaving."""
    port = _free_port()
    env = {
        **os.environ,
        "ABSA_THREADS": str(threads),
        "ABSA_LOG_LEVEL": "warning",
        "ABSA_WORKERS": str(workers),
        "ABSA_DEVICE": device,
        **env,
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "absa.cli", "serve", "--model", str(artifact), "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("the server did not become ready") from None
                time.sleep(0.3)
        yield port, server
    finally:
        server.terminate()
        server.wait(timeout=30)


def wrk_at(port: int, script: Path, c: int, seconds: int) -> dict:
    """wrk at concurrency ``c`` for ``seconds`` against the server on ``port``."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{c}", f"-d{seconds}s", "--latency", "-s", str(script),
         f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout  # fmt: skip
    line = next(ln for ln in out.splitlines() if ln.startswith("WRKJSON "))
    r = json.loads(line[len("WRKJSON ") :])
    return {
        "concurrency": c,
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "aspects_per_s": r["requests"] / (r["duration_us"] / 1e6),
        "non2xx": r["non2xx"],
        "socket_errors": r["errors"],
    }


def http(
    artifact: Path,
    data: Path,
    concurrencies: list[int],
    seconds: int,
    threads: int,
    workers: int,
    device: str = "cpu",
) -> list[dict]:
    script = wrk_script(data)
    results = []
    with serving(artifact, threads, workers, device) as (port, _):
        for c in concurrencies:
            results.append(wrk_at(port, script, c, seconds))
            print(f"http c={c}: {results[-1]}", flush=True)
    return results


def gpu_name() -> str:
    """The GPU's name and driver, as nvidia-smi gives them ("" where it is missing)."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="training run (for torch eager)")
    ap.add_argument("--artifact", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True, help="texts to send (any reader format)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--threads", type=int, default=2, help="in-process runtime threads")
    ap.add_argument(
        "--server-threads", type=int, default=1, help="onnxruntime threads in the server"
    )
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers of the server")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="onnxruntime's execution provider, in process and in the server (ABSA_DEVICE); "
        "cuda needs onnxruntime-gpu and a GPU, and fails rather than fall back to the CPU",
    )
    ap.add_argument("--inproc", choices=["ort", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inproc:  # child process: print one JSON line
        model = args.run if args.inproc == "torch" else args.artifact
        got = inproc(args.inproc, model, args.data, args.threads, args.seconds, args.device)
        print(json.dumps(got))
        return
    if args.device == "cuda":
        import onnxruntime as ort

        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise SystemExit(
                f"--device cuda: onnxruntime {ort.__version__} offers "
                f"{ort.get_available_providers()}; install onnxruntime-gpu on a machine with CUDA"
            )
    result = {
        "name": args.name,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "command": " ".join(["python benchmarks/latency.py", *sys.argv[1:]]),
        "device": args.device,
    }
    if args.device == "cuda":
        result["gpu"] = gpu_name()
    from absa.model.artifact import read_metadata

    meta = read_metadata(args.artifact)
    result["artifact_bytes"] = sum(f.stat().st_size for f in args.artifact.iterdir())
    result["quantization"] = meta.get("quantization", {}).get("type", "fp32")
    for kind in (["torch"] if args.run else []) + ["ort"]:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--inproc",
                kind,
                "--artifact",
                str(args.artifact),
                "--data",
                str(args.data),
                "--threads",
                str(args.threads),
                "--seconds",
                str(args.seconds),
                "--name",
                args.name,
                "--device",
                args.device,
            ]
            + (["--run", str(args.run)] if args.run else []),
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        result[kind] = json.loads(out.strip().splitlines()[-1])
        print(f"{kind}: {result[kind]}", flush=True)
    result["http"] = http(
        args.artifact,
        args.data,
        args.concurrency,
        int(args.seconds),
        args.server_threads,
        args.workers,
        args.device,
    )
    result["server_threads"] = args.server_threads
    result["workers"] = args.workers
    OUT.mkdir(parents=True, exist_ok=True)
    write_record(OUT / f"{args.name}.json", **result)


if __name__ == "__main__":
    main()
