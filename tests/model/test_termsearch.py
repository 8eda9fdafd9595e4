"""The term search in time linear in the text (absa.model.termsearch): the character facts it
stands on, checked over every code point, and its spans against a regular expression run on
the folded text (what the lookup did before, one pattern per term, in time that grew with
text x term)."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from absa.model.termsearch import EXPANSIONS, find, fold, is_word
from tests.model.test_text_properties import PROPS

CHARS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
ALL = "".join(CHARS)


def test_fold_keeps_every_character_one_character_that_re_ignorecase_takes_for_it() -> None:
    folded = [fold(c) for c in CHARS]
    assert [c for c, f in zip(CHARS, folded, strict=True) if len(f) != 1] == []
    changed = [(c, f) for c, f in zip(CHARS, folded, strict=True) if f != c]
    assert len(changed) > 1000  # every capital letter of every script, and more
    assert [c for c, f in changed if not re.fullmatch(re.escape(c), f, re.IGNORECASE)] == []
    # and a whole text folds character by character ("Σ" at a word's end lowers to "ς")
    assert fold("ΟΔΟΣ İstanbul ſun") == fold("οδοσ istanbul sun") == fold("οδος ıstanbul sun")


def test_characters_re_ignorecase_takes_as_one_fold_alike() -> None:
    # the few beyond plain lower-casing: dotless i, long s, the Greek symbol forms, final sigma
    for a, b in ["iı", "İi", "sſ", "σς", "µμ", "θϑ", "βϐ", "kK", "ß\u1e9e"]:
        assert fold(a) == fold(b), (a, b)
        assert re.fullmatch(re.escape(b), a, re.IGNORECASE) or re.fullmatch(
            re.escape(a), b, re.IGNORECASE
        )


def test_the_characters_folded_to_several_are_those_of_str_casefold() -> None:
    """Every character ``str.casefold`` makes several word characters of (all in the Basic
    Multilingual Plane, which is all ``EXPANSIONS`` looks in), as it does; the others it
    makes several of are a letter with combining marks, which ``fold`` keeps one."""
    several = {c: c.casefold() for c in CHARS if len(c.casefold()) > 1}
    assert max(map(ord, several)) < 0x10000
    assert {c: f for c, f in several.items() if is_word(f)} == EXPANSIONS
    assert len(EXPANSIONS) > 70 and EXPANSIONS["ß"] == EXPANSIONS["\u1e9e"] == "ss"
    others = [f for c, f in several.items() if c not in EXPANSIONS]
    assert all(any(unicodedata.category(x) == "Mn" for x in f) for f in others)


def test_word_and_space_characters_are_those_of_re() -> None:
    assert {c for c in CHARS if is_word(c)} == set(re.findall(r"\w", ALL))
    assert {c for c in CHARS if c.isspace()} == set(re.findall(r"\s", ALL))
    # folding never makes a word character of a non-word one or the other way round
    bad = [c for c in CHARS if is_word(fold(c)) != is_word(c) or fold(c).isspace() != c.isspace()]
    assert bad == []


#: the invisible characters a reader reads past: soft hyphen, zero-width space, (non-)joiner,
#: direction marks, word joiner, byte-order mark, the controls of direction
INVISIBLE = "\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u061c" + "".join(
    map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
)


def visible(s: str) -> str:
    return "".join(c for c in s if c not in INVISIBLE)


def reference(text: str, term: str, whole: bool) -> list[tuple[int, int]]:
    """One regular expression over the folded text, its invisible characters dropped: the
    term's words apart by any whitespace, whole words or anywhere (folding keeps every
    character one character but those ``str.casefold`` makes several of; the offsets of the
    characters kept map back)."""
    # each character kept as its full case folding where that is several word characters
    pieces = [(i, c.casefold() if c in EXPANSIONS else c) for i, c in enumerate(text)]
    kept = [i for i, p in pieces if p not in INVISIBLE for _ in p]
    first = [j == 0 for i, p in pieces if p not in INVISIBLE for j in range(len(p))]
    term = "".join(c.casefold() if c in EXPANSIONS else c for c in term)
    pattern = r"\s+".join(re.escape(w) for w in visible(fold(term)).split())
    if whole:
        pattern = rf"(?<!\w){pattern}(?!\w)"
    clean = fold("".join(p for _, p in pieces if p not in INVISIBLE))
    # an occurrence that cuts one character's folding apart is none: the next one may start
    # inside it (a lookahead finds them all; those that overlap a kept one are dropped)
    spans: list[tuple[int, int]] = []
    for m in re.finditer(f"(?=({pattern}))", clean):
        s, e = m.start(1), m.end(1)
        if not first[s] or (e < len(first) and not first[e]):
            continue
        if spans and s < spans[-1][1]:
            continue
        spans.append((s, e))
    return [(kept[s], kept[e - 1] + 1) for s, e in spans]


#: few characters, so that terms overlap and repeat: cases, word and non-word, whitespace,
#: invisible ones
NARROW = "aAb _-.\u00a0\t\nİıiſsSΣσς\u0301é\u00ad\u200b\u200eß\ufb03f"


@st.composite
def text_and_term(draw: st.DrawFn) -> tuple[str, str]:
    any_char = st.characters(exclude_categories=["Cs"])
    chars = st.sampled_from(NARROW) if draw(st.booleans()) else any_char
    text = draw(st.text(chars, max_size=40))
    if text and draw(st.integers(0, 3)):
        start = draw(st.integers(0, len(text) - 1))
        term = text[start : draw(st.integers(start + 1, len(text)))]
    else:
        term = draw(st.text(chars, max_size=6))
    return text, term


@PROPS
@given(case=text_and_term())
@example(case=("xa a a", "A A"))  # an occurrence that fails the left edge overlaps one that holds
@example(case=("a-a-a-b", "-a-b"))
@example(case=("aaa aaa", "aa"))
@example(case=("ΟΔΟΣ οδος", "οδοσ"))
@example(case=("a \u00a0\tb a b", "A  B"))
@example(case=("the piz\u00adza, a pizza", "pizza"))  # read past: found in both
@example(case=("a\u200bb \u200e b", "b"))  # "ab" holds no whole "b"; the second is one
@example(case=("ma\u200dsala \ufeff", "Masala"))
@example(case=("Straße STRASSE", "strasse"))
@example(case=("ßs", "ss"))  # the "ss" of "ß" is found, not the "s" of it and the next "s"
@example(case=("f\ufb03", "ff"))
def test_spans_are_those_of_one_regular_expression_over_the_folded_text(
    case: tuple[str, str],
) -> None:
    text, term = case
    if not visible(term).split():
        assert find(text, term, whole=True) == find(text, term, whole=False) == []
        return
    for whole in (True, False):
        assert find(text, term, whole=whole) == reference(text, term, whole), whole


@pytest.mark.parametrize("whole", [True, False])
def test_self_repeating_text(whole: bool) -> None:
    # the security review's case, and the cases where the skipping matters
    text = "a " * 1000
    assert find(text, " ".join(["a"] * 90) + " b", whole) == []
    assert find(text, "a a", whole) == [(i, i + 3) for i in range(0, 1997, 4)]
    aaa = "a" * 2000 + " aaa"
    expected = [(2001, 2004)] if whole else [(i, i + 3) for i in range(0, 1998, 3)] + [(2001, 2004)]
    assert find(aaa, "AAA", whole) == expected


def test_only_texts_up_to_a_length_are_kept() -> None:
    from absa.model import aspects, termsearch

    short, long = "é " * 100, "é " * (termsearch.CACHED_TEXT_CHARS // 2 + 1)
    for fn in (termsearch._folded, aspects._composed, aspects._is_nfc):
        fn.cache_clear()  # type: ignore[attr-defined]
        fn(long)
        assert fn.cache_info().currsize == 0, fn  # type: ignore[attr-defined]
        fn(short)
        assert fn.cache_info().currsize == 1, fn  # type: ignore[attr-defined]
    assert find(long + "x", "X", whole=True) == [(len(long), len(long) + 1)]


def test_an_aspect_is_found_past_the_invisible_characters_of_the_text() -> None:
    """ "pizza" in "The piz\\u00adza was bad" (a soft hyphen, as web text has them) did "not
    occur"; the answer names the text's own spelling, as the extractor finds it."""
    from absa import load

    text = "The piz\u00adza was bad but the ma\u200dsala was great"
    pizza, masala = load()(text, aspects=["pizza", "Masala"])
    assert (pizza.term, pizza.start, pizza.end) == ("piz\u00adza", 4, 10)
    assert text[masala.start : masala.end] == masala.term == "ma\u200dsala"
    assert pizza.label == "negative" and masala.label == "positive"


