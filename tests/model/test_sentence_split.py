"""A text cut into its sentences for the extractor (model/sentence_split.py), and the served
extraction of a text of several sentences finding what each sentence alone finds."""

from __future__ import annotations

import pytest

from absa.model.sentence_split import sentence_spans


def pieces(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "The fries were soggy. The burger was great!",
            ["The fries were soggy.", "The burger was great!"],
        ),
        ("Good food!!! Bad service?? OK.", ["Good food!!!", "Bad service??", "OK."]),
        ('"Great!" she said. Yes.', ['"Great!" she said.', "Yes."]),
        ("The pasta (amazing.) Then dessert.", ["The pasta (amazing.)", "Then dessert."]),
        ("Rated 4. 5 stars is too many", ["Rated 4.", "5 stars is too many"]),
        ("para one\n\n  para two", ["para one", "para two"]),
        # no end: a title, "e.g.", "p.m.", a decimal, no space, a quote's own stop
        (
            "I had e.g. the pasta and Dr. Smith's soup at 5 p.m. today",
            ["I had e.g. the pasta and Dr. Smith's soup at 5 p.m. today"],
        ),
        ("the food was 3.5 stars.The end", ["the food was 3.5 stars.The end"]),
        ('"Great!" she said', ['"Great!" she said']),
        # a unit or a time ends a sentence before a capital, not before a lower-case word
        ("at 3 p.m. The place was empty", ["at 3 p.m.", "The place was empty"]),
        ("we waited 20 min. The waiter", ["we waited 20 min.", "The waiter"]),
        ("made in the u.s.a. the food", ["made in the u.s.a. the food"]),
        ("no! the service was awful", ["no!", "the service was awful"]),  # "no" before "!"
        # a lower-case word after a stop ends it too: reviews and tweets written so
        (
            "the fries were soggy. the burger was great! staff ok? yes... fine",
            ["the fries were soggy.", "the burger was great!", "staff ok?", "yes...", "fine"],
        ),
        ("line one\nline two", ["line one\nline two"]),  # a line wrapped by hand
        ("", [""]),
        ("   ", ["   "]),
    ],
)
def test_sentences_and_where_they_end(text: str, want: list[str]) -> None:
    assert pieces(text) == want


def test_the_spans_cover_every_character_but_the_space_between() -> None:
    text = "  One.  Two!\n\nThree?  "
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["  One.", "Two!", "Three?  "]
    between = [text[e:s] for (_, e), (s, _) in zip(spans, spans[1:], strict=False)]
    assert all(not gap.strip() for gap in between)


def test_a_review_of_several_sentences_is_tagged_a_sentence_at_a_time() -> None:
    """Tagged whole, a review lost a third of its terms (MAMS test sentences joined five to
    a text: recall 57 % against 81 % one at a time), most in its later sentences: the
    tagger is trained on one sentence at a time. Served, each sentence is tagged alone and
    its spans put back at their place in the text."""
    from absa import load

    clf = load(extractor="shipped", device="cpu")
    sentences = [
        "The waiter was rude and the soup was cold.",
        "We ordered the lamb chops with a side of fries.",
        "The dessert menu was short but the tiramisu was excellent.",
        "Parking was a nightmare.",
        "The wine list is long and the prices are fair.",
    ]
    alone = [[r.term for r in clf(s, aspects=None)] for s in sentences]
    text = " ".join(sentences)
    together = clf(text, aspects=None)
    assert [r.term for r in together] == [t for terms in alone for t in terms]
    assert all(text[r.start : r.end] == r.term for r in together)
    assert sum(map(len, alone)) >= 8  # a real test: the tagger finds terms in each


def test_a_long_text_is_cut_in_time_linear_in_its_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """The word before each stop was looked for from the text's start, so a text's cut took
    time quadratic in its length (a 200,000-character row of a file: 69 s); it is looked
    for in the characters just before the stop, and the cut is the same."""
    import re

    from absa.model import sentence_split

    spans: list[int] = []
    word_before = sentence_split._WORD_BEFORE

    class Looked:
        def search(self, text: str, pos: int, endpos: int) -> re.Match[str] | None:
            spans.append(endpos - pos)
            return word_before.search(text, pos, endpos)

    text = "We went at 7 p.m. with Dr. Smith. The food was great. " * 400
    want = sentence_spans(text)
    monkeypatch.setattr(sentence_split, "_WORD_BEFORE", Looked())
    assert sentence_spans(text) == want and len(want) == 800
    assert spans and max(spans) <= 64
