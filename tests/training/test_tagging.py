"""The tagger's training loop: seeded runs repeat exactly; word dropout changes training."""

from __future__ import annotations

from pathlib import Path

from absa.model.tagger_config import TaggerConfig
from absa.training.tagging import TagTrainConfig, fit_tagger
from tests.helpers import extraction_sentences


def _losses(glove: Path, **train: object) -> list[float]:
    sentences = extraction_sentences()
    cfg = TaggerConfig(hidden_size=8, char_dim=4, char_filters=4)
    tcfg = TagTrainConfig(epochs=3, batch_size=8, glove=str(glove), glove_top_k=0, **train)
    run = fit_tagger(sentences, sentences, cfg, tcfg)
    return [h["train_loss"] for h in run.history]


def test_same_seed_same_run_and_word_dropout_changes_it(small_glove: Path) -> None:
    plain = _losses(small_glove)
    assert _losses(small_glove) == plain
    dropped = _losses(small_glove, word_dropout=0.5)
    assert _losses(small_glove, word_dropout=0.5) == dropped
    assert dropped != plain
