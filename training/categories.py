"""Training for aspect categories: a preset turned into its category form.

The network is the same; only v_a changes (a learned embedding per category instead of the
mean of the term's word vectors), which ``init_from_words`` can start at the mean of the
category's words' vectors (``TrainConfig.category_init = "words"``). The parts of a preset
that need the aspect's span in the text (``summary`` "aspect"/"both",
``position_weighting``) fall back to Wang et al.'s choices (the last state, no proximity
weights), and the log says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import torch

from absa.model.categories import category_words
from absa.model.network import ABSANet, WordEncoder
from absa.model.text import WordPiecePipeline, WordPipeline
from absa.training.presets import Preset

log = logging.getLogger(__name__)


def category_preset(preset: Preset, categories: Sequence[str]) -> Preset:
    """``preset`` with v_a learned per category (ids: positions in ``categories``)."""
    model = preset.model
    if model.summary != "last" or model.position_weighting or model.aspect_features:
        log.info(
            "categories have no span in the text: summary %r -> 'last', position_weighting "
            "%s -> False, aspect_features %s -> False",
            model.summary,
            model.position_weighting,
            model.aspect_features,
        )
    model = replace(
        model,
        aspect_source="category",
        categories=tuple(categories),
        summary="last",
        position_weighting=False,
        aspect_features=False,
    )
    return replace(preset, model=model)


@torch.no_grad()
def init_from_words(net: ABSANet, pipeline: WordPipeline | WordPiecePipeline) -> list[str]:
    """Start each category's v_a at the mean of its words' rows in the encoder's input table
    (GloVe, or a transformer's word pieces); the categories none of whose words the table
    knows keep their random start and are returned."""
    if net.category is None:
        raise ValueError("not a category model")
    if isinstance(net.encoder, WordEncoder):  # cfg.encoder "embedding"
        table = net.encoder.table.weight
    else:
        table = net.encoder.model.get_input_embeddings().weight
    unknown = []
    for i, name in enumerate(net.cfg.categories):
        ids = [j for j in pipeline.tokenized(category_words(name)).ids if j != pipeline.unk_id]
        if ids:
            net.category.weight[i] = table[ids].mean(0)
        else:
            unknown.append(name)
    log.info("category v_a from their words' vectors; no known word: %s", unknown or "none")
    return unknown
