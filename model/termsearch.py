"""Where a term occurs in a text, in time linear in the text: both case-folded (``expand``,
then ``fold`` a character for a character), every run of whitespace in the text made one
space, then ``str.find``.

A regular expression per term (its words apart by ``\\s+``, case-insensitive) tried a match
at every word start of the text: a text that repeats itself ("a a a ...") and a long term
that almost occurs in it ("a a ... a b") cost text x term steps, 6 ms a lookup, 13 s for
one request of 64 such texts with 32 aspects each (benchmarks/term_lookup.py). The spans are
the same as that expression's over the folded text (tests/model/test_termsearch.py). No torch.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

try:  # the characters re.IGNORECASE takes as one beyond lower-casing ("ſ" and "s", "ς" and "σ")
    from re._casefix import _EXTRA_CASES  # type: ignore[import-not-found]  # private, no stub
except ImportError:  # a Python that moved the table: lower-casing alone
    _EXTRA_CASES = {}

#: characters that hold two pieces of one word or one emoji together: zero-width non-joiner and
#: joiner, word joiner, soft hyphen (the tokenizer keeps them inside a word)
JOINERS = "\u200c\u200d\u2060\u00ad"
#: invisible characters that are no part of a word: the zero-width space, the byte-order mark,
#: the marks, embeddings and isolates of text direction, the invisible operators of maths
#: (function application, times, separator, plus) and the Mongolian vowel separator (the
#: tokenizer makes no token of them; inside a word, the word reads past them)
INVISIBLE = (
    "\u200b\ufeff\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    "\u2061\u2062\u2063\u2064\u180e"
)
#: invisible combining marks, read past between two word characters ("piz\u034fza" is
#: "pizza"): the combining grapheme joiner and the variation selectors. Elsewhere they stay,
#: as the emoji presentation of a symbol: "\u2764\ufe0f" is found as itself, as it was
INNER_MARKS = "\u034f\ufe00-\ufe0f"
#: the invisible characters the search reads past, as a reader does: both kinds
_IGNORABLE = re.escape(JOINERS + INVISIBLE)
_INNER = rf"(?<=\w)[{INNER_MARKS}]+(?=\w)"
_HAS_IGNORABLE = re.compile(f"[{_IGNORABLE}]|{_INNER}")
#: what the folded text drops or makes one space: a run of whitespace with the invisible
#: characters in and around it, or a run of invisible characters alone, or of invisible
#: marks inside a word
_SHORTER = re.compile(rf"(?P<space>[\s{_IGNORABLE}]*\s[\s{_IGNORABLE}]*)|[{_IGNORABLE}]+|{_INNER}")
_SPACES = re.compile(r"\s+")
_RUNS = re.compile(r"\s\s+")  # those that make the folded text shorter
_OTHER_SPACE = re.compile(r"[^\S ]")  # whitespace but a space: most texts have none
_NON_WORD = re.compile(r"\W")


def is_word(c: str) -> bool:
    """The regular expressions' ``\\w``: a letter or digit of any script, or "_"."""
    return c.isalnum() or c == "_"


def _one_of_each_class() -> dict[int, int]:
    """Each letter of a class re.IGNORECASE matches to each other -> the class's first
    letter. The one mark among them (U+0345, which re.I takes for "ι") stays itself: a word
    character must fold to a word character and a mark to a mark (``find`` skips by them)."""
    table = {}
    for c, others in _EXTRA_CASES.items():
        letters = [x for x in (c, *others) if is_word(chr(x))]
        table.update({x: min(letters) for x in letters if x != min(letters)})
    return table


_CLASSES = _one_of_each_class()
#: whether a string holds a character ``_CLASSES`` maps (translate is slow: 0.2 µs a character)
_IN_CLASSES = re.compile("[" + "".join(re.escape(chr(c)) for c in _CLASSES) + "]")


def fold(s: str) -> str:
    """``s`` case-folded, one character for each of its characters (so offsets carry over):
    lower-cased ("İ", which lowers to two, as "i"), then each of the characters re.IGNORECASE
    matches to one another as one of them. ASCII lowers to its own class's first."""
    low = s.replace("\u0130", "i").lower()
    return low.translate(_CLASSES) if _IN_CLASSES.search(low) else low


def _expands(c: str) -> bool:
    """Whether ``c``'s full case folding is longer than the character and all of word
    characters, as ``c`` is ("ß" -> "ss", "ﬁ" -> "fi", "ᾳ" -> "αι"). Those that fold to a
    letter and combining marks ("ǰ" -> "j" + U+030C, "İ") are left to ``fold`` (their folding
    differs from their lower case only in being decomposed: the composed search,
    absa.model.aspects, finds those), so a word edge stays where the text has one."""
    folded = c.casefold()
    return len(folded) > 1 and is_word(c) and all(is_word(x) for x in folded)


#: each character whose full case folding (``str.casefold``) is several characters -> that
#: folding; every one is in the Basic Multilingual Plane (tests/model/test_termsearch.py)
EXPANSIONS = {chr(i): chr(i).casefold() for i in range(0x10000) if _expands(chr(i))}
_EXPANDS = re.compile("[" + "".join(map(re.escape, EXPANSIONS)) + "]")


def expand(s: str) -> str:
    """``s`` with each character of ``EXPANSIONS`` as its full case folding: what ``fold``
    cannot do a character for a character ("STRASSE" and "Straße" fold alike)."""
    return "".join(EXPANSIONS.get(c, c) for c in s) if _EXPANDS.search(s) else s


