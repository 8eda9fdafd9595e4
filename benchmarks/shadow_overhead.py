"""What a shadow model (ABSA_SHADOW_MODEL, service/shadow.py) costs the served requests:
`absa serve` on the shipped model with no shadow and with one (the shipped model's copy under
another version: the same network, so the same work as a challenger of it), under wrk over
loopback at a few concurrencies (one-aspect /v1/predict requests), rounds interleaving the
two, each first in half of them, so that other work on the machine slows them alike;
medians over rounds. With the
shadow, /metrics says how many texts it compared and how many it dropped (it fell behind),
and the workers' RSS is read from /proc.

    python benchmarks/shadow_overhead.py --workers 2 --rounds 4 --rate 0.1 \\
        --name shadow-overhead-rate0.1 --data ../shared/data/semeval14/Restaurants_Test_Gold.xml.seg

Writes benchmarks/results/latency/<--name, default shadow-overhead>.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.latency import serving, wrk_at, wrk_script  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("shadow_overhead")
DEFAULT_MODEL = ROOT / "model" / "artifacts" / "default"


def renamed_copy(artifact: Path, where: Path) -> Path:
    """``artifact`` copied under version "shadow-copy": another digest, the same files."""
    out = where / "shadow-copy"
    shutil.copytree(artifact, out)
    meta_path = out / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["version"] = "shadow-copy"
    meta_path.write_text(json.dumps(meta, indent=2))
    return out


def rss_mb(pid: int) -> float:
    """The resident memory of ``pid`` and its descendants (Linux /proc), MiB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            rss = next(ln for ln in status.splitlines() if ln.startswith("VmRSS"))
            total += int(rss.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration):
            continue
    return total / 1024


def shadow_texts(port: int) -> dict[str, float]:
    """absa_shadow_texts_total by outcome, from the server's /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {
        s.labels["outcome"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "absa_shadow_texts_total"
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--data", type=Path, required=True, help="texts to send (any reader format)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime threads a worker")
    ap.add_argument("--rate", type=float, default=0.1, help="ABSA_SHADOW_RATE (its default)")
    ap.add_argument("--seconds", type=int, default=10, help="each concurrency")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--name", default="shadow-overhead", help="the result file's name")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    script = wrk_script(args.data)
    modes = ("off", "shadow")
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        copy = renamed_copy(args.artifact, Path(tmp))
        for r in range(args.rounds):
            for mode in modes if r % 2 == 0 else modes[::-1]:  # each first in half the rounds
                env = {"ABSA_SHADOW_MODEL": str(copy), "ABSA_SHADOW_RATE": str(args.rate)}
                with serving(
                    args.artifact, args.threads, args.workers, **(env if mode == "shadow" else {})
                ) as (port, server):
                    at = [wrk_at(port, script, c, args.seconds) for c in args.concurrency]
                    run = {"http": at, "rss_mb": round(rss_mb(server.pid), 1)}
                    if mode == "shadow":
                        run["shadow_texts"] = shadow_texts(port)
                runs[mode].append(run)
                log.info("round %d %s: %s", r + 1, mode, run)
    median: dict[str, list[dict]] = {}
    for mode in modes:
        median[mode] = [
            {
                "concurrency": c,
                **{
                    k: round(statistics.median(run["http"][i][k] for run in runs[mode]), 3)
                    for k in ("p50_ms", "p99_ms", "aspects_per_s")
                },
            }
            for i, c in enumerate(args.concurrency)
        ]
    write_record(
        ROOT / "benchmarks" / "results" / "latency" / f"{args.name}.json",
        artifact=str(args.artifact),
        workers=args.workers,
        threads=args.threads,
        rate=args.rate,
        seconds=args.seconds,
        rounds=args.rounds,
        median=median,
        runs=runs,
    )
    for off, on in zip(median["off"], median["shadow"], strict=True):
        log.info(
            "c=%d: p50 %.2f -> %.2f ms, p99 %.2f -> %.2f ms, %.0f -> %.0f aspects/s",
            off["concurrency"], off["p50_ms"], on["p50_ms"], off["p99_ms"], on["p99_ms"],
            off["aspects_per_s"], on["aspects_per_s"],
        )  # fmt: skip


if __name__ == "__main__":
    main()
