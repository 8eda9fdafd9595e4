"""Aspect term lookup (``absa.model.aspects.find_all``): the time to find every test-set
aspect in its sentence, and a request crafted to make the lookup slow (the security review's
case: 64 items of 2,000-character self-repeating text, 32 long terms each that almost
occur in it).

    python benchmarks/term_lookup.py --json benchmarks/results/term_lookup/<name>.json

Times are the best of ``--rounds`` rounds, one thread, no model involved.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.aspects import find_all  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from benchmarks.datasets import test_files  # noqa: E402

log = logging.getLogger("term_lookup")


def crafted() -> list[tuple[str, str]]:
    """64 texts of 2,000 characters ("a a a ... z<i>") x 32 terms of 181 characters each
    ("a" 90 times, then a word the text lacks): every word start almost matches."""
    pairs = []
    for i in range(64):
        text = ("a " * 1000)[: 2000 - len(f"z{i}")] + f"z{i}"
        pairs += [(text, " ".join(["a"] * 90) + f" b{j}") for j in range(32)]
    return pairs


def best_of(rounds: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(pairs: list[tuple[str, str]], rounds: int) -> dict[str, float | int]:
    seconds = best_of(rounds, lambda: [find_all(text, term) for text, term in pairs])
    return {
        "lookups": len(pairs),
        "total_ms": round(seconds * 1e3, 2),
        "us_per_lookup": round(seconds * 1e6 / len(pairs), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    rows = {}
    for name, path in test_files().items():
        pairs = [(e.text, e.term) for e in read_examples(path).examples]
        rows[name] = run(pairs, args.rounds)
        log.info("%s: %s", name, rows[name])
    rows["crafted request"] = run(crafted(), args.rounds)
    log.info("crafted request: %s", rows["crafted request"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
