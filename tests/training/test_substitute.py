"""Tests for the word-substitution copies of the transfer set."""

from __future__ import annotations

import numpy as np

from absa.model.text import tokenize
from absa.training.overlap import bracket_free
from absa.training.substitute import (
    copies,
    from_sources,
    nearest_words,
    sentence_copies,
    source_file,
)
from absa.training.transfer_set import Candidate

NEAR = {
    "food": ["meal"],  # an aspect word: never replaced inside a span
    "was": ["seemed"],
    "great": ["superb", "awful"],
    "but": ["though"],
    "slow": ["sluggish"],
    "the": ["a"],
}
TEXT = "The food was great but the service was slow ."


def _aspects(text: str) -> list[Candidate]:
    return [
        Candidate(text, 4, 8, 0.9, "a.xml:1"),
        Candidate(text, 27, 34, 1.0, "a.xml:2"),
    ]


def test_copies_keep_every_aspect_of_the_sentence_and_move_its_offsets() -> None:
    made = copies(_aspects(TEXT), NEAR, set(), n=6, p=0.7, seed=1)
    texts = {c.text for c in made}
    assert len(texts) >= 3 and TEXT not in texts
    for text in texts:
        mine = [c for c in made if c.text == text]
        assert [c.aspect for c in mine] == ["food", "service"]  # both, in each copy
        assert all(c.confidence == 1.0 and c.source.startswith("subst") for c in mine)
        # the words outside the spans are the sentence's or their neighbours
        old, new = tokenize(TEXT), tokenize(text)
        assert len(old) == len(new)
        for a, b in zip(old, new, strict=True):
            assert b.text == a.text or b.text.lower() in NEAR.get(a.text.lower(), [])
    assert any(c.source == "subst0:a.xml:1" for c in made)


def test_copies_are_deterministic_and_follow_the_seed() -> None:
    one = copies(_aspects(TEXT), NEAR, set(), n=3, p=0.5, seed=1)
    assert one == copies(_aspects(TEXT), NEAR, set(), n=3, p=0.5, seed=1)
    assert one != copies(_aspects(TEXT), NEAR, set(), n=3, p=0.5, seed=2)


def test_banned_sentences_and_sentences_with_nothing_to_replace_get_no_copy() -> None:
    assert copies(_aspects(TEXT), NEAR, {bracket_free(TEXT)}, n=3, p=1.0) == []
    # nor is a copy kept that is a banned (test) sentence
    (made, _) = copies(_aspects(TEXT), NEAR, set(), n=1, p=1.0)
    assert copies(_aspects(TEXT), NEAR, {bracket_free(made.text)}, n=1, p=1.0) == []
    plain = "Service : slow ."
    assert copies([Candidate(plain, 0, 7, 1.0, "b:1")], {"service": ["staff"]}, set(), p=1.0) == []
    # p = 1 replaces every word outside the spans that has a neighbour
    (c, _) = copies(_aspects(TEXT), NEAR, set(), n=1, p=1.0)
    assert c.text.startswith("A food seemed ")
    assert c.text.endswith(" a service seemed sluggish .")


def test_nearest_words_by_cosine_without_the_word_itself() -> None:
    words = ["good", "great", "bad", "awful", "Paris", "2", "meh"]
    vectors = np.array(
        [[1, 0.1, 0], [1, 0.2, 0], [-1, 0, 0.1], [-1, 0, 0.2], [1, 0.15, 0], [1, 0.1, 0.01],
         [0, 0, 1]],
        dtype=np.float32,
    )  # fmt: skip
    near = nearest_words(words, vectors, k=2, min_cosine=0.5)
    assert near["good"] == ["great"]  # "Paris" and "2" are no plain words: never offered
    assert near["bad"] == ["awful"]
    assert "meh" not in near and "Paris" not in near
    assert nearest_words(words, vectors, k=2, vocab=2, min_cosine=0.5) == {
        "good": ["great"], "great": ["good"]
    }  # fmt: skip


def test_source_file_of_candidates_and_copies() -> None:
    assert source_file("/d/Restaurants_Train.xml.seg:19") == ("/d/Restaurants_Train.xml.seg", False)
    assert source_file("subst3:/d/train.raw:7") == ("/d/train.raw", True)
    assert source_file("no-line") == ("no-line", False)
    assert source_file("C:/x/a.jsonl:4") == ("C:/x/a.jsonl", False)


def test_from_sources_keeps_the_named_files_candidates() -> None:
    found = [
        Candidate("a b", 0, 1, 1.0, "/d/semeval14/Laptops_Train.xml.seg:3"),
        Candidate("c d", 0, 1, 1.0, "/d/acos-laptop/train.jsonl:9"),
        Candidate("e f", 0, 1, 1.0, "/d/mams/train.xml:2"),
        Candidate("g h", 0, 1, 1.0, "subst1:/d/semeval14/Laptops_Train.xml.seg:4"),
    ]
    kept = from_sources(found, ["Laptops_Train.xml.seg", "acos-laptop/train.jsonl"])
    assert [c.text for c in kept] == ["a b", "c d", "g h"]
    assert from_sources(found, ["nothing.xml"]) == []


def test_sentence_copies_replace_any_word_and_skip_banned_and_repeated_texts() -> None:
    texts = [TEXT, "nothing to swap here", TEXT, "the food was slow"]
    made = sentence_copies(texts, NEAR, banned={bracket_free("the food was slow")}, n=4, p=1.0)
    # p = 1: every word with a neighbour replaced, the aspect's too ("food" -> "meal")
    both = {f"A meal seemed {w} though a service seemed sluggish ." for w in ("superb", "awful")}
    assert made and {k for _, k in made} == {0} and {t for t, _ in made} <= both
    made = sentence_copies(texts, NEAR, banned=set(), n=3, p=0.5, seed=1)
    assert {k for _, k in made} <= {0, 3}  # the repeated text is copied once, the other never
    assert len({t for t, _ in made}) == len(made) and all(t not in texts for t, _ in made)
    assert made == sentence_copies(texts, NEAR, banned=set(), n=3, p=0.5, seed=1)  # seeded
    assert made != sentence_copies(texts, NEAR, banned=set(), n=3, p=0.5, seed=2)
