"""The optimiser's parts: the weights' moving average and the settings it is given."""

from __future__ import annotations

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


def test_label_smoothing_of_one_or_more_is_refused() -> None:
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\)"):
        TrainConfig(label_smoothing=1.0)
