"""The tables of benchmarks/results/transfer/ (benchmarks/transfer.py) for docs/benchmarks.md:
more data, leave-one-domain-out, and the negation slice of every model; mean ± std over seeds."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from benchmarks.fmt import mean_sd  # noqa: E402

HERE = Path(__file__).resolve().parent
TESTS = ["rest14", "lap14", "twitter", "mams"]
NEW = ["semeval15", "television", "tshirt", "yelp", "acos-laptop"]
KINDS = ["negated_negative", "negated_positive", "negation_neutral", "contrast"]
KINDS += ["contrast_negation"]


def _load(folder: Path) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = defaultdict(list)
    for f in sorted(folder.glob("*.json")):
        r = json.loads(f.read_text())
        preset = r.get("preset", "fast")  # the files before --preset are all fast's
        runs[r["setup"] if preset == "fast" else f"{r['setup']} ({preset})"].append(r)
    return runs


def _score(runs: list[dict], name: str) -> str:
    acc = [r["results"][name]["accuracy"] for r in runs]
    f1 = [r["results"][name]["macro_f1"] for r in runs]
    return f"{mean_sd(acc, 1)} / {mean_sd(f1, 1)}" if runs else "–"


def more_data(runs: dict[str, list[dict]]) -> str:
    head = " | ".join(TESTS)
    rows = [
        f"| training data | aspects | dev | {head} | s/epoch | seeds |",
        "|---|---|---|" + "---|" * len(TESTS) + "---|---|",
    ]
    named = ["union", "union-new", *(f"lodo-{d}" for d in NEW)]
    for setup in named + sorted(k for k in runs if k not in named):  # other presets last
        rs = runs.get(setup, [])
        if not rs:
            continue
        dev = " / ".join(mean_sd([r[f"dev_{m}"] for r in rs], 1) for m in ("accuracy", "macro_f1"))
        cells = " | ".join(_score(rs, t) for t in TESTS)
        spe = statistics.mean(r["seconds_per_epoch"] for r in rs)
        rows.append(f"| {setup} | {rs[0]['n_train']} | {dev} | {cells} | {spe:.0f} | {len(rs)} |")
    return "\n".join(rows)


def leave_one_out(runs: dict[str, list[dict]]) -> str:
    rows = [
        "| domain D | held-out n | saw D (union-new) | never saw D (lodo-D) | 4 sets only (union) "
        "| lodo-D on D's whole pool (n) |",
        "|---|---|---|---|---|---|",
    ]
    for d in NEW:
        lodo = runs.get(f"lodo-{d}", [])
        ref = runs.get("union-new", []) or lodo
        if not ref:
            continue
        held = f"{d}-held"
        n = ref[0]["results"][held]["n"]
        pool = f"{_score(lodo, f'{d}-pool')} ({ref[0]['results'][f'{d}-pool']['n']})"
        rows.append(
            f"| {d} | {n} | {_score(runs.get('union-new', []), held)} | {_score(lodo, held)} "
            f"| {_score(runs.get('union', []), held)} | {pool} |"
        )
    return "\n".join(rows)


def negation(runs: dict[str, list[dict]]) -> str:
    rows = [
        "| model | all | " + " | ".join(KINDS) + " |",
        "|---|---|" + "---|" * len(KINDS),
    ]
    for setup, rs in sorted(runs.items(), key=lambda kv: (kv[0].startswith("lodo"), kv[0])):
        n = rs[0]["negation"]["n"]
        cells = [mean_sd([r["negation"]["by_kind"][k]["accuracy"] for r in rs], 1) for k in KINDS]
        rows.append(
            f"| {setup} | {mean_sd([r['negation']['accuracy'] for r in rs], 1)} ({n}) | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(rows)


def tables(folder: Path = HERE / "results" / "transfer") -> str:
    runs = _load(folder)
    return "\n\n".join([more_data(runs), leave_one_out(runs), negation(runs)])


if __name__ == "__main__":
    print(tables())
