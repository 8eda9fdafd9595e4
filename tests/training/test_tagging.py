"""The tagger's training loop: seeded runs repeat exactly; word dropout changes training."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

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


def test_gold_spans_no_tagging_can_mark_are_counted_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A span inside a word, or with a space at its edge, is trained as the words it
    touches and can never be matched exactly: it used to pass without a word."""
    from absa.model.tagtext import TagText
    from absa.model.text import PAD, UNK, WordPipeline
    from absa.training.sentences import GoldSpan, Sentence
    from absa.training.tagging import encode

    text = TagText(WordPipeline([PAD, UNK, "the", "pasta", "was", "great"]))
    good = Sentence("the pasta was great", (GoldSpan(4, 9, "positive"),), "x")
    inside = Sentence("the pasta was great", (GoldSpan(5, 7, "positive"),), "x")  # "as"
    spaced = Sentence("the pasta was great", (GoldSpan(3, 9, "positive"),), "x")  # " pasta"
    with caplog.at_level(logging.WARNING, logger="absa.training.tagging"):
        encode(text, [good])
        assert not caplog.records
        encode(text, [good, inside, spaced])
    (record,) = caplog.records
    assert record.getMessage().startswith("2 of 3 gold spans can never be marked exactly")
    assert "the first: 'as' in 'the pasta was great'" in record.getMessage()


def test_a_run_whose_loss_is_not_a_number_stops_and_is_refused(
    small_glove: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """NaN weights tag nothing: the run trained on to its last epoch and kept the first
    (F1 0, every weight NaN), which failed the export's parity check after it."""
    with (
        caplog.at_level(logging.WARNING, logger="absa.training.tagging"),
        pytest.raises(ValueError, match="diverged in epoch 1"),
    ):
        _losses(small_glove, lr=1e30)
    (record,) = caplog.records
    assert record.getMessage().startswith("epoch 1: training loss nan: the network diverged")
