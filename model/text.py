"""The one text pipeline shared by training and serving (numpy only, never torch).

Text -> tokens with character offsets -> ids, plus a mask of the aspect's tokens.
Two pipelines share one interface:

- ``WordPipeline``: lower-cased word tokens looked up in a vocabulary (GloVe models).
- ``WordPiecePipeline``: a Hugging Face ``tokenizer.json`` (transformer encoders),
  loaded with the light ``tokenizers`` package.

Both yield ``Encoded`` items that ``collate`` pads into the three model inputs
``input_ids``, ``attention_mask`` and ``aspect_mask`` (all int64, shape (B, T)), plus
``category_ids`` (int64, (B,)) for items of an aspect-category model, and ``token_type_ids``
(int64, (B, T): 0 on the text's segment, 1 on the category words') for sentence-pair items
(``WordPiecePipeline.encode_pair``).
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from absa.errors import InputError
from absa.model.jsonio import read_json
from absa.model.termsearch import INVISIBLE, JOINERS, is_word

LABELS: tuple[str, ...] = ("negative", "neutral", "positive")
PAD, UNK = "<pad>", "<unk>"

# Stanford/GloVe-style tokens: "couldn't" -> could n't, "it's" -> it 's, punctuation alone.
# Versions, so that a pipeline keeps the words it was trained on (pipeline.json
# "word_tokenizer"; absent in the pipelines made before versions were recorded: 1):
# 1. an apostrophe starts a word wherever it stands, so a quote before a word is glued to it:
#    "the 'pasta' was" -> the 'pasta ' was, and "'pasta" is out of any vocabulary;
# 2. an apostrophe starts a word only as a clitic ('s 're 've 'll 'd 'm, split off already or
#    not, any case) or inside a word (o'neal -> o 'neal, as in 1): a quote before a word is a
#    token of its own, "the 'pasta' was" -> the ' pasta ' was.
TOKENIZERS: dict[int, re.Pattern[str]] = {
    1: re.compile(r"\w+(?=n't\b)|n't\b|'\w+|\w+|[^\w\s]", re.UNICODE),
    2: re.compile(
        r"\w+(?=n't\b)|n't\b|(?i:'(?:s|re|ve|ll|d|m))\b|(?<=\w)'\w+|\w+|[^\w\s]", re.UNICODE
    ),
}
#: the version new word pipelines are made with (2 since session 58, when runs/ was rebuilt
#: on a new machine; the shipped models' pipelines keep the 1 they record by its absence)
TOKENIZER = 2


class TextError(InputError):
    """The text or the aspect span cannot be encoded (empty text, span outside it, ...)."""


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    aspect_mask: list[int]
    tokens: list[Token]  # the tokens the ids stand for (special tokens have empty spans)
    category: int | None = None  # the aspect category's id (category models; no span then)
    token_types: list[int] | None = None  # sentence pairs: 0 = [CLS] text [SEP], 1 = words [SEP]


@dataclass(frozen=True)
class Tokenized:
    """A text's tokens and ids, computed once and shared by every aspect span in it."""

    text: str
    tokens: list[Token]
    ids: list[int]


def tokenize(text: str, version: int = TOKENIZER) -> list[Token]:
    r"""Stanford/GloVe-style tokens, each with its character span, by the tokenizer of
    ``version`` (``TOKENIZERS``). A combining mark (a decomposed accent: "cre\u0300me", the
    vowel signs of Devanagari, an emoji's variation selector) stays inside its word: ``\w``
    does not match marks, and the word would otherwise fall apart into pieces. So do joiners
    and an emoji's modifiers: a thumbs-up with a skin tone, a family of emoji joined by
    U+200D, a flag are one token each (``_joins``; no training or test text of ../shared/data
    holds one, so every version's models saw the same tokens either way). A zero-width space,
    a byte-order mark or a mark of direction is no token (``_INVISIBLE``; none of those texts
    holds one either), but inside a word it is part of the word: "piz\u200bza" is one token,
    looked up as "pizza" (``_within``), as the aspect search reads it."""
    pattern = TOKENIZERS[check_tokenizer(version)]
    tokens = [Token(m.group(0), m.start(), m.end()) for m in pattern.finditer(text)]
    if text.isascii():  # no combining mark: the tokens as the pattern found them
        return tokens
    out: list[Token] = []
    for tok in tokens:
        prev = out[-1] if out else None
        if prev is not None and prev.end == tok.start and _joins(prev.text, tok.text):
            out[-1] = Token(text[prev.start : tok.end], prev.start, tok.end)
        else:
            out.append(tok)
    out = _within(text, out)
    seen = [t for t in out if t.text.strip(_INVISIBLE)]  # no zero-width space, no mark of
    return seen or out  # direction; a text of nothing else keeps them: a text has a token


