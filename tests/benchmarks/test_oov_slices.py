"""benchmarks/oov_slices.py: which aspects have a word the vocabulary lacks."""

from __future__ import annotations

from absa.training.records import Example
from benchmarks.oov_slices import aspect_has_oov

TEXT = "the thunderbolt port is fast"


def test_only_the_aspects_own_words_count() -> None:
    vocab = {"the", "port", "is", "fast"}
    assert aspect_has_oov(Example(TEXT, 4, 19, "positive"), vocab)  # "thunderbolt port"
    assert not aspect_has_oov(Example(TEXT, 16, 20, "positive"), vocab)  # "port"
    assert not aspect_has_oov(Example(TEXT.upper(), 16, 20, "positive"), vocab)  # lower-cased


def test_a_span_inside_a_word_counts_the_sentence() -> None:
    assert aspect_has_oov(Example(TEXT, 5, 8, "neutral"), {"the", "port", "is", "fast"})
    every = {"the", "thunderbolt", "port", "is", "fast"}
    assert not aspect_has_oov(Example(TEXT, 5, 8, "neutral"), every)
