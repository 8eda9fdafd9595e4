"""Vocabulary expansion, measured: each student run exported as it is and with
``absa export --expand-vocab`` (training/vocab_expansion.py), both scored on dev and the
four test sets, how many test words each reads as <unk>, and the artifacts' sizes.

    python benchmarks/vocab_expansion.py --name k100k --vectors runs/vectors/X.txt \
        --top-k 100000 --runs runs/distill/A.s1 runs/distill/A.s2
    python benchmarks/vocab_expansion.py --report

One result file per run and setting (benchmarks/results/vocab_expansion/<name>__<run>.json),
written as it finishes; a run whose file exists is skipped. fp32 exports, no temperature
(neither changes which label is answered).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.runtime import Runtime  # noqa: E402
from absa.model.text import WordPipeline, load_pipeline  # noqa: E402
from absa.training.exporting import export_run  # noqa: E402
from absa.training.provenance import code_version, file_info  # noqa: E402
from absa.training.readers import read_many  # noqa: E402
from absa.training.rundir import read_dev_examples  # noqa: E402
from benchmarks.datasets import DATASETS, paths  # noqa: E402
from benchmarks.ensemble import cell, scores  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "vocab_expansion"


def unknown_share(pipeline: WordPipeline, texts: list[str]) -> float:
    """% of the words of ``texts`` (each distinct sentence once) read as <unk>."""
    ids = [i for t in dict.fromkeys(texts) for i in pipeline.tokenized(t).ids]
    return 100 * sum(i == pipeline.unk_id for i in ids) / max(1, len(ids))


def measure(artifact: Path, dev: list) -> dict:
    rt = Runtime.load(artifact, device="cpu", threads=1)
    pipeline = load_pipeline(artifact)
    assert isinstance(pipeline, WordPipeline)
    labels = list(rt.labels)
    out: dict = {
        "vocab": len(pipeline),
        "mb": round(sum(f.stat().st_size for f in artifact.iterdir()) / 1e6, 1),
    }
    sets = {"dev": dev, **{d: read_many([str(paths(d)["test"])]).examples for d in DATASETS}}
    for name, examples in sets.items():
        probs = rt.predict_proba([(e.text, e.start, e.end) for e in examples])
        out[name] = scores(probs, [e.label for e in examples], labels)
        out[name]["unk_pct"] = round(unknown_share(pipeline, [e.text for e in examples]), 2)
    return out


def run_one(run: Path, vectors: Path, top_k: int | None) -> dict:
    dev = read_dev_examples(run)
    with tempfile.TemporaryDirectory() as tmp:
        plain, grown = Path(tmp) / "plain", Path(tmp) / "grown"
        export_run(run, plain, version="plain", calibrate=False)
        meta = export_run(
            run, grown, version="grown", calibrate=False, expand_vocab=vectors, expand_top_k=top_k
        )
        result = {
            "run": str(run),
            # a file by its hash, the packaged GloVe by its name
            "vectors": file_info([str(vectors)])[0] if vectors.is_file() else str(vectors),
            "top_k": top_k,
            "expansion": meta["vocab_expansion"],
            "code_version": code_version(),
            "plain": measure(plain, dev),
            "expanded": measure(grown, dev),
        }
    return result


def report() -> None:
    rows = []
    for f in sorted(OUT.glob("*.json")):
        r = json.loads(f.read_text())
        name = f.stem
        for kind in ("plain", "expanded"):
            m = r[kind]
            tests = " | ".join(cell(m[d]) for d in DATASETS)
            unk = " / ".join(f"{m[d]['unk_pct']:.2f}" for d in DATASETS)
            rows.append(
                f"| {name} | {kind} | {m['vocab']} | {m['dev']['accuracy']:.2f} | {tests} "
                f"| {unk} | {m['mb']} |"
            )
    head = " | ".join(DATASETS)
    print(f"| run | export | vocab | dev acc | {head} | test <unk> % | MB (fp32) |")
    print("|---|---|---|---|" + "---|" * len(DATASETS) + "---|---|")
    print("\n".join(rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", help="the setting's name in the result files")
    ap.add_argument("--vectors", type=Path, help="the GloVe-format file to expand from")
    ap.add_argument("--top-k", type=int, help="its first N words (default: all)")
    ap.add_argument("--runs", nargs="+", type=Path, default=[])
    ap.add_argument("--report", action="store_true", help="print the table of result files")
    args = ap.parse_args()
    if args.report:
        report()
        return 0
    if not (args.name and args.vectors and args.runs):
        ap.error("--name, --vectors and --runs are needed (or --report)")
    OUT.mkdir(parents=True, exist_ok=True)
    for run in args.runs:
        out = OUT / f"{args.name}__{run.name}.json"
        if out.exists():
            continue
        write_record(out, **run_one(run, args.vectors, args.top_k))
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