def _within(text: str, tokens: list[Token]) -> list[Token]:
    """``tokens`` with each run of invisible tokens (``_INVISIBLE``) inside a word, right
    between two of its pieces, joined to them: "piz", "\u200b", "za" is "piz\u200bza". Runs
    before or after a word, or beside punctuation or a space, stay apart (and are dropped)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not _is_invisible(tok.text):
            out.append(tok)
            i += 1
            continue
        j = i + 1  # the run: invisible tokens one right after another
        while (
            j < len(tokens)
            and _is_invisible(tokens[j].text)
            and tokens[j - 1].end == tokens[j].start
        ):
            j += 1
        prev = out[-1] if out else None
        nxt = tokens[j] if j < len(tokens) else None
        if (
            prev is not None
            and nxt is not None
            and prev.end == tok.start
            and tokens[j - 1].end == nxt.start
            and _in_word(prev.text[-1])
            and _in_word(nxt.text[0])
        ):
            out[-1] = Token(text[prev.start : nxt.end], prev.start, nxt.end)
            i = j + 1
        else:
            out.extend(tokens[i:j])
            i = j
    return out


def _is_invisible(token: str) -> bool:
    return all(c in _INVISIBLE for c in token)


def _in_word(c: str) -> bool:
    """A character a word holds on either side of an invisible one: a letter or digit, a
    combining mark, a joiner (not an emoji: "\U0001f44d\u200b\U0001f44d" stays two)."""
    return is_word(c) or c in _JOINERS or unicodedata.category(c)[0] == "M"


def check_tokenizer(version: object, where: str = "word tokenizer") -> int:
    """``version`` if it names one of ``TOKENIZERS``, else a ValueError naming ``where``."""
    if isinstance(version, bool) or not isinstance(version, int) or version not in TOKENIZERS:
        known = ", ".join(map(str, TOKENIZERS))
        raise ValueError(
            f"{where}: unknown version {version!r} (this absa knows {known}; "
            "a pipeline made by a newer absa needs that version)"
        )
    return version


# Characters that hold two pieces of one word or one emoji together (``JOINERS``): zero-width
# non-joiner and joiner (Persian and Indic words; emoji sequences such as the family U+1F468
# U+200D U+1F469), the word joiner and the soft hyphen.
_JOINERS = frozenset(JOINERS)
# Emoji skin-tone modifiers and tag characters (subdivision flags) belong to what precedes them.
_MODIFIERS = ((0x1F3FB, 0x1F3FF), (0xE0020, 0xE007F))
_REGIONAL = "".join(map(chr, range(0x1F1E6, 0x1F200)))  # two regional indicators: one flag
# Dropped from a word to look it up: variation selectors (the emoji and text presentations of
# one symbol: "\u2665\ufe0f" is the vocabulary's "\u2665"), skin tones (a thumbs-up of any tone is
# the thumbs-up), the combining grapheme joiner, the joiners (``JOINERS``: the zero-width
# joiner and non-joiner, the word joiner, the soft hyphen) and the invisible characters a
# word may hold (``INVISIBLE``: "piz\u200bza" is "pizza"). No vocabulary of model/artifacts
# holds any of them.
_IGNORED = dict.fromkeys(
    [
        0xFE0E,
        0xFE0F,
        0x34F,
        *map(ord, JOINERS + INVISIBLE),
        *range(_MODIFIERS[0][0], _MODIFIERS[0][1] + 1),
    ]
)


# Invisible characters that are no part of a word (``INVISIBLE``), whose tokens (``[^\w\s]``
# takes each alone) ``tokenize`` drops: the zero-width space, the byte-order mark, the marks,
# embeddings and isolates of text direction (common in right-to-left text).
_INVISIBLE = INVISIBLE


def _in(c: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in ranges)


def _joinable(c: str) -> bool:
    """What a joiner holds together: letters and digits, pictographs (emoji; their skin
    tones), marks, joiners; not punctuation or a currency or maths sign ("pasta\u00ad," is
    the word and its comma, "a\u00ad+b" three tokens)."""
    cat = unicodedata.category(c)
    return is_word(c) or c in _JOINERS or cat == "So" or cat[0] == "M" or _in(c, _MODIFIERS)


def _joins(left: str, right: str) -> bool:
    """``right`` continues the token ``left``: across a combining mark (``right`` starts with
    one, or ``left`` ends with one and ``right`` is word characters), across a joiner between
    joinable characters, with an emoji modifier or tag, or as the second regional indicator
    of a flag."""
    first, last = right[0], left[-1]
    if unicodedata.category(first)[0] == "M":
        return True
    if (first in _JOINERS and _joinable(last)) or (last in _JOINERS and _joinable(first)):
        return True
    if _in(first, _MODIFIERS):
        return True
    if first in _REGIONAL and last in _REGIONAL:  # "🇺🇸🇬🇧" is two flags: join to an odd run
        return (len(left) - len(left.rstrip(_REGIONAL))) % 2 == 1
    return unicodedata.category(last)[0] == "M" and is_word(first)


def lookup_form(word: str) -> str:
    r"""A word as the vocabulary holds it: lower case, composed (NFC: "cre\u0300me" and
    "crème" are one word), without variation selectors, skin tones, joiners, soft hyphens
    and the invisible characters inside it (``_IGNORED``: "piz\u200dza" is "pizza")."""
    if word.isascii():
        return word.lower()
    form = unicodedata.normalize("NFC", word)
    clean = form.translate(_IGNORED)
    return (clean or form).lower()  # a token of nothing else stays itself


def check_span(text: str, start: int, end: int) -> None:
    if not text.strip():
        raise TextError("text is empty or only whitespace")
    if end < start:
        raise TextError(f"aspect span [{start}, {end}) ends before it starts")
    if end == start:
        raise TextError(f"aspect span [{start}, {end}) is empty: it covers no character")
    if not (0 <= start < end <= len(text)):
        raise TextError(f"aspect span [{start}, {end}) is outside the text (length {len(text)})")
    span = text[start:end]
    if not span.strip():
        raise TextError(f"aspect span [{start}, {end}) holds only whitespace")
    if all(c.isspace() or c in _INVISIBLE for c in span):  # the tokenizer makes no token
        raise TextError(
            f"aspect span [{start}, {end}) holds only invisible characters (zero-width, "
            "direction marks): it covers no word"
        )


def check_words(tok: Tokenized) -> None:
    """TextError for a text a category model cannot read: one without a word (a category
    question has no aspect span to name)."""
    if not tok.text.strip():
        raise TextError("text is empty or only whitespace")
    if not tok.tokens or all(c.isspace() or c in _INVISIBLE for c in tok.text):
        raise TextError(
            "text holds no word: only whitespace and invisible characters (zero-width, "
            "direction marks)"
        )


def _window(n: int, first: int, last: int, max_len: int) -> tuple[int, int]:
    """A window of at most ``max_len`` items out of ``n`` that keeps [first, last]."""
    if n <= max_len:
        return 0, n
    centre = (first + last) // 2
    lo = max(0, min(centre - max_len // 2, n - max_len))
    lo = min(lo, first)
    lo = max(lo, min(first, last - max_len + 1))  # keep `last` too whenever the span fits
    return lo, min(n, lo + max_len)


def _check_fits(start: int, end: int, inside: Sequence[int], window: int) -> None:
    """TextError for an aspect of more tokens (``inside``, a run of the text's) than a
    ``window`` holds: the model would read its first tokens alone, none of the words around
    it, and mark part of it as the aspect."""
    if len(inside) > window:
        raise TextError(
            f"aspect span [{start}, {end}) is {len(inside)} tokens long, over the {window} the "
            f"model reads at once (the aspect and the words around it): an aspect may be at "
            f"most {window} tokens"
        )


def _inside(tokens: Sequence[Token], start: int, end: int) -> list[int]:
    """The indices of the tokens that overlap [start, end). Tokens come in text order (their
    ends never decrease), so the search starts at the first that ends after ``start``: a scan
    of every token for each span made a text's aspects quadratic in its occurrences."""
    i = bisect.bisect_right(tokens, start, key=lambda t: t.end)
    out = []
    while i < len(tokens) and tokens[i].start < end:
        if tokens[i].end > start:
            out.append(i)
        i += 1
    return out


def _mask(tokens: Sequence[Token], start: int, end: int) -> list[int]:
    return [1 if t.start < end and t.end > start else 0 for t in tokens]


class Pipeline(Protocol):
    pad_id: int
    unk_id: int

    def tokenized(self, text: str) -> Tokenized: ...

    def encode_span(self, tok: Tokenized, start: int, end: int) -> Encoded: ...

    def encode(self, text: str, start: int, end: int) -> Encoded: ...

    def encode_text(self, text: str) -> Encoded: ...

    def save(self, directory: Path) -> None: ...


class WordPipeline:
    """Word tokens, lower-cased, looked up in a fixed vocabulary (0 = <pad>, 1 = <unk>)."""

    kind = "word"
    pad_id = 0
    unk_id = 1

    def __init__(
        self, words: Sequence[str], max_len: int = 128, tokenizer: int = TOKENIZER
    ) -> None:
        if list(words[:2]) != [PAD, UNK]:
            raise ValueError("a vocabulary must start with <pad>, <unk>")
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise ValueError("the vocabulary holds duplicate words")
        self.max_len = max_len
        self.tokenizer = check_tokenizer(tokenizer)  # the words' tokenizer (``TOKENIZERS``)

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, tokens: Iterable[Token]) -> list[int]:
        return [self.index.get(lookup_form(t.text), self.unk_id) for t in tokens]

    def tokenize(self, text: str) -> list[Token]:
        return tokenize(text, self.tokenizer)

    def tokenized(self, text: str) -> Tokenized:
        tokens = self.tokenize(text)
        return Tokenized(text, tokens, self.ids(tokens))

    def encode_span(self, tok: Tokenized, start: int, end: int) -> Encoded:
        check_span(tok.text, start, end)
        inside = _inside(tok.tokens, start, end)
        if not inside:
            raise TextError(f"aspect span [{start}, {end}) covers no word")
        _check_fits(start, end, inside, self.max_len)
        lo, hi = _window(len(tok.tokens), inside[0], inside[-1], self.max_len)
        tokens = tok.tokens[lo:hi]
        return Encoded(tok.ids[lo:hi], _mask(tokens, start, end), tokens)

    def encode(self, text: str, start: int, end: int) -> Encoded:
        return self.encode_span(self.tokenized(text), start, end)

    def encode_text(self, text: str) -> Encoded:
        """The text's first ``max_len`` tokens, no aspect marked (a category model's item)."""
        tok = self.tokenized(text)
        check_words(tok)
        tokens = tok.tokens[: self.max_len]
        return Encoded(tok.ids[: self.max_len], [0] * len(tokens), tokens)

    def save(self, directory: Path) -> None:
        spec: dict = {"kind": self.kind, "max_len": self.max_len, "vocab": "vocab.json"}
        if self.tokenizer != 1:  # absent means 1: the pipelines made before versions stay as
            spec["word_tokenizer"] = self.tokenizer  # they were, byte for byte
        (directory / "pipeline.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        (directory / "vocab.json").write_text(
            json.dumps(self.words, ensure_ascii=False), encoding="utf-8"
        )


