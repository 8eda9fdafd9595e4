"""Dev exact-span F1 per source of an extractor: the Rest14 / Lap14 / MAMS / ACOS parts of a
union's dev split, and their mean without ACOS (the ``source_mean`` criterion of
training/tag_select.py, which has no test set to weigh ACOS for).

    python benchmarks/extraction_dev.py ARTIFACT --setup union --seed 1 [--result FILE]

The dev split is rebuilt as ``absa train --task extract`` builds it (the setup's training
files less the test sentences, 200 aspect-free sentences held out, then a seeded 10%), so
an artifact whose run directory is gone (the shipped extractor) is scored too; --result
writes the scores into that result file as "dev_by_source".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.training.sentences import Sentence, drop_sentences, read_sentences, split  # noqa: E402
from absa.training.tag_select import by_source  # noqa: E402
from benchmarks.datasets import data_dir  # noqa: E402

HELDOUT_EMPTY = 200  # absa train --heldout-empty's default
SKIP = ("acos",)  # sources without a test set here: reported, not in the mean


def short(name: str) -> str:
    """A source's column: ``xml/Restaurants_Train_v2.xml`` -> ``rest14``."""
    for part, col in (("Restaurants", "rest14"), ("Laptops", "lap14"), ("mams", "mams")):
        if part in name:
            return col
    return "acos" if "acos" in name else name


def dev_sentences(setup: str, seed: int) -> list[Sentence]:
    from benchmarks.extraction import SETUPS, TESTS

    s, d = SETUPS[setup], data_dir()
    if s.dev:
        return read_sentences(d / s.dev)
    train = read_sentences([d / f for f in s.train])
    train, _ = drop_sentences(train, read_sentences([d / f for f in TESTS.values()]))
    return split(train, 0.1, HELDOUT_EMPTY, seed).dev


def dev_by_source(art: Path, dev: list[Sentence]) -> dict[str, dict]:
    """{source column: span scores} and "mean": the mean F1 of the sources not in SKIP."""
    from absa.model.extractor import Extractor

    found = Extractor.load(art, device="cpu").extract([s.text for s in dev])
    reports = by_source(dev, [{(f.start, f.end) for f in spans} for spans in found])
    out: dict = {short(k): r for k, r in reports.items()}
    out["mean"] = source_mean(out)
    return out


def source_mean(sources: dict[str, dict]) -> float:
    kept = [r["f1"] for k, r in sources.items() if k != "mean" and k not in SKIP]
    return statistics.fmean(kept)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("artifact", type=Path)
    p.add_argument("--setup", default="union")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--result", type=Path, help="a result file to add dev_by_source to")
    args = p.parse_args()
    rep = dev_by_source(args.artifact, dev_sentences(args.setup, args.seed))
    sys.stdout.write(json.dumps({k: v if k == "mean" else v["f1"] for k, v in rep.items()}) + "\n")
    if args.result:
        res = json.loads(args.result.read_text())
        parts = [v for k, v in rep.items() if k != "mean"]
        pooled = [sum(v[k] for v in parts) for k in ("sentences", "gold", "true_positives")]
        if pooled != [res["dev"][k] for k in ("sentences", "gold", "true_positives")]:
            raise SystemExit(f"{args.result}: another dev split or model ({pooled})")
        res["dev_by_source"] = {**rep, "how": "benchmarks/extraction_dev.py, split rebuilt"}
        args.result.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
