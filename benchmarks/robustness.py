"""Aspect robustness of a model: ARTS-style REVTGT / REVNON / ADDDIFF variants of test sets.

    python benchmarks/robustness.py --model /tmp/runs/Restaurants-atae-lstm-8395
    python benchmarks/robustness.py --model ARTIFACT_DIR --datasets rest14 --name default
    python benchmarks/robustness.py --dump /tmp/suite       # only write the suite as JSONL

The suite is built from the TEST sets (rest14 -> restaurant aspects, lap14 -> laptop
aspects) with the rules of training/augment.py and the "suite" part of training/lexicon.json.
Also reports plain accuracy on the MAMS test set (2+ aspects of different polarity in every
sentence). Writes benchmarks/results/robustness/<name>.json; see benchmarks/robustness/README.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import read_metadata, sha256_file  # noqa: E402
from absa.training.augment import DEFAULT_LEXICON, load_lexicon  # noqa: E402
from absa.training.evaluate import model_kind, predict_examples  # noqa: E402
from absa.training.metrics import classification_report  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from absa.training.records import Example  # noqa: E402
from absa.training.rundir import read_info  # noqa: E402
from benchmarks.datasets import paths  # noqa: E402
from benchmarks.robustness.negation import negation_slice  # noqa: E402
from benchmarks.robustness.suite import KINDS, build_suite, flatten, score, write_jsonl  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "robustness"
DOMAINS = {"rest14": "restaurant", "lap14": "laptop", "mams": "restaurant"}


def model_info(model_dir: Path) -> dict:
    """Name, version and provenance of a run directory or an artifact directory."""
    if model_kind(model_dir) == "artifact":
        meta = read_metadata(model_dir)
        return {
            "kind": "artifact",
            "path": str(model_dir),
            "name": meta.get("name"),
            "version": meta.get("version"),
            "preset": meta.get("preset"),
            "code_version": meta.get("code_version"),
        }
    run = read_info(model_dir)
    return {
        "kind": "run",
        "path": str(model_dir),
        "name": run.get("preset") or model_dir.name,
        "version": None,
        "preset": run.get("preset"),
        "about": run.get("about"),
        "code_version": run.get("code_version"),
    }


def predict(model_dir: Path, examples: list[Example]) -> list[str]:
    probs, labels = predict_examples(model_dir, examples)
    return [labels[i] for i in probs.argmax(1)]


def plain(examples: list[Example], predicted: list[str]) -> dict:
    labels = ["negative", "neutral", "positive"]
    gold = [labels.index(e.label) for e in examples]
    rep = classification_report(gold, [labels.index(p) for p in predicted], labels)
    return {"n": len(examples), "accuracy": rep["accuracy"], "macro_f1": rep["macro_f1"]}


def pct(x: float | None) -> str:
    return "  -  " if x is None else f"{x * 100:5.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, help="a training run or an artifact directory")
    ap.add_argument("--datasets", nargs="+", default=["rest14", "lap14"], choices=list(DOMAINS))
    ap.add_argument("--name", help="result name (default: the model's name and version)")
    ap.add_argument("--seed", type=int, default=0, help="suite seed (ADDDIFF choices)")
    ap.add_argument("--lexicon", type=Path, default=DEFAULT_LEXICON)
    ap.add_argument("--no-mams", action="store_true", help="skip plain MAMS test accuracy")
    ap.add_argument("--dump", type=Path, help="also write each suite as DIR/<dataset>.jsonl")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    if args.model is None and args.dump is None:
        ap.error("give --model (evaluate) and/or --dump (write the suite)")
    lexicon = load_lexicon(args.lexicon)
    info = model_info(args.model) if args.model else None
    results: dict[str, dict] = {}
    for name in args.datasets:
        test_path = paths(name)["test"]
        assert test_path is not None
        test = read_examples(test_path).examples
        units = build_suite(test, lexicon, DOMAINS[name], args.seed)
        suite_examples = [ex for _, _, ex in flatten(units)]
        row: dict = {"domain": DOMAINS[name], "test_file": str(test_path)}
        row["test_sha256"] = sha256_file(test_path)
        predicted = None
        if args.model:
            predicted = predict(args.model, suite_examples)
            test_pred = predict(args.model, test)
            row["test"] = plain(test, test_pred)
            row.update(score(units, predicted))
        else:
            row.update(score(units, [ex.label for ex in suite_examples]))  # counts only
            row.pop("accuracy"), row.pop("ars"), row.pop("ars_by_kind")
        results[name] = row
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            write_jsonl(args.dump / f"{name}.jsonl", units, predicted)
        c = row["counts"]
        print(
            f"{name}: {len(test)} test examples -> {row['n_units']} units "
            + ", ".join(f"{k} {c[k]}" for k in KINDS)
        )
    if not args.model:
        return

    mams = None
    mams_path = paths("mams")["test"]
    if not args.no_mams and mams_path is not None and mams_path.is_file():
        examples = read_examples(mams_path).examples
        mams = plain(examples, predict(args.model, examples))
        mams["test_file"] = str(mams_path)
    negation = negation_slice(args.model, predict)

    assert info is not None
    name = args.name or "-".join(str(x) for x in (info["name"], info["version"]) if x)
    out = {
        "name": name,
        "model": info,
        "suite": {
            "seed": args.seed,
            "lexicon": str(args.lexicon),
            "lexicon_sha256": lexicon.sha256,
            "templates": list(lexicon.templates["suite"]),
        },
        "datasets": results,
        "mams": mams,
        "negation": negation,
        "code_version": code_version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python benchmarks/robustness.py", *sys.argv[1:]]),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    dest = OUT / f"{name}.json"
    dest.write_text(json.dumps(out, indent=1))

    print(f"\n{name} ({info['kind']} {info['path']})")
    print(f"{'set':8} {'test':>6} {'orig':>6} " + " ".join(f"{k:>7}" for k in KINDS) + "    ARS")
    for ds, r in results.items():
        acc = r["accuracy"]
        print(
            f"{ds:8} {pct(r['test']['accuracy']):>6} {pct(acc['original']):>6} "
            + " ".join(f"{pct(acc[k]):>7}" for k in KINDS)
            + f"  {pct(r['ars'])}"
        )
    if mams:
        print(f"mams     {pct(mams['accuracy']):>6}  (plain accuracy, {mams['n']} aspects)")
    print(
        f"negation/contrast slice: {pct(negation['accuracy'])} of {negation['n']} ("
        + ", ".join(f"{k} {pct(v['accuracy'])}" for k, v in negation["by_kind"].items())
        + ")"
    )
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
