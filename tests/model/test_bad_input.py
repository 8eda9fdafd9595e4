"""The core refuses bad input itself (absa.errors types, no HTTP): lone surrogates, terms
longer than the text (before any regex is compiled), and never echoes the input whole."""

from __future__ import annotations

import re

import pytest

from absa.errors import InputError
from absa.model import aspects
from absa.model.aspects import occurrences, pinned, shown
from absa.model.predictor import Predictor
from absa.model.runtime import DEFAULT_MODEL_DIR, Runtime

TEXT = "The fries were soggy but the burger was great"


@pytest.fixture(scope="module")
def predictor() -> Predictor:
    return Predictor(Runtime.load(DEFAULT_MODEL_DIR, device="cpu", threads=1))


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        ("the food \ud800 was good", "food"),
        ("the food was good", "\udfff"),
        ("the \ud800 food", "\ud800"),
        ("the \ud800 food", {"term": "\ud800", "start": 4, "end": 5}),
    ],
    ids=["text", "aspect", "both", "pinned"],
)
@pytest.mark.parametrize("explain", [False, True])
def test_lone_surrogate_is_an_input_error(
    predictor: Predictor, text: str, aspect: object, explain: bool
) -> None:
    with pytest.raises(InputError, match="lone surrogate"):
        predictor(text, [aspect], explain=explain)


def test_term_longer_than_the_text_is_refused_before_any_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_search(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("a term that cannot occur was searched for")

    monkeypatch.setattr(aspects, "find", no_search)
    with pytest.raises(InputError, match="longer than the text") as err:
        occurrences(TEXT, "x" * 990_000)
    assert len(str(err.value)) < 200


def test_huge_terms_leave_no_compiled_regexes_behind() -> None:
    re.purge()
    for i in range(12):
        with pytest.raises(InputError):
            occurrences(TEXT, f"{i}" + "x" * 100_000)
    assert len(getattr(re, "_cache", {})) + len(getattr(re, "_cache2", {})) == 0


def test_error_messages_show_a_short_escaped_piece() -> None:
    long = "y" * 5000
    with pytest.raises(InputError) as err:
        pinned(long + " food", "food", 0, 4)
    assert len(str(err.value)) < 200
    assert shown("a\ud800b") == "'a\\\\ud800b'"
    assert shown("x" * 500).endswith("\u2026'")
    assert len(shown("x" * 500)) < 70
    with pytest.raises(InputError) as err:
        occurrences(TEXT, "pizza" * 5)
    assert "'pizzapizza" in str(err.value)


def test_a_decomposed_term_longer_than_a_composed_text_is_still_found() -> None:
    """The length check counts what could match: a term typed decomposed ("e" + U+0301)
    has more code points than the same words composed in the text, and was refused as
    'longer than the text' though it occurs in it."""
    import unicodedata

    text = "Crème brûlée!"
    term = unicodedata.normalize("NFD", "Crème brûlée")
    assert len(term) > len(text)
    (span,) = occurrences(text, term)
    assert (span.start, span.end, span.term) == (0, 12, "Crème brûlée")
    with pytest.raises(InputError, match="does not occur"):
        occurrences(text, term + "s")  # it could have: it is searched for, and not found
    with pytest.raises(InputError, match="longer than the text"):
        occurrences(text, term + "s" * 5)  # longer than any form of the text


@pytest.mark.parametrize(
    ("term", "start", "end", "words"),
    [
        ("\u0301", 8, 9, "starts on a combining mark"),  # the accent alone
        ("cafe", 4, 8, "ends before a combining mark"),  # the word without its accent
    ],
)
def test_a_pinned_span_that_cuts_a_character_apart_is_refused(
    predictor: Predictor, term: str, start: int, end: int, words: str
) -> None:
    """The same terms given as strings are not found (the search keeps a mark with its
    letter); pinned, the accent alone was classified as if it were the word."""
    text = "The cafe\u0301 was nice"
    with pytest.raises(InputError, match=words):
        predictor(text, [{"term": term, "start": start, "end": end}])
    with pytest.raises(InputError, match="does not occur"):
        predictor(text, [term])
    assert predictor(text, [{"term": "cafe\u0301", "start": 4, "end": 9}])[0].term == "cafe\u0301"


def test_a_text_that_opens_on_a_stray_combining_mark_keeps_it_with_the_first_word(
    predictor: Predictor,
) -> None:
    """No letter comes before it to cut it from: a span from 0 was refused with "pin the
    letter with its marks", which the caller could not do, and the search never found it."""
    text = "\u0301cafe was nice"
    pinned = predictor(text, [{"term": "\u0301cafe", "start": 0, "end": 5}])[0]
    assert (pinned.term, pinned.start, pinned.end) == ("\u0301cafe", 0, 5)
    assert predictor(text, ["\u0301cafe"])[0].start == 0


def test_a_pinned_span_of_whitespace_is_an_empty_aspect_named_by_its_place(
    predictor: Predictor,
) -> None:
    """As the same aspect given as a string is: its place in the list was missing."""
    with pytest.raises(InputError, match=r"^aspects\[1\]: the aspect is empty$"):
        predictor("The burger", ["burger", {"term": " ", "start": 3, "end": 4}])
    with pytest.raises(InputError, match=r"^aspects\[0\]: the aspect is empty$"):
        predictor("The burger", ["   "])
