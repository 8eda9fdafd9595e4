"""The category form of the network (v_a = a learned category embedding): every attention
variant takes category ids, the category moves the answer, padding changes nothing, and
the config refuses what needs a span."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.model.config import ModelConfig
from absa.model.network import ABSANet, ExportWrapper
from absa.training.categories import category_preset
from absa.training.presets import PRESETS
from tests.model.test_network import GLOVE_PRESETS, VOCAB, batch, build, tiny

CATS = ("food", "service", "price")


def category_model(name: str, **over: object) -> ModelConfig:
    """The preset's category form, shrunk as test_network's ``tiny``."""
    return tiny(category_preset(PRESETS[name], CATS).model, **over)


@pytest.mark.parametrize("name", GLOVE_PRESETS)
def test_every_preset_takes_category_ids(name: str) -> None:
    cfg = category_model(name)
    net = build(cfg)
    assert net.input_names == ("input_ids", "attention_mask", "category_ids")
    ids, attn, _ = batch([5, 3], [(0, 1), (0, 1)])
    with torch.no_grad():
        logits, alpha, _ = net(ids, attn, category_ids=torch.tensor([0, 2]))
    assert logits.shape == (2, 3)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2))
    assert float(alpha[1, 3:].abs().sum()) == 0.0  # no weight on padding


@pytest.mark.parametrize("name", [n for n in GLOVE_PRESETS if n != "lstm"])
def test_the_category_moves_the_answer(name: str) -> None:
    net = build(category_model(name))
    ids, attn, _ = batch([6, 6], [(0, 1), (0, 1)])
    ids[1] = ids[0]  # the same sentence twice, asked about two categories
    with torch.no_grad():
        logits, _, _ = net(ids, attn, category_ids=torch.tensor([0, 1]))
    assert not torch.allclose(logits[0], logits[1])


def test_padding_changes_nothing() -> None:
    net = build(category_model("pos-scaled-selfattn", self_attention_heads=2))
    ids, attn, _ = batch([4, 7], [(0, 1), (0, 1)], t=9)
    cats = torch.tensor([1, 2])
    with torch.no_grad():
        both, _, _ = net(ids, attn, category_ids=cats)
        alone, _, _ = net(ids[:1, :4], attn[:1, :4], category_ids=cats[:1])
    torch.testing.assert_close(both[0], alone[0], atol=1e-5, rtol=1e-5)


def test_each_kind_of_model_needs_its_own_input() -> None:
    ids, attn, asp = batch([3], [(0, 1)])
    with pytest.raises(ValueError, match="category_ids"):
        build(category_model("atae-lstm"))(ids, attn, asp)
    with pytest.raises(ValueError, match="aspect_mask"):
        build(tiny(PRESETS["atae-lstm"].model))(ids, attn, category_ids=torch.tensor([0]))


def test_export_wrapper_feeds_the_category_by_name() -> None:
    net = build(category_model("atae-lstm"))
    ids, attn, _ = batch([4, 4], [(0, 1), (0, 1)])
    ids[1] = ids[0]
    cats = torch.tensor([0, 2])
    with torch.no_grad():
        probs, _ = ExportWrapper(net)(ids, attn, cats)
        logits, _, _ = net(ids, attn, category_ids=cats)
    torch.testing.assert_close(probs, torch.softmax(logits, -1))


def test_category_preset_drops_what_needs_a_span() -> None:
    fast = PRESETS["fast"]
    fast = replace(fast, model=replace(fast.model, aspect_features=True))
    cfg = category_preset(fast, CATS).model
    assert (cfg.summary, cfg.position_weighting, cfg.categories) == ("last", False, CATS)
    assert not cfg.aspect_features
    assert cfg.bidirectional and cfg.aspect_source == "category"


@pytest.mark.parametrize(
    "over",
    [
        {"aspect_source": "category"},  # no categories
        {"aspect_source": "category", "categories": ("a", "a")},
        {"aspect_source": "category", "categories": ("a",), "summary": "aspect"},
        {"aspect_source": "category", "categories": ("a",), "position_weighting": True},
        {"aspect_source": "category", "categories": ("a",), "aspect_features": True},
        {"categories": ("a",)},  # a term model with categories
        {"aspect_source": "sentence"},
    ],
)
def test_model_config_rejects(over: dict) -> None:
    with pytest.raises(ValueError):
        ModelConfig(**over)


def test_config_round_trip_keeps_the_categories(tmp_path: Path) -> None:
    cfg = replace(category_model("atae-lstm"), vocab_size=VOCAB)
    cfg.save(tmp_path / "c.json")
    assert ModelConfig.load(tmp_path / "c.json") == cfg
    assert ABSANet(cfg).category is not None and ABSANet(cfg).category.num_embeddings == 3
