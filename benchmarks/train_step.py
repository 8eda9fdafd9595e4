"""Where a word-vector student's training step goes: forward, backward (with the gradient
clip), the optimiser and the weights' moving average, for the shipped network and the card's,
with AdamW as torch runs it by default on a CPU (a loop over the tensors) and fused (one
kernel per tensor, training/optim.adamw). Random batches of the recipe's shape: a 70,000-word
table of 150-d vectors (1.8.0's students: vocabulary of the teacher-distilled vectors),
batches of 32 texts of 28 tokens, one thread; the two optimisers alternate over rounds.

    python benchmarks/train_step.py [--vocab 70000] [--steps 20] [--rounds 3]

Writes benchmarks/results/latency/train-step.json.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.network import ABSANet  # noqa: E402
from absa.training.optim import make_ema  # noqa: E402
from absa.training.presets import load_config  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("train_step")
CONFIGS = ROOT / "benchmarks" / "configs"
RECIPE = "kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof.json"  # 1.8.0's
NETWORKS = {name: CONFIGS / f"{name}-{RECIPE}" for name in ("fast", "card-lite")}
PARTS = ("forward", "backward and clip", "optimiser", "moving average")


def step_ms(network: str, vocab: int, fused: bool, steps: int, batch: int, length: int) -> dict:
    """Mean milliseconds per step of each part (after 5 warm-up steps)."""
    preset = load_config(NETWORKS[network], None)
    torch.manual_seed(0)
    net = ABSANet(replace(preset.model, vocab_size=vocab))
    opt = torch.optim.AdamW(
        net.parameters(), lr=1e-3, weight_decay=preset.train.weight_decay, fused=fused or None
    )
    ema = make_ema(net, preset.train)
    ids = torch.randint(2, vocab, (batch, length))
    mask = torch.ones(batch, length, dtype=torch.long)
    aspect = torch.zeros(batch, length, dtype=torch.long)
    aspect[:, 5:7] = 1
    y = torch.randint(0, 3, (batch,))
    spent = dict.fromkeys(PARTS, 0.0)
    for i in range(5 + steps):
        t = [time.perf_counter()]
        loss = torch.nn.functional.cross_entropy(net(ids, mask, aspect)[0], y)
        t.append(time.perf_counter())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), preset.train.clip)
        t.append(time.perf_counter())
        opt.step()
        t.append(time.perf_counter())
        if ema is not None:
            ema.update_parameters(net)
        t.append(time.perf_counter())
        if i >= 5:
            for k, part in enumerate(PARTS):
                spent[part] += t[k + 1] - t[k]
    return {part: s / steps * 1e3 for part, s in spent.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=70000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=28)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)
    runs: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for network in NETWORKS:
            for fused in (False, True):
                key = f"{network}, {'fused' if fused else 'loop'} AdamW"
                got = step_ms(network, args.vocab, fused, args.steps, args.batch, args.length)
                runs.setdefault(key, []).append(got)
    medians = {
        key: {part: round(statistics.median(r[part] for r in rs), 1) for part in PARTS}
        for key, rs in runs.items()
    }
    for key, parts in medians.items():
        total = sum(parts.values())
        log.info("%-24s %s, step %.1f ms", key, parts, total)
    write_record(
        ROOT / "benchmarks" / "results" / "latency" / "train-step.json",
        vocab=args.vocab,
        batch=args.batch,
        length=args.length,
        steps=args.steps,
        median_ms=medians,
        rounds_ms=runs,
    )


if __name__ == "__main__":
    main()
