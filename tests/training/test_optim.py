"""The optimiser's parts: the weights' moving average and the settings it is given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.training.optim import make_ema
from absa.training.presets import TrainConfig
from absa.training.tag_config import TagTrainConfig


def test_the_moving_average_leaves_integer_buffers_whole(tiny_transformer: Path) -> None:
    """A transformer's position ids are int64 buffers; averaged in float with the weights,
    20 steps at decay 0.9 made 21 of 64 of them one less (0 1 2 2 4 5 5 ...), so the
    epoch picked on dev was scored by another network than the one saved."""
    from transformers import AutoModel

    net = AutoModel.from_pretrained(str(tiny_transformer))
    ema = make_ema(net, TrainConfig(ema=0.9))  # type: ignore[arg-type]
    assert ema is not None
    for _ in range(20):
        ema.update_parameters(net)
    for (name, mine), (_, theirs) in zip(
        ema.module.named_buffers(), net.named_buffers(), strict=True
    ):
        assert torch.equal(mine, theirs), name
    for mine, theirs in zip(ema.module.parameters(), net.parameters(), strict=True):
        assert torch.allclose(mine, theirs)  # the weights never moved: the average is them


@pytest.mark.parametrize("config", [TrainConfig, TagTrainConfig])
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("clip", 0.0, "clip must be a number > 0"),  # every gradient zeroed: nothing trains
        ("clip", -1.0, "clip must be a number > 0"),  # the gradients reversed
        ("clip", float("nan"), "clip must be a number > 0"),  # the weights made NaN
        ("lr", -1e-3, "lr must be a number >= 0"),
        ("lr", float("inf"), "lr must be a number >= 0"),
        ("weight_decay", -0.1, "weight_decay must be a number >= 0"),
        ("warmup", 1.0, r"warmup must be in \[0, 1\)"),
    ],
)
def test_an_optimiser_setting_that_would_train_wrong_is_refused(
    config: type, field: str, value: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        config(**{field: value})
    config(**{field: config().__getattribute__(field)})  # its default is fine


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [  # each trained wrong without a word: NaN weights, gradient ascent, a term left off
        ("embed_lr", float("nan"), "embed_lr must be a number >= 0"),
        ("embed_lr", -1.0, "embed_lr must be a number >= 0"),
        ("encoder_lr", -1.0, "encoder_lr must be a number >= 0"),
        ("attention_entropy", float("nan"), "attention_entropy must be a number"),
        ("attention_coverage", float("nan"), "attention_coverage must be a number >= 0"),
        ("distill_temperature", float("nan"), "distill_temperature must be a number > 0"),
        ("augment", float("nan"), "augment must be a number >= 0"),
        ("augment", float("inf"), "augment must be a number >= 0"),  # a traceback in augment
        ("patience", -3, "patience must be >= 0"),
        ("distill_states", float("nan"), "distill_states must be a number >= 0"),  # ".: no"
    ],
)
def test_training_values_that_would_train_wrong_are_refused(
    field: str, value: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{field: value})
    TrainConfig(**{field: TrainConfig().__getattribute__(field)})  # its default is fine


def test_label_smoothing_of_one_or_more_is_refused() -> None:
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\)"):
        TrainConfig(label_smoothing=1.0)


def _steps(opt: torch.optim.Optimizer, w: torch.nn.Parameter, n: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        w.grad = torch.randn(w.shape, generator=g) * 0.01
        opt.step()


def test_adamw_is_fused_on_the_cpu_and_steps_as_the_loop_does() -> None:
    """The fused kernel is AdamW's own update, one pass per tensor: the same weights within
    float rounding, with and without weight decay (0: Adam)."""
    from absa.training.optim import adamw

    for decay in (0.01, 0.0):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(300, 20))
        start = w.detach().clone()
        v = torch.nn.Parameter(w.detach().clone())
        fused = adamw([{"params": [w], "lr": 1e-2}], weight_decay=decay)
        assert fused.defaults["fused"] is True
        loop = torch.optim.Adam([v], lr=1e-2) if decay == 0 else torch.optim.AdamW([v], lr=1e-2)
        _steps(fused, w, 50, seed=1)
        _steps(loop, v, 50, seed=1)
        assert torch.allclose(w, v, atol=1e-5)
        assert (w - start).abs().max() > 0.1  # 50 steps of 0.01 moved it


def test_a_checkpoint_of_the_loop_optimiser_goes_on_under_the_fused_one() -> None:
    """Runs stopped before the optimiser was fused resume with its state (steps, moments)."""
    import copy

    from absa.training.optim import adamw

    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(50, 8))
    loop = torch.optim.AdamW([w], lr=1e-2, weight_decay=0.01)
    _steps(loop, w, 5, seed=2)
    v = torch.nn.Parameter(w.detach().clone())
    fused = adamw([{"params": [v], "lr": 1e-2}], weight_decay=0.01)
    fused.load_state_dict(copy.deepcopy(loop.state_dict()))
    _steps(loop, w, 5, seed=3)
    _steps(fused, v, 5, seed=3)
    assert float(fused.state[v]["step"]) == 10
    assert torch.allclose(w, v, atol=1e-6)


def test_training_values_the_network_cannot_use_are_refused() -> None:
    """A transformer of max_len 2 read [CLS] [SEP] alone, every aspect mask empty (dev
    accuracy 6.67, written, exit 0); an attention penalty with attention 'none' added a
    constant (its alpha a one-hot on the last state) and changed nothing but the loss shown."""
    from absa.training.presets import PRESETS

    accurate, lstm = PRESETS["accurate"], PRESETS["lstm"]
    with pytest.raises(ValueError, match=r"max_len must be >= 3 with a transformer"):
        replace(accurate, train=replace(accurate.train, max_len=2))
    replace(accurate, train=replace(accurate.train, max_len=3))
    for key in ("attention_coverage", "attention_entropy"):
        with pytest.raises(ValueError, match=f"{key} needs an attention"):
            replace(lstm, train=replace(lstm.train, **{key: 0.1}))
