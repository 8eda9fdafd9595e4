"""Properties of the word text pipeline over generated text (hypothesis): tokens map back to
their characters, encoding any non-blank span of any text either works or raises TextError,
the aspect mask marks exactly the tokens the span overlaps, and find_all finds real matches."""

from __future__ import annotations

import re
import string
import unicodedata

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from absa.model.aspects import find_all
from absa.model.termsearch import expand, fold, visible
from absa.model.text import _INVISIBLE, PAD, UNK, TextError, WordPipeline, tokenize

PROPS = settings(
    max_examples=300,
    deadline=None,
    database=None,  # no example database: no run depends on an earlier one (CI=true derandomizes)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
VOCAB = [PAD, UNK, "the", "food", "was", "great", "n't", "'s", ",", ".", "é"]
PIPES = (WordPipeline(VOCAB), WordPipeline(VOCAB, max_len=4))  # the second one windows
# Letters whose str.lower() maps one character to one character and agrees with re.IGNORECASE
# (unlike e.g. "İ", which lowers to two characters, or "ſ" and "K", which re.I matches to
# "s" and "k" while .lower() leaves them alone). find_all's lower-case property is checked on
# text from this alphabet; on any text, only what holds whatever the case rules.
SIMPLE_CASE = string.ascii_letters + string.digits + " ,.'!?-\téÉñÑüÜ"
SPECIAL = ["", " ", "don't", "it's", "n't", "'", "\u0130", "\u017f", "\u00df", "\u200b", "\x85"]


def overlaps(tok, start: int, end: int) -> bool:  # type: ignore[no-untyped-def]
    return tok.start < end and tok.end > start


@st.composite
def text_and_span(draw: st.DrawFn, alphabet: st.SearchStrategy[str] | None = None):  # type: ignore[no-untyped-def]
    """Any text and a span [start, end) of it that is not only whitespace."""
    text = draw(st.text(alphabet, min_size=1, max_size=60) if alphabet else st.text(max_size=60))
    assume(text.strip())
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    assume(text[start:end].strip())
    return text, start, end


@PROPS
@given(text=st.one_of(st.text(), st.sampled_from(SPECIAL)))
def test_tokens_round_trip_and_cover_all_but_whitespace(text: str) -> None:
    tokens = tokenize(text)
    covered = [False] * len(text)
    prev_end = 0
    for t in tokens:
        assert text[t.start : t.end] == t.text
        assert prev_end <= t.start < t.end  # in order, not overlapping, never empty
        prev_end = t.end
        for i in range(t.start, t.end):
            covered[i] = True
    # a zero-width space, a byte-order mark or a mark of direction is no token (but in a text
    # of nothing else)
    bare = [c for c, cov in zip(text, covered, strict=True) if not cov]
    assert all(c.isspace() or c in _INVISIBLE for c in bare)


@PROPS
@given(case=text_and_span(), pipe=st.sampled_from(PIPES))
@example(case=("don't", 2, 3), pipe=PIPES[0])
@example(case=("a \u200b b", 2, 3), pipe=PIPES[0])
@example(case=("x" * 3 + " y" * 10, 0, 23), pipe=PIPES[1])
@example(case=("\u00e9\xad x", 0, 2), pipe=PIPES[0])  # looked up as the vocabulary's "\u00e9"
@example(case=("e\u0301 x", 0, 2), pipe=PIPES[0])  # composed to it
def test_encode_any_span(case: tuple[str, int, int], pipe: WordPipeline) -> None:
    text, start, end = case
    all_tokens = tokenize(text)
    try:
        enc = pipe.encode(text, start, end)
    except TextError:
        # legitimate only when no token touches the span, or more than the window holds do
        touched = sum(overlaps(t, start, end) for t in all_tokens)
        assert touched == 0 or touched > pipe.max_len
        return
    assert len(enc.ids) == len(enc.tokens) == len(enc.aspect_mask) <= pipe.max_len
    # the window is a contiguous run of the text's tokens
    first = all_tokens.index(enc.tokens[0])
    assert enc.tokens == all_tokens[first : first + len(enc.tokens)]
    # the mask marks exactly the tokens the span overlaps, and at least one
    assert enc.aspect_mask == [int(overlaps(t, start, end)) for t in enc.tokens]
    assert 1 in enc.aspect_mask
    inside = [t for t in all_tokens if overlaps(t, start, end)]
    assert inside == [t for t, m in zip(enc.tokens, enc.aspect_mask, strict=True) if m]
    for t, i in zip(enc.tokens, enc.ids, strict=True):  # a word the vocabulary spells alike
        if t.text.lower() in pipe.index:
            assert i == pipe.index[t.text.lower()], t
        assert 0 <= i < len(pipe)
    if (text, start, end) == ("\u00e9\xad x", 0, 2):  # the examples: found without the hyphen
        assert enc.ids[0] == pipe.index["\u00e9"]
    for t in enc.tokens:
        assert text[t.start : t.end] == t.text


@PROPS
@given(case=text_and_span())
def test_a_non_blank_span_always_covers_a_token(case: tuple[str, int, int]) -> None:
    """Every character but whitespace and the invisible marks belongs to a token, so encoding
    never refuses a span that holds something else."""
    text, start, end = case
    assume(any(not c.isspace() and c not in _INVISIBLE for c in text[start:end]))
    enc = PIPES[0].encode(text, start, end)
    assert sum(enc.aspect_mask) >= 1


@st.composite
def text_and_term(draw: st.DrawFn, alphabet: str | None = None) -> tuple[str, str]:
    """A text and a term: mostly a piece of the text with its case changed, sometimes any."""
    chars = st.sampled_from(alphabet) if alphabet else st.characters()
    text = draw(st.text(chars, max_size=60))
    if text and draw(st.integers(0, 4)):
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        piece = text[start:end]
        term = "".join(c.swapcase() if draw(st.booleans()) else c for c in piece)
    else:
        term = draw(st.text(chars, max_size=8))
    return text, term


def check_spans(text: str, term: str, spans: list[tuple[int, int]]) -> None:
    stripped = term.strip()
    if not stripped:
        assert spans == []
        return
    prev_end = 0
    for s, e in spans:
        assert prev_end <= s < e <= len(text)  # in order, not overlapping
        prev_end = e
    whole = [
        (s, e)
        for s, e in spans
        if not re.match(r"\w", _seen(text, s - 1, -1)) and not re.match(r"\w", _seen(text, e, 1))
    ]
    assert whole == spans or not whole  # whole words when there are any, else substrings


def _seen(text: str, i: int, step: int) -> str:
    """The first character from ``i`` on, by ``step``, that a reader sees (the lookup reads
    past the invisible ones: a soft hyphen, a zero-width space), or "" at the text's edge."""
    while 0 <= i < len(text) and not visible(text[i]):
        i += step
    return text[i] if 0 <= i < len(text) else ""


@PROPS
@given(case=text_and_term(SIMPLE_CASE))
@example(case=("The Food, the FOOD and seafood", "food"))
@example(case=("seafood", "FOOD"))
@example(case=("x", " "))
def test_find_all_matches_ignoring_case(case: tuple[str, str]) -> None:
    text, term = case
    spans = find_all(text, term)
    check_spans(text, term, spans)
    for s, e in spans:
        assert text[s:e].lower() == term.strip().lower()
    # a term cut out of the text is always found (the lookup is case-insensitive)
    if term.strip() and term.strip().lower() in text.lower():
        assert spans


def folded(s: str) -> str:
    """``s`` as the search compares it: composed, case-folded in full (``termsearch``)."""
    return fold(expand(unicodedata.normalize("NFC", s)))


@PROPS
@given(case=text_and_term())
@example(case=("\u0130stanbul", "i\u0307stanbul"))
@example(case=("\u017fun", "SUN"))
@example(case=("0000\xad", "000\xad"))  # a term's invisible end is read past: "000" found
@example(case=("ab a\xadb", "B"))  # no whole "b" (a soft hyphen joins "ab"): substrings
@example(case=("000000000000\xdf", "SS"))  # full case folding: "ß" is "ss" (found by CI)
def test_find_all_on_any_unicode(case: tuple[str, str]) -> None:
    text, term = case
    spans = find_all(text, term)
    check_spans(text, term, spans)
    for s, e in spans:
        # what is found is the term folded as the search folds (full case folding: "ß" and
        # "SS"; "ſ" and "s" as re.IGNORECASE takes them), the invisible ones read past and any
        # run of whitespace matching any other
        found, wanted = (" ".join(visible(x).split()) for x in (text[s:e], term))
        assert folded(found) == folded(wanted), (found, wanted)
