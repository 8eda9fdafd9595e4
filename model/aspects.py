"""The one aspect resolver: an aspect as given (a term, or a term pinned to a span) ->
character spans in the text. Used by the HTTP routes, the CLI, file scoring, the Python API
and the training readers alike, so every path finds the same spans and says the same thing
when an aspect is not there. No torch, no HTTP.
"""

from __future__ import annotations

import numbers
import re
import unicodedata
from dataclasses import dataclass

from absa.errors import InputError
from absa.model.termsearch import expand, find, short_texts_cached, visible

# a CSV start/end: ASCII digits, an optional minus ("²" and "--4" are no offsets), and a
# fraction of zeros, as pandas writes an integer column with gaps ("14.0"; "14.5" is none)
_INTEGER = re.compile(r"-?[0-9]+(?:\.0+)?")

#: how much of a term or text an error message echoes
SHOWN_CHARS = 60
#: the longest aspect term the service takes, and the longest the extractor gives (so every
#: extracted term can be sent back as an aspect); annotated terms run to about 110
MAX_TERM_CHARS = 200


def shown(s: str, limit: int = SHOWN_CHARS) -> str:
    """``s`` for an error message: repr, cut to ``limit`` characters, lone surrogates escaped
    (an echo must never make the message itself unencodable or huge)."""
    cut = s if len(s) <= limit else s[:limit] + "…"
    return repr(cut.encode("utf-8", "backslashreplace").decode("utf-8"))


def shown_value(value: object, limit: int = SHOWN_CHARS) -> str:
    """Any value for an error message: a string as ``shown``, true, false and null as JSON
    spells them (the input's, not Python's ``True`` and ``None``), anything else as its
    repr, cut alike (a 200,000-digit "start" cell was echoed whole into the log and the
    output)."""
    if isinstance(value, str):
        return shown(value, limit)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    try:
        text = repr(value)
    except ValueError:  # an integer over Python's digit limit for str()
        return f"a {type(value).__name__} too long to show"
    return text if len(text) <= limit else text[:limit] + "…"


def check_unicode(s: str, what: str, where: str = "") -> None:
    """Refuse a string that is not valid Unicode (a lone surrogate, as JSON can carry)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(
            f"{where}{what} holds a lone surrogate (U+{ord(s[e.start]):04X} at {e.start}): "
            "not valid Unicode"
        ) from None


@dataclass(frozen=True)
class Span:
    """``text[start:end] == term``; ``confidence`` is set on a span the extractor found."""

    term: str
    start: int
    end: int
    confidence: float | None = None


def find_all(text: str, term: str) -> list[tuple[int, int]]:
    """Every occurrence of ``term`` in ``text`` as (start, end), case-insensitive, its words
    apart by any whitespace (``termsearch.find``: time linear in the text), in either
    Unicode form (composed or not: ``_find_composed``), preferring whole-word matches; falls
    back to substring matches when none are whole words."""
    term = term.strip()
    if not term:
        return []
    ascii_ = text.isascii()  # no combining mark to cut off
    # a text or term with something to compose: the occurrences in the other form too (a
    # text may spell the term both ways); NFC text and term, as most are, have none
    composed = None
    if not (ascii_ and term.isascii()) and not (_is_nfc(text) and _is_nfc(term)):
        composed = _find_composed(text, term)
    spans = [(s, e) for s, e in find(text, term, whole=True) if ascii_ or _whole(text, s, e)]
    if composed is not None:
        spans = _union(spans, composed[0])
    if not spans:
        found = find(text, term, whole=False)
        spans = [(s, e) for s, e in found if ascii_ or _whole(text, s, e)]
        if composed is not None:
            spans = _union(spans, composed[1])
    return spans


@short_texts_cached(maxsize=32)  # asked of a text for each of its aspects
def _is_nfc(s: str) -> bool:
    return unicodedata.is_normalized("NFC", s)


def _union(spans: list[tuple[int, int]], more: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` and those of ``more`` that overlap none of them (the same occurrence found
    both ways is kept once, as the plain search found it), in text order."""
    if not more:
        return spans
    out = list(spans)
    for m in more:
        if not any(m[0] < e and s < m[1] for s, e in out):
            out.append(m)
    return sorted(out)


def _whole(text: str, start: int, end: int) -> bool:
    """The match neither ends before nor starts on a combining mark: "cafe" is not found in
    "cafe" + U+0301 (é decomposed), whose accent would be cut off (the tokenizer keeps the
    mark in its word, so such a span would end inside a word). A mark that opens the text,
    or follows whitespace, belongs to no letter: a span may start there (the extractor
    finds "\u0301screen" in "The \u0301screen", and what it finds may be asked again)."""
    cuts_end = end < len(text) and _is_mark(text[end])
    cuts_start = start > 0 and _is_mark(text[start]) and not text[start - 1].isspace()
    return not cuts_end and not cuts_start


def _is_mark(c: str) -> bool:
    """A combining mark, variation selectors aside: "❤" is found in "❤" + U+FE0F (the
    emoji form of the same character), as it was."""
    return unicodedata.category(c)[0] == "M" and not (
        "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef"
    )


