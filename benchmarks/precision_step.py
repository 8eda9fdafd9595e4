"""A fine-tuned transformer's training step in float32 and in bfloat16 autocast
(``train.precision``): the network of a config (the ``accurate`` head over its encoder), the
step as ``absa train`` takes it (``training.train.step_loss`` under ``step_precision``, then
backward, the gradient clip and AdamW as ``make_optimizer`` makes it), on random batches of
the teacher recipe's shape; the two precisions alternate over rounds, so other jobs on the
machine slow both alike.

    python benchmarks/precision_step.py [--config benchmarks/configs/teacher-union-mpnet.json \\
        | --preset accurate] [--threads 2] [--batch 16] [--length 40] [--steps 4] \\
        [--rounds 3] [--device cpu]

Writes benchmarks/results/latency/precision-step-<config or preset>-<device>.json.
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
from absa.training.inference import resolve_device  # noqa: E402
from absa.training.optim import make_optimizer  # noqa: E402
from absa.training.presets import PRECISIONS, Preset, load_config  # noqa: E402
from absa.training.records import Example  # noqa: E402
from absa.training.train import Inputs, build_network, step_loss, step_precision  # noqa: E402
from benchmarks.records import write_record  # noqa: E402

log = logging.getLogger("precision_step")


def network(preset: Preset, device: torch.device) -> ABSANet:
    """The config's network as ``absa train`` builds it (``build_network``) for a few
    made-up training items."""
    torch.manual_seed(0)
    items = [Example("the fries were soggy", 4, 9, "negative")]
    return build_network(preset, items, device)[2]


def step_seconds(
    net: ABSANet, preset: Preset, precision: str, batch: int, length: int, steps: int
) -> float:
    """Mean seconds per training step (after one warm-up step)."""
    device = next(net.parameters()).device
    tcfg = replace(preset.train, precision=precision)
    opt = make_optimizer(net, tcfg)
    vocab = net.encoder.model.config.vocab_size  # type: ignore[union-attr]
    ids = torch.randint(1000, vocab, (batch, length), device=device)
    aspect = torch.zeros(batch, length, dtype=torch.long, device=device)
    aspect[:, 5:7] = 1
    b = list(range(batch))
    inputs = Inputs(train=[], dev=[], y_train=torch.randint(0, 3, (batch,), device=device),
                    y_dev=[], device=device)  # fmt: skip
    tensors = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "aspect_mask": aspect,
    }
    net.train()
    spent = 0.0
    for i in range(1 + steps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        with step_precision(precision, device):
            loss, _ = step_loss(net, tensors, b, inputs, None, None, None, None, tcfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), tcfg.clip)
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i:
            spent += time.perf_counter() - t
    return spent / steps


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="benchmarks/configs/teacher-union-mpnet.json")
    ap.add_argument("--preset", help="a preset instead of --config (accurate: MiniLM-L6)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--length", type=int, default=40)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    preset = load_config(None if args.preset else Path(args.config), args.preset)
    name = args.preset or Path(args.config).stem
    device = resolve_device(args.device)
    net = network(preset, device)
    rounds: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    for r in range(args.rounds):
        for precision in PRECISIONS:
            s = step_seconds(net, preset, precision, args.batch, args.length, args.steps)
            rounds[precision].append(s)
            log.info("round %d: %s %.3f s a step of %d", r + 1, precision, s, args.batch)
    median = {p: statistics.median(v) for p, v in rounds.items()}
    log.info("bf16 / fp32: %.2f", median["bf16"] / median["fp32"])
    cpu = device.type == "cpu"
    write_record(
        ROOT / "benchmarks" / "results" / "latency"
        / f"precision-step-{name}-{device.type}.json",
        config=args.preset or args.config,
        device=str(device),
        threads=args.threads,
        batch=args.batch,
        length=args.length,
        steps=args.steps,
        bf16_instructions=bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()) if cpu else None,
        median_seconds=median,
        rounds_seconds=rounds,
        bf16_over_fp32=median["bf16"] / median["fp32"],
    )  # fmt: skip


if __name__ == "__main__":
    main()
