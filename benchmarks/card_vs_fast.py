"""Issue #11 item 1, the verdict: the card's network against `fast` on the same recipe, the
mean over seeds of each test number, fp32 (benchmarks/distill.py's result files) and as
served (benchmarks/served.py's), and whether the card is level or ahead on every one; beside
it the mean difference and its sd over the seed pairs (how far the verdict is from noise).
Then the dev split's accuracy by source (the fp32 runs' ``dev_by_source``): 2,331 aspects the
test sets do not share, a second sample of the same question, so a gap that the test sets
show and dev does not (or the other way) reads as noise.

    python benchmarks/card_vs_fast.py --card card-lite-ae2e --fast fast-ae2e
    python benchmarks/card_vs_fast.py --card card-lite-ae2e card-lite-ae2e-r50 \
        --fast fast-ae2e fast-ae2e-r50      # series paired by position, their seeds pooled

A short name SHORT means benchmarks/results/distill/union-SHORT-kd-*-oof-lap4-more.sN.json
(or ...-lap4-more-<more>.sN.json, a run with TRANSFER_MORE's files) and
benchmarks/results/served/test-SHORT-oof-sN.json (the names benchmarks/recipe_students.sh
writes). Only seeds both networks have are compared, so a pair cut off mid-way does not tilt
the means. Prints a Markdown table; exits 0 whatever the verdict (it is a report).

The same table compares any two recipes of paired seeds, e.g. the card with and without
restaurant copies: ``--card card-lite-l2mid-ae2e-r92-rest3 --fast card-lite-l2mid-ae2e-r92
--names copies none``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.datasets import DATASETS as FILES  # noqa: E402
from benchmarks.served import TARGETS, test_scores  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DATASETS = tuple(TARGETS)  # rest14, lap14, twitter, mams
RECIPE = "kd-transfer6k-subst1-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-lap4-more"
Scores = dict[str, tuple[float, float]]  # test set -> (accuracy, macro-F1), %


def seed_files(short: str, kind: str, results: Path = RESULTS) -> dict[int, Path]:
    """Result files of one network by seed: ``kind`` is "fp32" (distill) or "served"."""
    if kind == "fp32":
        pattern, where = f"union-{short}-{RECIPE}*.s*.json", results / "distill"
        shape = re.escape(f"union-{short}-{RECIPE}") + r"(-[a-z0-9-]+)?\.s(?P<seed>\d+)\.json"
    else:
        pattern, where = f"test-{short}-oof-s*.json", results / "served"
        shape = re.escape(f"test-{short}-oof-") + r"s(?P<seed>\d+)\.json"
    found: dict[int, Path] = {}
    for f in sorted(where.glob(pattern)):
        m = re.fullmatch(shape, f.name)
        if not m:
            continue
        seed = int(m["seed"])
        if seed in found:
            raise ValueError(
                f"two result files for seed {seed} of {short}: {found[seed].name} and {f.name}"
                " (one with more transfer files than the other: give it a short name of its own)"
            )
        found[seed] = f
    return found


def scores(path: Path) -> Scores:
    """Accuracy and macro-F1 (%) per test set from either kind of result file."""
    return test_scores(json.loads(path.read_text())["test"])


def dev_scores(path: Path) -> dict[str, float]:
    """Dev accuracy (%) by source, the source named as its test set (a distill result's
    ``dev_by_source`` is keyed by the training file's path)."""
    by_source = json.loads(path.read_text()).get("dev_by_source") or {}
    out = {}
    for name in DATASETS:
        hits = [v for k, v in by_source.items() if k.endswith(FILES[name]["train"])]
        if len(hits) == 1:
            out[name] = 100 * hits[0]
    return out


def paired(
    cards: Sequence[str], fasts: Sequence[str], kind: str, results: Path = RESULTS
) -> list[tuple[str, int, Path, Path]]:
    """(the card series' name, the seed, its result file, fast's) for every seed both series
    of a pair have, the card's i-th series against fast's i-th (students of the same inputs)."""
    if len(cards) != len(fasts):
        raise ValueError("as many card series as fast series: they are compared in pairs")
    out = []
    for c_name, f_name in zip(cards, fasts, strict=True):
        cf, ff = seed_files(c_name, kind, results), seed_files(f_name, kind, results)
        out += [(c_name, s, cf[s], ff[s]) for s in sorted(set(cf) & set(ff))]
    return out


def unpaired(cards: Sequence[str], fasts: Sequence[str], kind: str, results: Path = RESULTS) -> str:
    """The seeds a series has and its pair lacks, which the means leave out: a line saying
    so ("" where there are none), so a table over three pairs is not read as one over all
    the seeds there are."""
    parts = []
    for c_name, f_name in zip(cards, fasts, strict=True):
        cf, ff = seed_files(c_name, kind, results), seed_files(f_name, kind, results)
        for name, own, other in ((c_name, cf, ff), (f_name, ff, cf)):
            if alone := sorted(set(own) - set(other)):
                parts.append(f"{', '.join(map(str, alone))} of {name}")
    return (
        f"left out, no seed of the other network to pair with: {'; '.join(parts)}" if parts else ""
    )


Names = tuple[str, str]  # what the two sides are called in the tables
NAMES: Names = ("card", "fast")


def dev_table(
    cards: Sequence[str], fasts: Sequence[str], results: Path = RESULTS, names: Names = NAMES
) -> str:
    """Dev accuracy by source, the card against fast over the seeds both have (fp32 runs)."""
    pairs = [(dev_scores(c), dev_scores(f)) for *_, c, f in paired(cards, fasts, "fp32", results)]
    pairs = [(c, f) for c, f in pairs if set(c) == set(f) == set(DATASETS)]
    if not pairs:
        return "dev by source: no seed pair with every source's dev accuracy\n"
    lines = [
        f"dev accuracy by source, mean of {len(pairs)} seed pairs (fp32):",
        "",
        f"| dev part | {names[0]} | {names[1]} | {names[0]} - {names[1]}, sd over the seeds |",
        "|---|---|---|---|",
    ]
    for k in DATASETS:
        diffs = [c[k] - f[k] for c, f in pairs]
        c_mean, f_mean = (
            statistics.mean(c[k] for c, _ in pairs),
            statistics.mean(f[k] for _, f in pairs),
        )
        sd = statistics.stdev(diffs) if len(diffs) > 1 else None
        lines.append(f"| {k} | {c_mean:.2f} | {f_mean:.2f} | {c_mean - f_mean:+.2f}, {_sd(sd)} |")
    return "\n".join([*lines, ""])


def means(runs: list[Scores]) -> dict[str, tuple[float, float]]:
    return {
        k: (statistics.mean(r[k][0] for r in runs), statistics.mean(r[k][1] for r in runs))
        for k in DATASETS
    }


Row = tuple[str, str, float, float, bool, float | None]


def compare(card: list[Scores], fast: list[Scores]) -> list[Row]:
    """(test set, "acc" or "F1", card's mean, fast's mean, card level or ahead, the sd over
    the seed pairs of card minus fast: None under two pairs) per number. The runs pair by
    position (the same seed of the same series)."""
    c, f = means(card), means(fast)
    rows: list[Row] = []
    for k in DATASETS:
        for i, metric in enumerate(("acc", "F1")):
            diffs = [a[k][i] - b[k][i] for a, b in zip(card, fast, strict=True)]
            sd = statistics.stdev(diffs) if len(diffs) > 1 else None
            rows.append((k, metric, c[k][i], f[k][i], round(c[k][i], 2) >= round(f[k][i], 2), sd))
    return rows


def _sd(sd: float | None) -> str:
    return "–" if sd is None else f"{sd:.2f}"


def table(
    cards: Sequence[str],
    fasts: Sequence[str],
    kind: str,
    results: Path = RESULTS,
    names: Names = NAMES,
) -> str:
    """The verdict over series of students (short names), the card's i-th against fast's
    i-th (students of the same inputs), each pair over the seeds both have."""
    pairs = paired(cards, fasts, kind, results)
    card_runs = [scores(c) for *_, c, _ in pairs]
    fast_runs = [scores(f) for *_, f in pairs]
    used = []
    for name in dict.fromkeys(n for n, *_ in pairs):
        seeds = ", ".join(str(seed) for n, seed, *_ in pairs if n == name)
        used.append(seeds + (f" of {name}" if len(cards) > 1 else ""))
    card_name, fast_name = " + ".join(cards), " + ".join(fasts)
    left = unpaired(cards, fasts, kind, results)
    tail = [left, ""] if left else [""]
    if not card_runs:
        return "\n".join([f"{kind}: no seed that both {card_name} and {fast_name} have", *tail])
    rows = compare(card_runs, fast_runs)
    lines = [
        f"{kind}, mean of seeds {'; '.join(used)} ({len(card_runs)} a network):",
        "",
        f"| test set | {card_name} | {fast_name} | {names[0]} level or ahead"
        f" | {names[0]} - {names[1]}, sd over the seeds |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {k} {m} | {c:.2f} | {f:.2f} | {'yes' if ok else 'no'} | {c - f:+.2f}, {_sd(sd)} |"
        for k, m, c, f, ok, sd in rows
    ]
    met = sum(r[4] for r in rows)
    lines += ["", f"{names[0]} level or ahead on {met} of {len(rows)} numbers", *tail]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--card",
        required=True,
        nargs="+",
        help="the card network's short names, e.g. card-lite-ae2e",
    )
    ap.add_argument(
        "--fast", required=True, nargs="+", help="fast's, paired with --card's: fast-ae2e"
    )
    ap.add_argument("--results", type=Path, default=RESULTS, help="benchmarks/results")
    ap.add_argument(
        "--names",
        nargs=2,
        default=NAMES,
        metavar=("CARD", "FAST"),
        help="what the tables call the two sides (default: card fast), e.g. copies none",
    )
    args = ap.parse_args(argv)
    names = (args.names[0], args.names[1])
    try:
        for kind in ("fp32", "served"):
            sys.stdout.write(table(args.card, args.fast, kind, args.results, names) + "\n")
        sys.stdout.write(dev_table(args.card, args.fast, args.results, names) + "\n")
    except ValueError as e:
        ap.error(str(e))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
