"""A "model soup" (Wortsman et al. 2022): the mean of the weights of several runs of one
network, written as a run of its own that export, evaluation and benchmarks take as any
other. It answers for one network's compute what an ensemble answers for n.

    python benchmarks/soup.py --runs runs/distill/A.s4 runs/distill/A.s4-ft11 \
        runs/distill/A.s4-ft12 --out runs/distill/A.s4-soup

The runs must be one network over one vocabulary and dev split (model_config.json,
vocab.json, pipeline.json and dev.jsonl byte for byte alike: children of one parent, made
with ``train.init_from``). Independently seeded runs are refused only if those differ:
their mean is not a network that works (no shared basin), which the soup's dev score shows.
The soup's run.json keeps its parts and their weights' sha256; its metrics.json is the
soup's own dev score (``greedy``: parts are added best dev first and kept only when the
soup's dev accuracy does not fall, Wortsman et al.'s greedy soup; the default is all parts).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training import rundir  # noqa: E402
from absa.training.evaluate import evaluate  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402

log = logging.getLogger("soup")

SAME = (rundir.MODEL_CONFIG, "vocab.json", "pipeline.json", "dev.jsonl")


def check_parts(runs: list[Path]) -> None:
    """Every run is a finished run with the first one's network, words and dev split."""
    for run in runs:
        if not rundir.is_run(run) or not (run / rundir.WEIGHTS).is_file():
            raise SystemExit(f"soup: {run} is not a finished training run")
    for name in SAME:
        first = sha256_file(runs[0] / name)
        for run in runs[1:]:
            if sha256_file(run / name) != first:
                raise SystemExit(f"soup: {run / name} differs from {runs[0] / name}")


def mean_weights(paths: list[Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the float tensors (in float64, stored in their own dtype);
    any other tensor must be equal in every part."""
    from safetensors.torch import load_file

    states = [load_file(str(p)) for p in paths]
    if any(set(s) != set(states[0]) for s in states[1:]):
        raise SystemExit("soup: the parts hold different tensors")
    out: dict[str, torch.Tensor] = {}
    for key, first in states[0].items():
        parts = [s[key] for s in states]
        if any(p.shape != first.shape or p.dtype != first.dtype for p in parts):
            raise SystemExit(f"soup: tensor {key} has another shape or dtype in some part")
        if first.is_floating_point():
            out[key] = torch.stack([p.double() for p in parts]).mean(0).to(first.dtype)
        elif all(torch.equal(p, first) for p in parts):
            out[key] = first
        else:
            raise SystemExit(f"soup: tensor {key} is not a float and differs between parts")
    return out


def write_soup(runs: list[Path], out: Path) -> dict:
    """The soup of ``runs`` as a run directory at ``out``; returns its dev report."""
    from safetensors.torch import save_file

    if out.exists():
        raise SystemExit(f"soup: {out} exists")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(runs[0], tmp)
    save_file(mean_weights([r / rundir.WEIGHTS for r in runs]), str(tmp / rundir.WEIGHTS))
    info = json.loads((tmp / rundir.RUN_INFO).read_text())
    info["soup"] = {
        "parts": [str(r) for r in runs],
        "weights_sha256": [sha256_file(r / rundir.WEIGHTS) for r in runs],
        "code_version": code_version(),
    }
    (tmp / rundir.RUN_INFO).write_text(json.dumps(info, indent=1) + "\n")
    dev = evaluate(tmp, rundir.read_dev_examples(tmp))
    metrics = json.loads((tmp / rundir.METRICS).read_text())
    metrics.update({"dev": dev, "best_epoch": None, "soup_of": len(runs)})
    (tmp / rundir.METRICS).write_text(json.dumps(metrics, indent=1) + "\n")
    tmp.rename(out)
    return dev


def dev_accuracy(run: Path) -> float:
    return float(json.loads((run / rundir.METRICS).read_text())["dev"]["accuracy"])


def greedy(runs: list[Path], out: Path) -> list[Path]:
    """Wortsman et al.'s greedy soup: best dev first, each part kept if dev does not fall."""
    order = sorted(runs, key=dev_accuracy, reverse=True)
    kept, best = [order[0]], dev_accuracy(order[0])
    trial = out.with_name(out.name + ".trial")
    for run in order[1:]:
        shutil.rmtree(trial, ignore_errors=True)
        acc = write_soup([*kept, run], trial)["accuracy"]
        log.info("greedy: + %s -> dev %.4f (best %.4f)", run.name, acc, best)
        if acc >= best:
            kept, best = [*kept, run], acc
    shutil.rmtree(trial, ignore_errors=True)
    return kept


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--greedy", action="store_true", help="keep only parts that do not lower dev")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    torch.set_num_threads(args.threads)
    if len(args.runs) < 2:
        raise SystemExit("soup: give at least two runs")
    check_parts(args.runs)
    runs = greedy(args.runs, args.out) if args.greedy else args.runs
    dev = write_soup(runs, args.out)
    for run in runs:
        log.info("part %s: dev %.4f", run, dev_accuracy(run))
    log.info(
        "soup of %d -> %s: dev accuracy %.4f, macro-F1 %.4f",
        len(runs),
        args.out,
        dev["accuracy"],
        dev["macro_f1"],
    )


if __name__ == "__main__":
    main()