#: how a wordpiece pipeline finds the ids it puts around a text (pipeline.json "specials";
#: absent from the pipelines made before it was recorded: "names"):
#: "names": [CLS] and [SEP] by BERT's names, else RoBERTa's <s> and </s>. MPNet's tokenizer
#:   holds both, and its [CLS] and [SEP] are rows its pretraining never used (it reads
#:   <s> text </s>): the mpnet teachers before session 58 read those;
#: "tokenizer": what the tokenizer's own post-processor puts around a text (BERT's and
#:   MiniLM's [CLS] and [SEP], MPNet's <s> and </s>); by name where it has none.
SPECIALS = ("names", "tokenizer")


class WordPiecePipeline:
    """A Hugging Face fast tokenizer (``tokenizer.json``): [CLS] text [SEP] (the tokenizer's
    own start and end tokens, ``SPECIALS``), offsets kept."""

    kind = "wordpiece"

    def __init__(
        self, tokenizer_file: Path, max_len: int = 128, specials: str = "tokenizer"
    ) -> None:
        from tokenizers import Tokenizer

        if specials not in SPECIALS:
            raise ValueError(f"specials: {specials!r} is not one of {', '.join(SPECIALS)}")
        self.tokenizer_file = Path(tokenizer_file)
        try:
            self.tok = Tokenizer.from_file(str(tokenizer_file))
        except Exception as e:  # tokenizers raises a bare Exception, naming no file
            raise ValueError(f"{tokenizer_file}: not a tokenizer file ({e})") from None
        self.tok.no_padding()
        self.tok.no_truncation()
        self.max_len = max_len
        self.specials = specials
        around = self._around() if specials == "tokenizer" else None
        # BERT's names, else RoBERTa's; RoBERTa's first where its post-processor uses them
        names = {"cls": ("[CLS]", "<s>"), "sep": ("[SEP]", "</s>"), "pad": ("[PAD]", "<pad>")}
        if around is not None and self.tok.id_to_token(around[0]) == "<s>":
            names = {k: v[::-1] for k, v in names.items()}
        cls, sep = around or (self._special(*names["cls"]), self._special(*names["sep"]))
        if cls is None or sep is None:
            raise ValueError(f"{tokenizer_file}: no [CLS]/[SEP] (or <s>/</s>) token")
        self.cls_id: int = cls
        self.sep_id: int = sep
        # a sentence pair: what goes before, between and after the two parts, and the token
        # types of each (BERT: [CLS] a [SEP] b [SEP], types 0 and 1; RoBERTa and MPNet:
        # <s> a </s></s> b </s>, all 0); by name, [CLS] a [SEP] b [SEP]
        self._pair = self._pair_template() if around is not None else None
        pad = self._special(*names["pad"])
        self.pad_id = 0 if pad is None else pad
        unk = self._special("[UNK]", "<unk>")  # MPNet's wordpiece model says [UNK] too
        self.unk_id = -1 if unk is None else unk  # -1: never an id, nothing marked unknown

    def _special(self, *names: str) -> int | None:
        ids = [self.tok.token_to_id(n) for n in names]
        return next((i for i in ids if i is not None), None)

    def _around(self) -> tuple[int, int] | None:
        """The ids the tokenizer's post-processor puts before and after a text, if one."""
        bare = self.tok.encode("a", add_special_tokens=False).ids
        full = self.tok.encode("a", add_special_tokens=True).ids
        if len(full) == len(bare) + 2 and full[1:-1] == bare:
            return full[0], full[-1]
        return None

    @property
    def pair_types(self) -> bool:
        """Whether a pair's second part is of token type 1 (BERT's pairs), by which a
        sentence-pair category model tells its category words from the text; RoBERTa's and
        MPNet's pairs are of type 0 all through."""
        return self._pair is None or 1 in self._pair[3]

    def _pair_template(self) -> tuple[list[int], list[int], list[int], list[int]] | None:
        """The ids the post-processor puts before, between and after the two parts of a
        pair, and the token types of a pair of one-piece parts, position by position; None
        where it makes no such pair."""
        enc = self.tok.encode("a", "b", add_special_tokens=True)
        ids, parts = list(enc.ids), list(enc.sequence_ids)  # None: a token the pair adds
        if parts.count(0) != 1 or parts.count(1) != 1 or parts.index(0) > parts.index(1):
            return None
        i, j = parts.index(0), parts.index(1)
        if i == 0 or j == len(ids) - 1:  # a template with no pair form adds nothing to one
            return None
        return ids[:i], ids[i + 1 : j], ids[j + 1 :], list(enc.type_ids)

    @classmethod
    def from_spec(cls, directory: Path, spec: dict) -> WordPiecePipeline:
        """The pipeline a pipeline.json ``spec`` in ``directory`` describes; ValueError
        naming the file (pipeline.json, the tokenizer's) for what does not make one."""
        path = directory / "pipeline.json"
        specials = spec.get("specials", "names")
        if specials not in SPECIALS:
            raise ValueError(f"{path}: unknown specials {specials!r}")
        tokenizer = _spec_file(path, spec, "tokenizer")
        return cls(directory / tokenizer, _spec_max_len(path, spec), specials)

    def __len__(self) -> int:
        return self.tok.get_vocab_size()

    def tokenized(self, text: str) -> Tokenized:
        enc = self.tok.encode(text, add_special_tokens=False)
        pieces = [Token(p, s, e) for p, (s, e) in zip(enc.tokens, enc.offsets, strict=True)]
        if not text.isascii():
            pieces = _with_trailing_marks(text, pieces)
        return Tokenized(text, pieces, list(enc.ids))

    def encode_span(self, tok: Tokenized, start: int, end: int) -> Encoded:
        text = tok.text
        check_span(text, start, end)
        inside = _inside(tok.tokens, start, end)
        if not inside:
            raise TextError(f"aspect span [{start}, {end}) covers no token")
        _check_fits(start, end, inside, self.max_len - 2)
        lo, hi = _window(len(tok.tokens), inside[0], inside[-1], self.max_len - 2)
        return self._framed(tok, lo, hi, start, end)

    def _framed(self, tok: Tokenized, lo: int, hi: int, start: int, end: int) -> Encoded:
        """Pieces ``lo:hi`` of ``tok`` between [CLS] and [SEP], the span [start, end) marked."""
        n = len(tok.text)
        ids = [self.cls_id, *tok.ids[lo:hi], self.sep_id]
        pieces = [Token("[CLS]", 0, 0), *tok.tokens[lo:hi], Token("[SEP]", n, n)]
        return Encoded(ids, _mask(pieces, start, end), pieces)

    def encode(self, text: str, start: int, end: int) -> Encoded:
        return self.encode_span(self.tokenized(text), start, end)

    def encode_text(self, text: str) -> Encoded:
        """[CLS], the text's first ``max_len`` - 2 pieces, [SEP]; no aspect marked (a
        category model's item)."""
        tok = self.tokenized(text)
        check_words(tok)
        return self._framed(tok, 0, min(len(tok.tokens), self.max_len - 2), 0, 0)

    def encode_pair(self, text: str, second: str) -> Encoded:
        """Sun et al.'s sentence pair ``[CLS] text [SEP] second [SEP]``, in the form the
        tokenizer's post-processor gives a pair (MPNet: ``<s> text </s></s> second </s>``):
        the text cut to what ``max_len`` leaves after ``second``; ``second``'s pieces have
        empty spans at the end of the text (like the special tokens, they are no word of it)."""
        if not text.strip():
            raise TextError("text is empty")
        tok = self.tokenized(text)
        tail = self.tok.encode(second, add_special_tokens=False)
        before, between, after, types = self._pair or (
            [self.cls_id],
            [self.sep_id],
            [self.sep_id],
            [0, 0, 0, 1, 1],
        )
        keep = self.max_len - len(before) - len(between) - len(after) - len(tail.ids)
        if keep < 1:
            raise TextError(f"{second!r} leaves no room for the text in {self.max_len} tokens")
        first = tok.ids[:keep]
        end = len(text)
        pieces = [
            *(Token("[CLS]", 0, 0) for _ in before),
            *tok.tokens[:keep],
            *(Token("[SEP]", end, end) for _ in between),
            *(Token(p, end, end) for p in tail.tokens),
            *(Token("[SEP]", end, end) for _ in after),
        ]
        ids = [*before, *first, *between, *tail.ids, *after]
        i, j = len(before), len(before) + 1 + len(between)  # where a and b stand in ``types``
        token_types = [
            *types[:i],
            *[types[i]] * len(first),
            *types[i + 1 : j],
            *[types[j]] * len(tail.ids),
            *types[j + 1 :],
        ]
        return Encoded(ids, [0] * len(ids), pieces, token_types=token_types)

    def save(self, directory: Path) -> None:
        spec = {"kind": self.kind, "max_len": self.max_len, "tokenizer": "tokenizer.json"}
        if self.specials != "names":  # absent means "names": older pipelines stay as they were
            spec["specials"] = self.specials
        (directory / "pipeline.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        (directory / "tokenizer.json").write_bytes(self.tokenizer_file.read_bytes())


def _with_trailing_marks(text: str, pieces: list[Token]) -> list[Token]:
    r"""``pieces`` with each one's end moved over the combining marks right after it that no
    piece covers: a normaliser that strips accents gives "cafe\u0301" the offsets of "cafe",
    and the piece (the aspect's, the word ``explain`` names) would cut the accent off."""
    out: list[Token] = []
    for i, p in enumerate(pieces):
        limit = pieces[i + 1].start if i + 1 < len(pieces) else len(text)
        end = p.end
        while end < limit and unicodedata.category(text[end])[0] == "M":
            end += 1
        out.append(p if end == p.end else Token(p.text, p.start, end))
    return out


def load_pipeline(directory: Path) -> WordPipeline | WordPiecePipeline:
    """The text pipeline a run's or an artifact's pipeline.json describes; ValueError naming
    the file (pipeline.json, the vocabulary, the tokenizer's) that is not JSON, not of its
    shape, or refused: a damaged run's files are checked by nothing else."""
    directory = Path(directory)
    path = directory / "pipeline.json"
    spec = read_json(path)
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError(f"{path}: a pipeline is a JSON object with a kind")
    if spec["kind"] == "word":
        vocab = directory / _spec_file(path, spec, "vocab")
        max_len = _spec_max_len(path, spec)
        version = check_tokenizer(spec.get("word_tokenizer", 1), str(path))
        words = read_json(vocab)
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise ValueError(f"{vocab}: a vocabulary is a JSON list of words")
        try:
            return WordPipeline(words, max_len=max_len, tokenizer=version)
        except ValueError as e:  # the words' own checks: <pad>, <unk> first, no word twice
            raise ValueError(f"{vocab}: {e}") from None
    if spec["kind"] == "wordpiece":
        return WordPiecePipeline.from_spec(directory, spec)
    raise ValueError(f"{path}: unknown pipeline kind {spec['kind']!r}")


def _spec_file(path: Path, spec: dict, key: str) -> str:
    """The file a pipeline.json (``path``) names under ``key`` (its vocabulary, its
    tokenizer), beside it; ValueError naming ``path`` where it names none."""
    name = spec.get(key)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{path}: {key} names no file ({name!r})")
    return name


def _spec_max_len(path: Path, spec: dict) -> int:
    """A pipeline.json's ``max_len``; ValueError naming ``path`` where it is not a number."""
    value = spec.get("max_len")
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{path}: max_len is a number of tokens, not {value!r}") from None


def collate(items: Sequence[Encoded], pad_id: int = 0) -> dict[str, np.ndarray]:
    """Right-pad a batch into the model inputs, each int64 of shape (B, T); items with a
    category also give ``category_ids`` (B,), sentence pairs ``token_type_ids`` (B, T).
    A batch mixes no terms with categories, nor pairs with single texts."""
    if not items:
        raise ValueError("empty batch")
    with_category = sum(e.category is not None for e in items)
    if with_category not in (0, len(items)):
        raise ValueError("a batch mixes aspect-term items with aspect-category items")
    pairs = sum(e.token_types is not None for e in items)
    if pairs not in (0, len(items)):
        raise ValueError("a batch mixes sentence-pair items with single texts")
    t = max(len(e.ids) for e in items)
    ids = np.full((len(items), t), pad_id, dtype=np.int64)
    attn = np.zeros((len(items), t), dtype=np.int64)
    asp = np.zeros((len(items), t), dtype=np.int64)
    for i, e in enumerate(items):
        n = len(e.ids)
        ids[i, :n] = e.ids
        attn[i, :n] = 1
        asp[i, :n] = e.aspect_mask
    out = {"input_ids": ids, "attention_mask": attn, "aspect_mask": asp}
    if with_category:
        out["category_ids"] = np.array([e.category for e in items], dtype=np.int64)
    if pairs:
        types = np.zeros((len(items), t), dtype=np.int64)  # padding: segment 0, masked anyway
        for i, e in enumerate(items):
            types[i, : len(e.ids)] = e.token_types  # type: ignore[assignment]
        out["token_type_ids"] = types
    return out
