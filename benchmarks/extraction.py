"""Aspect term extraction: train taggers, measure exact-span F1, precision on held-out
aspect-free sentences, end-to-end (extract then classify) F1 and onnxruntime latency.

Each (setup, seed) trains with ``absa train --task extract`` (test sentences dropped from
training with --exclude; dev: a seeded 10% of train, MAMS: val.xml; never the test),
exports with ``absa export`` (parity-checked) and writes one JSON file under
benchmarks/results/extraction/; a setup whose file exists is skipped (resumable).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/extraction.py --setups rest14 lap14 mams
    python benchmarks/extraction.py --setups rest14+mams --seeds 1 2
    python benchmarks/extraction.py --setups union --config C --tag=-c --quantize int8

``--quantize int8`` exports the trained run int8 (``absa export --quantize int8``) and
measures it as another setup (``<setup><tag>-int8``); ``--from-partial`` measures a killed
run's best epoch so far.

End to end (rest14 / lap14 test): the extractor's spans are classified by the shipped
sentiment model (model/artifacts/default); a triple counts when span and label both match
the gold (test files hold only non-conflict aspects). Latency: one sentence per
onnxruntime call over the test sentences, ``--threads`` intra-op threads.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.cli import main as absa  # noqa: E402
from absa.cli.extract import HELDOUT_EMPTY, PARTIAL, evaluate_extraction  # noqa: E402
from absa.model.spans import span_scores  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from absa.training.sentences import read_sentences  # noqa: E402
from benchmarks.datasets import PROJECT_MACHINE, data_dir  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "extraction"
log = logging.getLogger("benchmarks.extraction")

TESTS = {
    "rest14": "semeval14/Restaurants_Test_Gold.xml.seg",
    "lap14": "semeval14/Laptops_Test_Gold.xml.seg",
    "mams": "mams/test.xml",
}


@dataclass(frozen=True)
class Setup:
    train: tuple[str, ...]
    dev: str | None
    tests: tuple[str, ...]
    unlabelled: tuple[str, ...] = ()  # sentence texts for a teacher to tag (--unlabelled)


UNION = (
    "semeval14/xml/Restaurants_Train_v2.xml",
    "semeval14/xml/Laptops_Train_v2.xml",
    "mams/train.xml",
    "acos-laptop/train.jsonl",
)
# in-domain sentences without a test set here: restaurants (SemEval-15) and products
# (television, T-shirt reviews); Yelp's texts are whole reviews, left out
EXTRA = (
    "semeval15/restaurant_train.raw",
    "television/Television_Train.xml.seg",
    "tshirt/Menstshirt_Train.xml.seg",
)


SETUPS = {
    "rest14": Setup(("semeval14/xml/Restaurants_Train_v2.xml",), None, ("rest14",)),
    "lap14": Setup(("semeval14/xml/Laptops_Train_v2.xml",), None, ("lap14",)),
    "mams": Setup(("mams/train.xml",), "mams/val.xml", ("mams",)),
    "rest14+mams": Setup(
        ("semeval14/xml/Restaurants_Train_v2.xml", "mams/train.xml"), None, ("rest14", "mams")
    ),
    "lap14+acos": Setup(
        ("semeval14/xml/Laptops_Train_v2.xml", "acos-laptop/train.jsonl"), None, ("lap14",)
    ),
    "union": Setup(UNION, None, ("rest14", "lap14", "mams")),
    "union+extra": Setup(UNION, None, ("rest14", "lap14", "mams"), EXTRA),
}


def end_to_end(extractor: Path, test: Path) -> dict:
    """Triples (start, end, label): extracted spans classified by the shipped model."""
    from absa.model.extractor import Extractor
    from absa.model.predictor import Predictor
    from absa.model.runtime import DEFAULT_MODEL_DIR, Runtime

    runtime = Runtime.load(DEFAULT_MODEL_DIR, device="cpu")
    predictor = Predictor(runtime, extractor=Extractor.load(extractor, device="cpu"))
    sentences = read_sentences(test)
    gold = [{(s.start, s.end, s.label) for s in sent.spans} for sent in sentences]
    pred = [{(p.start, p.end, p.label) for p in predictor(s.text, None)} for s in sentences]
    meta = runtime.metadata  # which sentiment model: the shipped one changes
    model = f"{meta.get('name')}:{meta.get('version')}"
    return {**span_scores(gold, pred), "sentiment_model": model}


def latency(extractor: Path, texts: list[str], threads: int) -> dict:
    from absa.model.extractor import Extractor

    ext = Extractor.load(extractor, device="cpu", threads=threads)
    for t in texts[:50]:
        ext.extract([t])
    ms = []
    for t in texts:
        t0 = time.perf_counter()
        ext.extract([t])
        ms.append((time.perf_counter() - t0) * 1000)
    ms.sort()
    t0 = time.perf_counter()
    ext.extract(texts)
    batched = (time.perf_counter() - t0) * 1000 / len(texts)
    return {
        "threads": threads,
        "sentences": len(texts),
        "batch1_mean_ms": statistics.fmean(ms),
        "batch1_p50_ms": ms[len(ms) // 2],
        "batch1_p99_ms": ms[int(len(ms) * 0.99)],
        "batched_ms_per_sentence": batched,
    }


def run_one(
    name: str,
    seed: int,
    config: Path | None,
    threads: int,
    keep: Path,
    tag: str = "",
    partial: bool = False,
    quantize: str | None = None,
    unlabelled: tuple[Path, ...] = (),
) -> dict:
    """Train (or reuse the run of) one setup and seed, export and measure; ``quantize``:
    the same run exported int8, its result named ``<setup><tag>-int8``; ``unlabelled``:
    more sentence files for the teacher to tag (e.g. benchmarks/tag_copies.py's)."""
    from benchmarks.extraction_dev import dev_by_source

    setup = SETUPS[name]
    d = data_dir()
    q = f"-{quantize}" if quantize else ""
    run, art = keep / f"{name}{tag}__s{seed}", keep / f"{name}{tag}{q}__s{seed}.artifact"
    shutil.rmtree(art, ignore_errors=True)
    if partial and not (run / "run.json").is_file():  # a killed run: its best epoch so far
        run = Path(f"{run}{PARTIAL}")
        if not (run / "run.json").is_file():
            raise RuntimeError(f"{run}: no partial run")
    reuse = (run / "run.json").is_file()  # a complete run of an interrupted benchmark
    args = ["train", "--task", "extract", "--train", *(str(d / f) for f in setup.train)]
    args += ["--dev", str(d / setup.dev)] if setup.dev else []
    args += ["--exclude", *(str(d / f) for f in TESTS.values()), "--seed", str(seed)]
    args += ["--threads", "1", "--out", str(run), "--quiet"]
    args += ["--config", str(config)] if config else []
    more = [*(str(d / f) for f in setup.unlabelled), *(str(f.resolve()) for f in unlabelled)]
    args += ["--unlabelled", *more] if more else []
    if not reuse:
        shutil.rmtree(run, ignore_errors=True)
        if absa(args) != 0:
            raise RuntimeError(f"training {name} failed")
    history = json.loads((run / "history.json").read_text())
    train_s = sum(h["seconds"] for h in history)
    export = ["export", "--run", str(run), "--out", str(art), "--version", f"{name}-s{seed}"]
    if absa(export + (["--quantize", quantize] if quantize else [])):
        raise RuntimeError(f"export {name} failed")
    info = json.loads((run / "run.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    result: dict = {
        "setup": name + tag + q,
        "seed": seed,
        "config": json.loads(config.read_text()) if config else {},
        "train_files": list(setup.train),
        "unlabelled_files": [*setup.unlabelled, *(str(f) for f in unlabelled)],
        "sentences": info["sentences"],
        "excluded_overlap": info.get("excluded_overlap"),
        "best_epoch": info["best_epoch"],
        "dev_at_training": metrics["dev"],  # the decoder of the training code's version
        "dev": evaluate_extraction(art, [str(run / "dev.jsonl")]),
        "dev_by_source": dev_by_source(art, read_sentences(run / "dev.jsonl")),
        "partial": info.get("partial"),  # {"epochs_done"} when a killed run was evaluated
        "train_seconds": train_s,  # the epochs' own time (evaluation on dev included)
        "epochs_run": len(history),
        "test": {t: evaluate_extraction(art, [str(d / TESTS[t])]) for t in setup.tests},
        "code_version": code_version(),
        "machine": PROJECT_MACHINE,
    }
    empty = run / HELDOUT_EMPTY
    if empty.is_file():
        rep = evaluate_extraction(art, [str(empty)])
        result["heldout_empty"] = {
            "sentences": rep["sentences"],
            "false_positives": rep["predicted"],
            "sentences_with_none_found": _none_found(art, empty),
        }
    result["end_to_end"] = {
        t: end_to_end(art, d / TESTS[t]) for t in setup.tests if t in ("rest14", "lap14")
    }
    texts = [s.text for t in setup.tests for s in read_sentences(d / TESTS[t])]
    result["latency"] = latency(art, texts, threads)
    result["artifact_bytes"] = sum(f.stat().st_size for f in art.iterdir())
    if quantize:
        result["quantization"] = json.loads((art / "metadata.json").read_text())["quantization"]
    return result


def _none_found(art: Path, path: Path) -> int:
    from absa.model.extractor import Extractor

    texts = [json.loads(line)["text"] for line in path.read_text().splitlines() if line]
    return sum(not spans for spans in Extractor.load(art, device="cpu").extract(texts))


def _prf(rep: dict) -> str:
    return f"{rep['precision']:.1f} / {rep['recall']:.1f} / **{rep['f1']:.2f}**"


def error_kinds(extractor: Path, test: Path) -> dict[str, int]:
    """Wrong predicted spans that overlap a gold span (boundary) or none (spurious); gold
    spans missed with an overlapping prediction (boundary) or without (missed); and of the
    wrong-boundary predictions, how many are shorter than, longer than or cross their gold
    span (``span_errors``)."""
    from absa.model.extractor import Extractor

    sentences = read_sentences(test)
    found = Extractor.load(extractor, device="cpu").extract([s.text for s in sentences])
    kinds: Counter[str] = Counter()
    for sent, spans in zip(sentences, found, strict=True):
        kinds.update(span_errors(sent.span_set, {(f.start, f.end) for f in spans}))
    return {k: kinds[k] for k in ERROR_KINDS}


ERROR_KINDS = (
    "fp_boundary", "fp_spurious", "fn_boundary", "fn_missed",
    "fp_boundary_shorter", "fp_boundary_longer", "fp_boundary_crossing",
)  # fmt: skip


def span_errors(gold: set[tuple[int, int]], pred: set[tuple[int, int]]) -> Counter[str]:
    """One sentence's errors by kind (``ERROR_KINDS``). A wrong-boundary prediction is
    "shorter" when it lies inside the first gold span it overlaps, "longer" when it holds
    it, else "crossing"."""
    from absa.model.spans import overlaps_any

    kinds: Counter[str] = Counter()
    for side, wrong, other in (("fp", pred - gold, gold), ("fn", gold - pred, pred)):
        for a in sorted(wrong):
            near = sorted(g for g in other if overlaps_any(a, {g}))
            if not near:
                kinds[f"{side}_{'spurious' if side == 'fp' else 'missed'}"] += 1
                continue
            kinds[f"{side}_boundary"] += 1
            if side == "fp":
                g = near[0]
                inside, holds = g[0] <= a[0] and a[1] <= g[1], a[0] <= g[0] and g[1] <= a[1]
                how = "shorter" if inside else "longer" if holds else "crossing"
                kinds[f"fp_boundary_{how}"] += 1
    return kinds


def report() -> str:
    """The Markdown tables of docs/benchmarks.md from the result files."""
    rows = [json.loads(f.read_text()) for f in sorted(OUT.glob("*.json"))]
    rows = [r for r in rows if "setup" in r]  # not the threshold and audit files
    out = [
        "| setup (trained on) | seed | Rest14 P / R / F1 | Lap14 P / R / F1 | MAMS P / R / F1 "
        "| dev F1 | held-out aspect-free: none found / false spans | epochs (best) | train s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = []
        for t in ("rest14", "lap14", "mams"):
            rep = r["test"].get(t)
            cells.append(f"{_prf(rep)}" if rep else "–")
        he = r.get("heldout_empty")
        held = (
            f"{he['sentences_with_none_found']}/{he['sentences']} / {he['false_positives']}"
            if he
            else "–"
        )
        out.append(
            f"| {r['setup']} | {r['seed']} | {' | '.join(cells)} | {r['dev']['f1']:.2f} | "
            f"{held} | {r['best_epoch']} | {r['train_seconds']:.0f} |"
        )
    out += [
        "",
        "| setup | end to end Rest14 P / R / F1 | end to end Lap14 P / R / F1 | batch-1 p50 / "
        "p99 ms | batched ms/sentence | artifact MB |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        e2e = [r["end_to_end"].get(t) for t in ("rest14", "lap14")]
        cells = [_prf(e) if e else "–" for e in e2e]
        lat = r["latency"]
        out.append(
            f"| {r['setup']} s{r['seed']} | {' | '.join(cells)} | {lat['batch1_p50_ms']:.2f} / "
            f"{lat['batch1_p99_ms']:.2f} | {lat['batched_ms_per_sentence']:.3f} | "
            f"{r['artifact_bytes'] / 1e6:.1f} |"
        )
    return "\n".join(out + ["", *dev_table(rows)])


def dev_table(rows: list[dict]) -> list[str]:
    """Dev F1 per source (runs that record it): the Rest14 / Lap14 / MAMS / ACOS parts of the
    dev split, their mean without ACOS, and the pooled F1."""
    cols = ("rest14", "lap14", "mams", "acos")
    out = [
        "| setup | seed | dev Rest14 | dev Lap14 | dev MAMS | dev ACOS | mean (no ACOS) | pooled |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        src = r.get("dev_by_source")
        if not src or len(src) < 3:
            continue
        cells = [f"{src[c]['f1']:.2f}" if c in src else "–" for c in cols]
        out.append(f"| {r['setup']} | {r['seed']} | {' | '.join(cells)} | "
                   f"**{src['mean']:.2f}** | {r['dev']['f1']:.2f} |")  # fmt: skip
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--setups", nargs="+", default=["rest14", "lap14", "mams"], choices=SETUPS)
    p.add_argument("--seeds", nargs="+", type=int, default=[1])
    p.add_argument("--config", type=Path, help="{model: TaggerConfig, train: TagTrainConfig}")
    p.add_argument("--tag", default="", help="suffix of the result files (a config's name)")
    p.add_argument("--threads", type=int, default=2, help="onnxruntime threads for latency")
    p.add_argument("--keep", type=Path, default=Path("runs/bench-extract"))
    p.add_argument("--report", action="store_true", help="print the tables of the results")
    p.add_argument("--quantize", choices=["int8"],
                   help="export the trained runs int8: results <setup><tag>-int8")  # fmt: skip
    p.add_argument("--from-partial", action="store_true",
                   help="evaluate a killed run's best epoch so far (<run>.partial)")  # fmt: skip
    p.add_argument("--errors", type=Path, help="an extractor artifact: its error kinds per test")
    p.add_argument("--unlabelled", nargs="+", type=Path, default=[],
                   help="more sentence files for the config's teacher to tag")  # fmt: skip
    args = p.parse_args()
    if args.report:
        sys.stdout.write(report() + "\n")
        return 0
    if args.errors:
        for t, f in TESTS.items():
            sys.stdout.write(f"{t}: {error_kinds(args.errors, data_dir() / f)}\n")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    args.keep.mkdir(parents=True, exist_ok=True)
    for name in args.setups:
        for seed in args.seeds:
            q = f"-{args.quantize}" if args.quantize else ""
            out = OUT / f"{name}{args.tag}{q}__s{seed}.json"
            if out.exists():
                log.info("%s exists, skipped", out)
                continue
            res = run_one(
                name, seed, args.config, args.threads, args.keep, args.tag, args.from_partial,
                args.quantize, tuple(args.unlabelled),
            )  # fmt: skip
            write_record(out, **res)
            log.info("%s: %s", out.name, {t: round(r["f1"], 2) for t, r in res["test"].items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
