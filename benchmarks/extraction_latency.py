"""Extractor latency, several artifacts back to back on the same sentences: rows that can be
compared with each other (extraction.py times each tagger when it is trained, under
whatever else the machine runs then).

    python benchmarks/extraction_latency.py model/artifacts/extractor \
        runs/bench-extract/union-minilm-l2-crf-int8__s1.artifact --rounds 2 \
        --json benchmarks/results/extraction/latency-<name>.json

The sentences are those of the Rest14, Lap14 and MAMS test files (as extraction.py times
them); each round measures every artifact once, in the order given, so a busy minute
touches all of them; the best round per artifact is reported (p50 / p99 of single-sentence
calls, and ms per sentence when all are sent at once).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.training.sentences import read_sentences  # noqa: E402
from benchmarks.datasets import data_dir  # noqa: E402
from benchmarks.extraction import TESTS, latency  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("extraction_latency")


def measure(artifacts: list[Path], texts: list[str], threads: int, rounds: int) -> list[dict]:
    """Per artifact: its best round (lowest batch-1 p50) and every round's p50."""
    runs: dict[Path, list[dict]] = {a: [] for a in artifacts}
    for r in range(rounds):
        for a in runs:  # each directory once, however often it is named
            runs[a].append(latency(a, texts, threads))
            log.info("round %d %s: p50 %.2f ms", r + 1, a, runs[a][-1]["batch1_p50_ms"])
    out = []
    for a, rs in runs.items():
        best = min(rs, key=lambda x: x["batch1_p50_ms"])
        out.append({"artifact": str(a), **best, "p50_per_round": [x["batch1_p50_ms"] for x in rs]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifacts", type=Path, nargs="+", help="extractor artifact directories")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    missing = [str(a) for a in args.artifacts if not (a / "metadata.json").is_file()]
    if missing:
        sys.exit(f"extraction_latency: not an extractor artifact: {', '.join(missing)}")
    d = data_dir()
    texts = [s.text for t in ("rest14", "lap14", "mams") for s in read_sentences(d / TESTS[t])]
    rows = measure(args.artifacts, texts, args.threads, args.rounds)
    load = os.getloadavg()[0]
    for row in rows:
        sys.stdout.write(
            f"{row['artifact']}: p50 {row['batch1_p50_ms']:.2f}"
            f" / p99 {row['batch1_p99_ms']:.2f} ms,"
            f" batched {row['batched_ms_per_sentence']:.3f} ms/sentence\n"
        )
    if args.json:
        write_record(args.json, **{"load_average_1min": load, "rows": rows})


if __name__ == "__main__":
    main()
