"""Whether an ensemble of teachers leads its first member on dev by enough to teach from it:
the choice between the students of the main teacher and those of the three-teacher mean
(``recipe_chain.sh TAG auto``, after ``ensemble.py --name teachers-main-oof-ab --runs``).

    python benchmarks/teacher_lead.py benchmarks/results/ensemble/teachers-main-oof-ab.json \
        --variant 3f --min 0.5

Prints ``--variant`` when the members' mean is ahead of the first member (the main teacher)
on the dev split by at least ``--min`` points of accuracy *and* of macro-F1, else an empty
line; the two leads go to the log. Session 49's four-teacher mean led by 0.7 on both; on
2,330 dev aspects a smaller lead is near the noise. The test sets in the file are not read:
the choice is made on dev alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

log = logging.getLogger("teacher_lead")
METRICS = ("accuracy", "macro_f1")


def leads(result: dict) -> dict[str, float]:
    """The mean's lead over the first member on dev, per metric, in points."""
    try:
        dev = result["dev"]
        first, mean = dev["members"][0], dev["mean"]
        return {m: float(mean[m]) - float(first[m]) for m in METRICS}
    except (KeyError, IndexError, TypeError) as e:
        raise ValueError(
            f"no dev scores of members and mean ({e!r}): not ensemble.py --runs"
        ) from e


def choose(result: dict, variant: str, least: float) -> str:
    """``variant`` when the mean leads by ``least`` or more on every metric, else ''."""
    return variant if all(v >= least for v in leads(result).values()) else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path, help="an ensemble.py --runs result file")
    ap.add_argument("--variant", default="3f", help="printed when the mean leads enough")
    ap.add_argument("--min", type=float, default=0.5, help="the least lead, in points")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        result = json.loads(args.result.read_text())
        lead = leads(result)
    except (OSError, ValueError) as e:
        log.error("%s: %s", args.result, e)
        return 2
    picked = choose(result, args.variant, args.min)
    log.info(
        "%s: the mean leads the first member on dev by %s (at least %.2f each): %s",
        args.result,
        ", ".join(f"{m} {v:+.2f}" for m, v in lead.items()),
        args.min,
        f"variant {picked}" if picked else "the first member alone",
    )
    sys.stdout.write(picked + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
