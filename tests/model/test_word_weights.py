"""The attention per word that `explain` answers, from a word-piece model's tokens: special
tokens out and the rest renormalised, pieces merged, words named as the request wrote them."""

from __future__ import annotations

import numpy as np
import pytest

from absa.model.runtime import Output, words
from absa.model.text import Token


def test_word_pieces_become_the_requests_words_and_their_weights_sum_to_one() -> None:
    text = "The Fo\u200dod 😀"  # a zero-width joiner the tokenizer drops inside "Food"
    tokens = [
        Token("[CLS]", 0, 0),
        Token("the", 0, 3),  # lower-cased by the tokenizer
        Token("fo", 4, 6),
        Token("##od", 7, 9),  # after the dropped joiner: not contiguous, still the same word
        Token("[UNK]", 10, 11),
        Token("[SEP]", 11, 11),
    ]
    attention = np.array([0.2, 0.1, 0.2, 0.2, 0.1, 0.2])
    out = Output(np.array([0.1, 0.2, 0.7]), attention, tokens, oov=(0, 0, 0, 0, 1, 0))
    got = words(out, text)
    assert [(t.text, t.start, t.end) for t, _, _ in got] == [
        ("The", 0, 3),
        ("Fo\u200dod", 4, 9),
        ("😀", 10, 11),
    ]
    assert [w for _, w, _ in got] == pytest.approx([1 / 6, 4 / 6, 1 / 6])
    assert [u for _, _, u in got] == [False, False, True]


def test_a_word_model_keeps_its_weights_as_they_are() -> None:
    """No special token held any weight: nothing is renormalised (the served numbers of
    word models do not move)."""
    tokens = [Token("the", 0, 3), Token("food", 4, 8)]
    out = Output(np.array([0.5, 0.5]), np.array([0.25, 0.7]), tokens)
    assert [w for _, w, _ in words(out)] == [0.25, 0.7]
