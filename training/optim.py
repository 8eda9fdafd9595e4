"""What the training loop steps with: the optimiser (AdamW, the encoder at its own rate),
the learning-rate schedule, the weights' moving average and the class-balanced weights."""

from __future__ import annotations

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from absa.model.network import ABSANet
from absa.training.presets import TrainConfig

__all__ = ["adamw", "balanced_weights", "make_ema", "make_optimizer", "make_schedule"]


def balanced_weights(y: torch.Tensor, classes: int) -> torch.Tensor:
    """N / (classes x count) per class (a class absent from train gets weight 0)."""
    counts = torch.bincount(y, minlength=classes).float()
    return torch.where(counts > 0, len(y) / (classes * counts.clamp(min=1)), 0.0)


def make_optimizer(net: ABSANet, tcfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW with the head at ``lr`` and a tuned encoder at its own rate."""
    enc = [p for p in net.encoder.parameters() if p.requires_grad]
    enc_ids = {id(p) for p in enc}
    head = [p for p in net.parameters() if p.requires_grad and id(p) not in enc_ids]
    enc_lr = tcfg.encoder_lr if net.cfg.encoder == "transformer" else tcfg.embed_lr
    groups = [{"params": head, "lr": tcfg.lr}]
    if enc:
        groups.append({"params": enc, "lr": enc_lr})
    return adamw(groups, weight_decay=tcfg.weight_decay)


def adamw(groups: list[dict], weight_decay: float) -> torch.optim.AdamW:
    """AdamW, fused (one kernel over each tensor) where its parameters' device has the
    kernel (CPU, CUDA): the same steps within float rounding (2e-7 after 50 steps), and 10x
    faster on a 70,000-word table, where the loop was half of a word-vector student's
    training step (benchmarks/train_step.py, docs/distillation.md). With ``weight_decay`` 0
    it is Adam. The decay is on every parameter of the groups, biases, LayerNorm and the
    learned positional scales and gates too (none is exempted: the runs' recipe)."""
    params = [p for g in groups for p in g["params"]]
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(groups, weight_decay=weight_decay, fused=fused or None)


def make_ema(net: ABSANet, tcfg: TrainConfig) -> AveragedModel | None:
    """The weights' exponential moving average (torch's AveragedModel), when ``tcfg.ema``.
    Parameters only: a transformer's buffers are integer position and token-type ids, which
    an average in float rounds down (position 3 read as 2), and no buffer here holds
    statistics to average."""
    if not tcfg.ema:
        return None
    return AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(tcfg.ema), use_buffers=False)


def make_schedule(
    opt: torch.optim.Optimizer, tcfg: TrainConfig, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Constant, or (``warmup`` > 0) a linear warm-up then a linear decay to zero."""
    total = steps_per_epoch * tcfg.epochs
    warm = int(total * tcfg.warmup)

    def lr_factor(step: int) -> float:
        if tcfg.warmup <= 0:
            return 1.0
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    return torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