def test_the_case_is_folded_fully_and_the_spans_are_the_texts_own_characters() -> None:
    """An aspect "STRASSE" was not found in "Straße" (nor "straße" in "STRASSE"), which
    str.casefold equates: "ß" folds to two characters, and the offsets map back to one."""
    text = "Die Straße, die STRASSE, ein \ufb01sh"
    for term in ("STRASSE", "straße", "Strasse", "STRA\u1e9eE"):
        assert find(text, term, whole=True) == [(4, 10), (16, 23)], term
    assert [text[s:e] for s, e in find(text, "Fish", whole=True)] == ["\ufb01sh"]
    # a match never cuts one character's folding apart: "ß" is "ss", not "s"
    assert find("Straße", "stras", whole=False) == []
    assert find("Straße", "se", whole=False) == []
    assert find("Straße", "SSE", whole=False) == [(4, 6)]
    assert find("Straße", "strass", whole=False) == [(0, 5)]
    assert find("\ufb03", "f", whole=False) == find("\ufb03", "fi", whole=False) == []
    assert find("\ufb03", "FFI", whole=True) == [(0, 1)]
    # whole words as the text has them: "ss" is no word of "Straße"
    assert find("Straße", "ss", whole=True) == []
    assert find("Straße", "ss", whole=False) == [(4, 5)]
