"""Training for aspect categories: a preset turned into its category form.

The network is the same; only v_a changes (a learned embedding per category instead of the
mean of the term's word vectors). The parts of a preset that need the aspect's span in the
text (``summary`` "aspect"/"both", ``position_weighting``) fall back to Wang et al.'s
choices (the last state, no proximity weights), and the log says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from absa.training.presets import Preset

log = logging.getLogger(__name__)


def category_preset(preset: Preset, categories: Sequence[str]) -> Preset:
    """``preset`` with v_a learned per category (ids: positions in ``categories``)."""
    model = preset.model
    if model.summary != "last" or model.position_weighting:
        log.info(
            "categories have no span in the text: summary %r -> 'last', position_weighting "
            "%s -> False",
            model.summary,
            model.position_weighting,
        )
    model = replace(
        model,
        aspect_source="category",
        categories=tuple(categories),
        summary="last",
        position_weighting=False,
    )
    return replace(preset, model=model)