@dataclass(frozen=True)
class _Expanded:
    """``expand(text)``'s characters as the text's: ``source[j]`` is the text's character
    that the expanded text's character ``j`` is (a piece of)."""

    source: list[int]

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """``[start, end)`` of the expanded text as a span of the text; None where it cuts one
        character's folding apart ("s" of the "ss" of "ß")."""
        src = self.source
        if start > 0 and src[start - 1] == src[start]:
            return None
        if end < len(src) and src[end] == src[end - 1]:
            return None
        return src[start], src[end - 1] + 1


def _expanded(text: str) -> tuple[str, _Expanded | None]:
    if not _EXPANDS.search(text):
        return text, None
    source: list[int] = []
    for i, c in enumerate(text):
        source += [i] * len(EXPANSIONS.get(c, c))
    return expand(text), _Expanded(source)


@dataclass(frozen=True)
class _Folded:
    """A text folded, each whitespace run one space; ``starts[i]``: from where in it the
    first i + 1 runs that were longer than one character are ``shifts[i]`` characters short."""

    text: str
    starts: list[int]
    shifts: list[int]
    #: where the text had characters ``expand`` made several of; None where it had none
    expanded: _Expanded | None = None

    def original(self, k: int) -> int:
        """The offset in the (expanded) text of the folded text's character ``k``."""
        i = bisect.bisect_right(self.starts, k)
        return k + self.shifts[i - 1] if i else k

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """The folded text's ``[start, end)`` as a span of the text; None where it cuts a
        character's folding apart."""
        begin, stop = self.original(start), self.original(end - 1) + 1
        return (begin, stop) if self.expanded is None else self.expanded.span(begin, stop)


#: texts up to this long are kept folded (and composed, in absa.model.aspects): the service
#: takes 2,000 characters, but bulk scoring and the Python API any length (256 texts of 100k
#: characters held 540 MB); a longer text is worked out again for each of its aspects
CACHED_TEXT_CHARS = 10_000
T = TypeVar("T")


def short_texts_cached(maxsize: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """``functools.lru_cache(maxsize)`` for texts up to ``CACHED_TEXT_CHARS`` (the aspects of
    one text are looked up one after another); a longer one is not kept."""

    def wrap(fn: Callable[[str], T]) -> Callable[[str], T]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def get(text: str) -> T:
            return cached(text) if len(text) <= CACHED_TEXT_CHARS else fn(text)

        get.cache_info = cached.cache_info  # type: ignore[attr-defined]
        get.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return get

    return wrap


@short_texts_cached(maxsize=256)
def _folded(text: str) -> _Folded:
    wide, expanded = _expanded(text)
    short = _shortened(fold(wide))
    return short if expanded is None else replace(short, expanded=expanded)


def _shortened(folded: str) -> _Folded:
    """The folded text, each whitespace run one space (and the invisible characters gone)."""
    if _HAS_IGNORABLE.search(folded):
        return _without_ignorable(folded)
    starts: list[int] = []
    shifts: list[int] = []
    dropped = 0
    for m in _RUNS.finditer(folded):
        starts.append(m.start() - dropped + 1)
        dropped += m.end() - m.start() - 1
        shifts.append(dropped)
    as_is = not starts and _OTHER_SPACE.search(folded) is None  # nothing to replace
    return _Folded(folded if as_is else _SPACES.sub(" ", folded), starts, shifts)


def visible(s: str) -> str:
    """``s`` without the invisible characters the search reads past (``_IGNORABLE``)."""
    return _HAS_IGNORABLE.sub("", s) if _HAS_IGNORABLE.search(s) else s


def _without_ignorable(folded: str) -> _Folded:
    """``_folded`` of a text with invisible characters (``_IGNORABLE``): they are dropped, and
    each run of whitespace, with those in and around it, is one space."""
    starts: list[int] = []
    shifts: list[int] = []
    parts: list[str] = []
    dropped = at = 0
    for m in _SHORTER.finditer(folded):
        keep = " " if m.group("space") else ""
        parts += [folded[at : m.start()], keep]
        at = m.end()
        if m.end() - m.start() > len(keep):
            starts.append(m.start() - dropped + len(keep))
            dropped += m.end() - m.start() - len(keep)
            shifts.append(dropped)
    parts.append(folded[at:])
    return _Folded("".join(parts), starts, shifts)


def find(text: str, term: str, whole: bool) -> list[tuple[int, int]]:
    """Every occurrence of ``term`` in ``text`` as (start, end), left to right and not
    overlapping, the case folded (``expand``, ``fold``: as ``str.casefold`` but for the
    characters it decomposes) and any run of whitespace matching any other;
    with ``whole``, only those with no word character just before or after."""
    needle = " ".join(visible(fold(expand(term))).split())
    if not needle:
        return []
    folded = _folded(text)
    hay = folded.text
    spans: list[tuple[int, int]] = []
    k = hay.find(needle)
    while k >= 0:  # word edges as the folded text has them: what is read, not what is invisible
        if whole and k > 0 and is_word(hay[k - 1]):
            # no occurrence starting inside this run of word characters starts a word:
            # go on after the run's end (the search stays linear on "aaaa..." and "aaa")
            m = _NON_WORD.search(hay, k)
            k = hay.find(needle, m.start() + 1) if m else -1
            continue
        after = k + len(needle)
        if whole and after < len(hay) and is_word(hay[after]):
            k = hay.find(needle, k + 1)
            continue
        span = folded.span(k, after)
        if span is None:  # it starts or ends inside one character's folding
            k = hay.find(needle, k + 1)
            continue
        spans.append(span)
        k = hay.find(needle, after)
    return spans
