"""The transfer tables: mean ± std over seeds, each new domain's row from the right runs."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.transfer_table import KINDS, NEW, TESTS, tables


def _result(setup: str, seed: int, acc: float) -> dict:
    sets = TESTS + [f"{d}-{part}" for d in NEW for part in ("held", "pool")]
    return {
        "setup": setup,
        "seed": seed,
        "n_train": 100,
        "dev_accuracy": acc,
        "dev_macro_f1": acc,
        "seconds_per_epoch": 10.0,
        "results": {s: {"accuracy": acc, "macro_f1": acc / 2, "n": 50} for s in sets},
        "negation": {"n": 64, "accuracy": acc, "by_kind": {k: {"accuracy": acc} for k in KINDS}},
    }


def test_tables(tmp_path: Path) -> None:
    for setup, seed, acc in [
        ("union", 1, 0.70),
        ("union", 2, 0.72),
        ("union-new", 1, 0.80),
        ("lodo-yelp", 1, 0.60),
    ]:
        (tmp_path / f"{setup}__s{seed}.json").write_text(json.dumps(_result(setup, seed, acc)))
    more, lodo, negation = tables(tmp_path).split("\n\n")
    assert "| union | 100 | 71.0 ± 1.4 / 71.0 ± 1.4 | 71.0 ± 1.4 / 35.5 ± 0.7 |" in more
    assert "| union-new | 100 |" in more and "lodo-tshirt" not in more
    # yelp: saw it 80, never saw it 60, union 71; other domains have no lodo run yet
    assert "| yelp | 50 | 80.0 / 40.0 | 60.0 / 30.0 | 71.0 ± 1.4 / 35.5 ± 0.7 |" in lodo
    assert "| tshirt | 50 | 80.0 / 40.0 | – |" in lodo
    assert negation.splitlines()[2].startswith("| union | 71.0 ± 1.4 (64) |")
