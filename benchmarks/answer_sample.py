"""What ``absa_confidence`` and the answer sample (ABSA_SAMPLE_PATH) add to the request path:
the histogram's observation per aspect, and ``AnswerSample.offer`` per request, for an
answer the sample does not keep and for one it keeps (its JSON line made and queued; the
write is the sample's own thread's). Best of ``--rounds`` rounds, so other work on the
machine inflates none of them.

    python benchmarks/answer_sample.py [--calls 100000] [--rounds 5]

Writes benchmarks/results/latency/answer-sample.json.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.service.metrics import Metrics  # noqa: E402
from absa.service.sampling import AnswerSample  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("answer_sample")
TEXT = "the wine list was great but the food was awful"
ANSWER = {
    "term": "food",
    "start": 32,
    "end": 36,
    "label": "negative",
    "score": 0.91,
    "scores": {"negative": 0.91, "neutral": 0.05, "positive": 0.04},
}


def best_us(fn: object, calls: int, rounds: int) -> float:
    return min(timeit.repeat(fn, number=calls, repeat=rounds)) / calls * 1e6  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/latency/answer-sample.json"
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    metrics = Metrics()
    with tempfile.TemporaryDirectory() as d:
        skip = AnswerSample(Path(d) / "skip.jsonl", rate=0.0, below=0.5)
        keep = AnswerSample(Path(d) / "keep.jsonl", rate=1.0, below=0.5)
        us = {
            "confidence_observe": best_us(
                lambda: metrics.confidence.labels("negative").observe(0.91), args.calls, args.rounds
            ),
            "offer_not_kept": best_us(
                lambda: skip.offer([(TEXT, "absa-default:1.8.0", [ANSWER])], "rid"),
                args.calls,
                args.rounds,
            ),
            "offer_kept": best_us(
                lambda: keep.offer([(TEXT, "absa-default:1.8.0", [ANSWER])], "rid"),
                args.calls // 10,
                args.rounds,
            ),
        }
        skip.close()
        keep.close()
        written = sum(1 for _ in (Path(d) / "keep.jsonl").open())
    assert written == args.calls // 10 * args.rounds, written  # every kept line reached the file
    for name, value in us.items():
        log.info("%-20s %.2f us", name, value)
    write_record(args.out, microseconds=us, calls=args.calls, rounds=args.rounds)


if __name__ == "__main__":
    main()
