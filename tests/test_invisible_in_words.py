"""An invisible format character inside a word is read past by the tokenizer, the
vocabulary and the aspect search alike, as a soft hyphen and a word joiner were: the search
found "pizza" in "piz\u200bza", but the tokenizer split the word at the zero-width space (an
unknown "piz", then "za"), kept "piz\u200dza" whole but unknown, and the search did not find
"pizza" in "piz\u2061za" at all. The same sentence got other answers for the same visible
words. The shipped model (model/artifacts/default)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

import absa
from absa.model.aspects import find_all
from absa.model.runtime import DEFAULT_MODEL_DIR
from absa.model.termsearch import find
from absa.model.text import TOKENIZERS, WordPipeline, tokenize
from tests.service.conftest import make_settings

#: every invisible format character a word may hold: zero-width space, marks of direction,
#: byte-order mark, Arabic letter mark, embeddings, overrides and isolates of direction,
#: zero-width (non-)joiner, soft hyphen, word joiner, invisible operators, Mongolian vowel
#: separator, combining grapheme joiner, emoji variation selector
INSIDE = [
    *"\u200b\u200e\u200f\ufeff\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    *"\u200d\u200c\u00ad\u2060\u2061\u2062\u2063\u2064\u180e\u034f\ufe0f",
]
PLAIN = "The pizza was great but the service was slow"


def marked(mark: str) -> str:
    return PLAIN.replace("pizza", f"piz{mark}za")


@pytest.fixture(scope="module")
def pipeline() -> WordPipeline:
    pipe = absa.load(DEFAULT_MODEL_DIR).predictor.runtime.pipeline
    assert isinstance(pipe, WordPipeline)
    return pipe


@pytest.mark.parametrize("mark", INSIDE, ids=lambda m: f"U+{ord(m):04X}")
def test_a_word_with_an_invisible_character_inside_is_one_token_of_the_same_id(
    pipeline: WordPipeline, mark: str
) -> None:
    text = marked(mark)
    got, want = pipeline.tokenized(text), pipeline.tokenized(PLAIN)
    assert got.ids == want.ids
    assert pipeline.index["pizza"] in got.ids
    assert all(text[t.start : t.end] == t.text for t in got.tokens)
    assert got.tokens[1].text == f"piz{mark}za" and (got.tokens[1].start, got.tokens[1].end) == (
        4,
        10,
    )
    for version in TOKENIZERS:  # the tagger's words too, read with any version
        assert [t.text for t in tokenize(text, version)][:3] == ["The", f"piz{mark}za", "was"]
    assert find_all(text, "pizza") == [(4, 10)]
    assert find(text, "pizza", whole=True) == [(4, 10)]
    assert find(PLAIN, f"piz{mark}za", whole=True) == [(4, 9)]


def test_invisible_characters_at_a_words_edge_stay_out_of_it() -> None:
    """Before or after a word, or between a word and punctuation, they are no part of it."""
    for mark in "\u200b\u2061\u180e\u202a":
        text = f"the {mark}pizza{mark}, was{mark} good"
        assert [t.text for t in tokenize(text)] == ["the", "pizza", ",", "was", "good"]
    assert [t.text for t in tokenize("great \u2764\ufe0f it")] == ["great", "\u2764\ufe0f", "it"]
    assert find_all("I \u2764\ufe0f it", "\u2764\ufe0f") == [(2, 4)]  # as it was
    assert find_all("I \u2764\ufe0f it", "\u2764") == [(2, 3)]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    from absa.service.app import create_app

    with TestClient(create_app(make_settings(DEFAULT_MODEL_DIR))) as c:
        yield c


@pytest.mark.parametrize("mark", INSIDE, ids=lambda m: f"U+{ord(m):04X}")
def test_the_api_answers_the_marked_sentence_as_the_plain_one(
    client: TestClient, mark: str
) -> None:
    def ask(text: str) -> dict:
        r = client.post("/v1/predict", json={"text": text, "aspects": ["pizza", "service"]})
        assert r.status_code == 200, r.text
        return r.json()

    want, got = ask(PLAIN)["results"], ask(marked(mark))["results"]
    assert [r["scores"] for r in got] == [r["scores"] for r in want]
    assert (got[0]["term"], got[0]["start"], got[0]["end"]) == (f"piz{mark}za", 4, 10)
