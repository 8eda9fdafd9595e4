"""A text of several sentences cut into them, each with its character offsets: the extractor
is trained on one sentence at a time, and tagging a review of five at once found 57 % of
the gold terms where each sentence alone found 81 % (MAMS test sentences joined with
spaces; the later ones lost most). Rules, no model: a sentence ends at a run of ``.``, ``!``,
``?`` or ``…`` (closing quotes and brackets after it belong to it) followed by white space
and then a word, a digit or an opening quote or bracket, unless the word before the stop is
a title or a Latin abbreviation ("Dr.", "e.g.", "approx."); and at a blank line. A single
line break without a stop is no end (a line wrapped by hand). A lower-case word after the
stop ends the sentence too, but after a closing quote or bracket ('"Great!" she said'):
casual reviews and tweets are written in lower case, and with a capital alone opening the
next sentence, the tagger found 57 % of the terms of MAMS's test sentences lowercased and
joined five to a text (81 % once cut); a stop that ends no sentence (an abbreviation outside
the list) costs little, the words on either side keep theirs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

__all__ = ["per_sentence", "sentence_spans"]

T = TypeVar("T")

#: words after which a full stop ends no sentence (compared in lower case, without the stop)
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "approx",
     "cf", "incl", "mt"}
)  # fmt: skip
#: words after which a full stop ends a sentence only where a capital follows: units and
#: times end sentences as often as not ("at 3 p.m. The place was empty", "3 p.m. the bar")
_BEFORE_LOWER = frozenset(
    {"a.m", "p.m", "ca", "min", "max", "ft", "lb", "lbs", "oz", "u.s", "u.s.a", "u.k"}
)  # fmt: skip
#: a stop, what closes with it, the white space after it, and the character that opens the
#: next sentence (looked at, not taken)
_END = re.compile(
    r"(?P<stop>[.!?\u2026]+)[\"'\u201d\u2019)\]]*(?P<gap>\s+)(?=[\"'\u201c\u2018(\[\d\w])"
)
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?\u2026]*[\"'\u201d\u2019)\]]*\Z")
#: how far before a stop its word is looked for: an abbreviation and its quotes are far
#: shorter; a longer word is cut to this many characters, and no abbreviation then
_LOOK_BACK = 64


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each sentence of ``text``, in order, covering every character but
    the white space between sentences; one span for a text of one sentence (or of none)."""
    cuts: list[tuple[int, int]] = []  # (end of a sentence, start of the next)
    for m in _END.finditer(text):
        after = m.end()
        if after >= len(text):
            continue
        closed = m.end("stop") < m.start("gap")  # '"Great!" she said': quoted, it goes on
        if closed and text[after].islower():
            continue
        # the word before the stop, looked for in the characters just before it: a search
        # from the text's start made a long text's cut quadratic (200,000 characters: 69 s)
        gap = m.start("gap")
        before = _WORD_BEFORE.search(text, max(0, gap - _LOOK_BACK), gap)
        word = before.group(1).lower().rstrip(".") if before and m.group("stop") == "." else ""
        if word in _ABBREVIATIONS or word in _BEFORE_LOWER and text[after].islower():
            continue
        cuts.append((m.start("gap"), after))
    cuts += [(m.start(), m.end()) for m in _BLANK_LINE.finditer(text)]
    spans, start = [], 0
    for end, nxt in sorted(cuts):
        if end > start and text[start:end].strip():
            spans.append((start, end))
        start = max(start, nxt)
    if start < len(text) and text[start:].strip() or not spans:
        spans.append((start, len(text)))
    return spans


def per_sentence(
    texts: Sequence[str],
    find: Callable[[list[str]], Sequence[Iterable[T]]],
    shift: Callable[[T, int], T],
) -> list[list[T]]:
    """``find`` (what it finds in each of a list of texts) run on each sentence of each of
    ``texts`` in one call, and each thing found put back at its place in its text
    (``shift(thing, offset of its sentence)``)."""
    cut = [sentence_spans(t) for t in texts]
    found = iter(find([t[s:e] for t, spans in zip(texts, cut, strict=True) for s, e in spans]))
    return [[shift(f, s) for s, _ in spans for f in next(found)] for spans in cut]
