"""``category_init = "words"``: each category's v_a starts at the mean of its words' vectors
in the encoder's table; categories whose words the table does not know keep a random start."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.model.config import ModelConfig
from absa.model.network import ABSANet
from absa.model.text import PAD, UNK, WordPipeline
from absa.training.categories import category_preset, init_from_words
from absa.training.category_readers import categories_of
from absa.training.presets import TrainConfig
from absa.training.train import build_network
from tests.helpers import category_examples, tiny_preset


def test_v_a_starts_at_the_mean_of_the_category_words() -> None:
    pipe = WordPipeline([PAD, UNK, "food", "service", "price"])
    vectors = torch.randn(5, 4)
    cats = ("food", "FOOD#SERVICE", "drinks/price", "style_options")
    cfg = ModelConfig(vocab_size=5, embed_dim=4, aspect_source="category", categories=cats)
    torch.manual_seed(0)
    net = ABSANet(cfg, vectors=vectors)
    before = net.category.weight.detach().clone()  # type: ignore[union-attr]
    assert init_from_words(net, pipe) == ["style_options"]
    got = net.category.weight.detach()  # type: ignore[union-attr]
    torch.testing.assert_close(got[0], vectors[2])
    torch.testing.assert_close(got[1], (vectors[2] + vectors[3]) / 2)
    torch.testing.assert_close(got[2], vectors[4])  # "drinks" is unknown: price alone
    torch.testing.assert_close(got[3], before[3])  # nothing known: the random start stays


def test_training_starts_from_the_words(small_glove: Path, tmp_path: Path) -> None:
    examples = category_examples()
    base = category_preset(tiny_preset("atae-lstm", small_glove), categories_of(examples))
    preset = replace(base, train=replace(base.train, category_init="words"))
    _, pipe, net = build_network(preset, examples, torch.device("cpu"))
    assert "ambience" in pipe.index  # the category words join the vocabulary
    food = net.cfg.categories.index("food")
    table = net.encoder.table.weight  # type: ignore[union-attr]
    torch.testing.assert_close(net.category.weight[food], table[pipe.index["food"]])  # type: ignore[union-attr]
    _, _, random_net = build_network(base, examples, torch.device("cpu"))
    assert not torch.allclose(random_net.category.weight[food], table[pipe.index["food"]])  # type: ignore[union-attr]


def test_category_init_is_checked() -> None:
    with pytest.raises(ValueError, match="category_init"):
        TrainConfig(category_init="glove")
