"""Aspect term lookup (``absa.model.aspects.find_all``): the time to find every test-set
aspect in its sentence, and a request crafted to make the lookup slow (the security review's
case: 64 items of 2,000-character self-repeating text, 32 long terms each that almost
occur in it), and the same in decomposed text.

    python benchmarks/term_lookup.py --json benchmarks/results/term_lookup/<name>.json
    git show f429ca9:model/aspects.py > /tmp/aspects_f429ca9.py
    python benchmarks/term_lookup.py --baseline /tmp/aspects_f429ca9.py  # before and after

Times are the best of ``--rounds`` rounds, one thread, no model involved; with
``--baseline`` (an older ``model/aspects.py``), its ``find_all`` is timed in the same rounds,
each case one after the other, so both see the same machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.aspects import find_all  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from benchmarks.datasets import test_files  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("term_lookup")
Finder = Callable[[str, str], list[tuple[int, int]]]


def crafted() -> list[tuple[str, str]]:
    """64 texts of 2,000 characters ("a a a ... z<i>") x 32 terms of 181 characters each
    ("a" 90 times, then a word the text lacks): every word start almost matches."""
    pairs = []
    for i in range(64):
        text = ("a " * 1000)[: 2000 - len(f"z{i}")] + f"z{i}"
        pairs += [(text, " ".join(["a"] * 90) + f" b{j}") for j in range(32)]
    return pairs


def crafted_decomposed() -> list[tuple[str, str]]:
    """The same with every letter an "e" and a combining accent (not NFC: the lookup also
    searches the text composed) and terms of the composed "é"."""
    pairs = []
    for i in range(64):
        text = ("e\u0301 " * 1000)[: 2000 - len(f"z{i}")] + f"z{i}"
        pairs += [(text, " ".join(["\u00e9"] * 90) + f" b{j}") for j in range(32)]
    return pairs


def best_of(rounds: int, fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The best time of each of ``fns`` over ``rounds`` rounds, each round running them all."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: min(t) for name, t in times.items()}


def run(pairs: list[tuple[str, str]], rounds: int, finders: dict[str, Finder]) -> dict:
    best = best_of(
        rounds,
        {
            name: (lambda f=f: [f(text, term) for text, term in pairs])
            for name, f in finders.items()
        },
    )
    row: dict = {"lookups": len(pairs)}
    for name, seconds in best.items():
        row[name] = {
            "total_ms": round(seconds * 1e3, 2),
            "us_per_lookup": round(seconds * 1e6 / len(pairs), 2),
        }
    return row


def baseline(path: Path) -> Finder:
    """``find_all`` of another version of model/aspects.py."""
    spec = importlib.util.spec_from_file_location("baseline_aspects", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module.find_all


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--baseline", type=Path, help="an older model/aspects.py to time too")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    finders: dict[str, Finder] = {"this": find_all}
    if args.baseline:
        finders = {"baseline": baseline(args.baseline), **finders}
    cases = {
        name: [(e.text, e.term) for e in read_examples(path).examples]
        for name, path in test_files().items()
    }
    cases |= {"crafted request": crafted(), "crafted request, decomposed": crafted_decomposed()}
    rows = {}
    for name, pairs in cases.items():
        rows[name] = run(pairs, args.rounds, finders)
        log.info("%s: %s", name, rows[name])
    if args.baseline:
        rows["baseline"] = str(args.baseline)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_record(args.json, rows=rows)


if __name__ == "__main__":
    main()