def _find_composed(
    text: str, term: str
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """``find_all`` up to canonical equivalence: "café" with its accent as one code point
    finds "cafe\u0301" (and the other way round), as spans of the text's own code points:
    the whole-word matches and the substring matches; None where composing changes neither
    the text nor the term (the plain search says it all). The text is composed (NFC) a base
    character and its combining marks at a time, so every composed character maps back to
    whole characters of the text."""
    if not text:
        return None
    nfc_text, starts, ends = _composed(text)
    nfc_term = unicodedata.normalize("NFC", term.strip())
    if nfc_text == text and nfc_term == term.strip():
        return None  # nothing was composed: the plain search said it all

    def spans(whole: bool) -> list[tuple[int, int]]:
        # a match that cuts a mark off, in the composed text, is refused as in the text
        found = find(nfc_text, nfc_term, whole=whole)
        return [(starts[s], ends[e - 1]) for s, e in found if _whole(nfc_text, s, e)]

    whole = spans(True)
    if whole:  # substrings only count where no whole word is found, either way
        return whole, []
    return [], spans(False)


@short_texts_cached(maxsize=32)  # the aspects of one text are looked up one after another
def _composed(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` composed (NFC) a base character and its marks at a time, and where each of
    its characters starts and ends in ``text`` (built once a text: 1 ms for 2,000
    characters, each of a request's 32 terms of one text paid it)."""
    bounds = [i for i, c in enumerate(text) if i == 0 or unicodedata.category(c)[0] != "M"]
    composed: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for a, b in zip(bounds, [*bounds[1:], len(text)], strict=True):
        piece = unicodedata.normalize("NFC", text[a:b])
        composed.append(piece)
        starts += [a] * len(piece)
        ends += [b] * len(piece)
    return "".join(composed), starts, ends


def occurrences(text: str, term: str, where: str = "") -> list[Span]:
    """Every occurrence of the aspect ``term``, each as the span of the text's own spelling.
    ``where`` prefixes the message ("aspects[1]: ", "items[0]: aspects[2]: ", "line 7: ")."""
    stripped = term.strip()
    if not stripped:
        raise InputError(f"{where}the aspect is empty")
    if not visible(stripped).strip():  # read past in the text, as a reader does
        raise InputError(f"{where}the aspect is empty: it holds only invisible characters")
    if (
        len(" ".join(stripped.split())) > len(text)
        and not _may_compose_into(stripped, text)
        and not _may_fold_into(stripped, text)
    ):
        # checked before any regex is compiled: a huge term costs nothing
        raise InputError(
            f"{where}the aspect ({len(term)} characters) is longer than the text "
            f"({len(text)} characters)"
        )
    found = find_all(text, term)
    if not found:
        raise InputError(f"{where}aspect {shown(term)} does not occur in the text")
    return [Span(text[s:e], s, e) for s, e in found]


def _may_compose_into(term: str, text: str) -> bool:
    """Whether ``term``, longer than ``text``, may still occur in it up to canonical
    equivalence (decomposed, "e" + U+0301, in a composed text): the composed search matches
    the term composed in the text composed, which is never longer than the text decomposed."""
    if term.isascii():
        return False
    return len(unicodedata.normalize("NFC", term)) <= len(unicodedata.normalize("NFD", text))


def _may_fold_into(term: str, text: str) -> bool:
    """Whether ``term``, longer than ``text``, may still occur in it case-folded: the text
    holds characters that fold to several ("STRASSE" is "Straße", one character shorter)."""
    return len(" ".join(term.split())) <= len(expand(text))


def pinned(text: str, term: str, start: int, end: int, where: str = "") -> Span:
    """The span the caller pinned, checked: integer offsets (code points) inside the text,
    spelling the term."""
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):  # numpy's too
            kind = type(value).__name__
            raise InputError(f"{where}{name} is a {kind}, not an integer offset into the text")
    start, end = int(start), int(end)
    if 0 <= start <= len(text) and 0 <= end <= len(text) and end <= start:
        raise InputError(f"{where}span [{start}, {end}) is empty: end must be greater than start")
    if not (0 <= start < end <= len(text)):
        raise InputError(f"{where}span [{start}, {end}) is outside the text (length {len(text)})")
    if text[start:end] != term:
        raise InputError(
            f"{where}text[{start}:{end}] is {shown(text[start:end])}, not the term {shown(term)}"
        )
    if not term.strip():
        raise InputError(f"{where}the aspect is empty")
    if not visible(term).strip():  # a soft hyphen, a word joiner: as the string form says
        raise InputError(f"{where}the aspect is empty: it holds only invisible characters")
    if not _whole(text, start, end):  # as the search never finds it: a letter without its mark
        cut = "starts on" if _is_mark(text[start]) else "ends before"
        raise InputError(
            f"{where}span [{start}, {end}) {cut} a combining mark: it cuts a character apart "
            "(pin the letter with its marks)"
        )
    return Span(term, start, end)


def whole_offset(value: object) -> int | None:
    """A record's start or end as an integer: an integer, a float that is one (14.0: a
    Parquet float column, as pandas writes a column with nulls), or a text of ASCII digits
    with an optional minus ("14.0" too, as pandas writes a float column to CSV); None for
    anything else (5.9 is not truncated to 5, true is not 1, "²", "４" and "--4" are not
    numbers). Predict and the training readers read offsets alike."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        try:
            return int(value.strip().partition(".")[0])
        except ValueError:  # past int()'s digit limit: no offset into any text
            return None
    return None
