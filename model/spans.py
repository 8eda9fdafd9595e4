"""BIO tags <-> character spans, and the tagger's decoder. numpy only (serving uses it).

Tags are ``O`` (outside), ``B`` (first word of an aspect term), ``I`` (a later word).
``decode`` picks the most probable tag sequence under the BIO rule (``I`` only after ``B``
or ``I``) and one more: two aspect terms never touch (``B`` only after ``O``: in the
training data fewer than 0.1% of spans start right after another, and the rule adds
0.2-0.4 F1 on dev and every test set; docs/benchmarks.md), by Viterbi over the per-word
log-probabilities, then turns each ``B I*`` run into the character span from its first
word's start to its last word's end.

A tagger trained with a linear-chain CRF (``absa.model.crf``) also has learned
``Transitions``: a start score per tag and a score per tag pair, added to the path's
log-probabilities in the same Viterbi (the rules above still apply). The per-word
probabilities stay the softmax of the network's emissions: the log-softmax differs from the
emissions by one constant per word, which every path pays alike, so the best path is the
CRF's own.

Confidence of an extracted span: the chance that the tagger marks exactly this span (its
first word ``B``, the others ``I``, the word after it not ``I``). Without a CRF the words'
tags are independent, so that is the product of their probabilities. With a CRF the
per-word softmax is not the model's distribution (the transitions carry part of the
score), so the chance is summed over every BIO-valid tag sequence with the forward-backward
algorithm under the same scores Viterbi maximises.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from absa.model.text import Token

TAGS: tuple[str, ...] = ("O", "B", "I")
O, B, I = 0, 1, 2  # noqa: E741 (the tag's own name)

# allowed[prev, next]: I only after B or I, B only after O; a sentence may not start with I
_ALLOWED = np.array([[1, 1, 0], [1, 0, 1], [1, 0, 1]], dtype=bool)
_START = np.array([1, 1, 0], dtype=bool)
TRANSITIONS_FILE = "transitions.json"


@dataclass(frozen=True)
class Transitions:
    """A CRF's learned scores: ``start`` (K,) for the first tag, ``pairs`` (K, K) [prev, next]."""

    start: np.ndarray
    pairs: np.ndarray

    def __post_init__(self) -> None:
        k = len(TAGS)
        if self.start.shape != (k,) or self.pairs.shape != (k, k):
            raise ValueError(f"transitions must be ({k},) and ({k}, {k})")
        if not (np.isfinite(self.start).all() and np.isfinite(self.pairs).all()):
            raise ValueError("transitions must be finite")

    def save(self, directory: Path) -> None:
        spec = {"tags": list(TAGS), "start": self.start.tolist(), "pairs": self.pairs.tolist()}
        (Path(directory) / TRANSITIONS_FILE).write_text(json.dumps(spec), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> Transitions:
        spec = json.loads((Path(directory) / TRANSITIONS_FILE).read_text(encoding="utf-8"))
        if spec.get("tags") != list(TAGS):
            raise ValueError(f"{TRANSITIONS_FILE}: tags must be {list(TAGS)}")
        start = np.asarray(spec["start"], dtype=np.float64)
        return cls(start, np.asarray(spec["pairs"], dtype=np.float64))


@dataclass(frozen=True)
class FoundSpan:
    start: int
    end: int
    confidence: float


def bio_tags(tokens: Sequence[Token], spans: Iterable[tuple[int, int]]) -> list[int]:
    """Tag ids per token: a token overlapping a span is B (its first token) or I. A span that
    overlaps an earlier one, or covers no token, is left out."""
    tags = [O] * len(tokens)
    for start, end in sorted(spans):
        inside = [i for i, t in enumerate(tokens) if t.start < end and t.end > start]
        if not inside or any(tags[i] != O for i in inside):
            continue
        tags[inside[0]] = B
        for i in inside[1:]:
            tags[i] = I
    return tags


def spans_of(tags: Sequence[int], tokens: Sequence[Token]) -> list[tuple[int, int, int, int]]:
    """(first token, last token + 1, char start, char end) of every ``B I*`` run."""
    out = []
    i, n = 0, len(tags)
    while i < n:
        if tags[i] == B:
            j = i + 1
            while j < n and tags[j] == I:
                j += 1
            out.append((i, j, tokens[i].start, tokens[j - 1].end))
            i = j
        else:
            i += 1
    return out


def viterbi(probs: np.ndarray, learned: Transitions | None = None) -> list[int]:
    """The most probable BIO-valid tag sequence for per-word tag probabilities (T, K),
    with a CRF's ``learned`` transition scores added when given."""
    logp = np.log(np.clip(probs, 1e-12, 1.0))
    t_len = len(logp)
    if t_len == 0:
        return []
    neg = np.float64(-1e9)
    pairs, start = (learned.pairs, learned.start) if learned else (0.0, 0.0)
    trans = np.where(_ALLOWED, pairs, neg)
    score = np.where(_START, logp[0] + start, neg)
    back = np.zeros((t_len, len(TAGS)), dtype=np.int64)
    for t in range(1, t_len):
        cand = score[:, None] + trans  # (prev, next)
        back[t] = cand.argmax(0)
        score = cand.max(0) + logp[t]
    path = [int(score.argmax())]
    for t in range(t_len - 1, 0, -1):
        path.append(int(back[t, path[-1]]))
    return path[::-1]


def decode(
    probs: np.ndarray, tokens: Sequence[Token], learned: Transitions | None = None
) -> list[FoundSpan]:
    """The aspect spans in one sentence from its per-word tag probabilities (T, K)."""
    tags = viterbi(probs, learned)
    found = spans_of(tags, tokens)
    out = []
    marginals = _SpanMarginals(probs, learned) if learned is not None and found else None
    for i, j, _, _ in found:
        if marginals is not None:
            conf = marginals.of(i, j)
        else:
            conf = float(probs[i, B]) * float(np.prod(probs[i + 1 : j, I]))
            if j < len(tags):
                conf *= 1.0 - float(probs[j, I])
        a, b = hyphen_whole(tokens, *unpaired_trimmed(tokens, i, j))
        if a < b and any(c.isalnum() for t in tokens[a:b] for c in t.text):  # not "😀" alone
            out.append(FoundSpan(_term_start(tokens, a, b), _term_end(tokens[b - 1]), conf))
    return _apart(out)


def _apart(spans: list[FoundSpan]) -> list[FoundSpan]:
    """Each span once, none inside another: two halves of one hyphenated word both widened
    to it ("food-quality" twice), or a half inside the whole ("self-service" in
    "self-service kiosk"); the one kept has the surest confidence of those it covers."""
    out: list[FoundSpan] = []
    for f in sorted(spans, key=lambda f: (f.start, -f.end)):
        if out and out[-1].start <= f.start and f.end <= out[-1].end:
            last = out[-1]
            out[-1] = FoundSpan(last.start, last.end, max(last.confidence, f.confidence))
        else:
            out.append(f)
    return out


_CLITICS = {"'s", "'re", "'ve", "'ll", "'d", "'m"}
#: the hyphens inside a word: ASCII's, Unicode's hyphen and non-breaking hyphen (not a dash)
HYPHENS = frozenset({"-", "\u2010", "\u2011"})


def hyphen_whole(tokens: Sequence[Token], a: int, b: int) -> tuple[int, int]:
    """Words a..b-1 widened to whole hyphenated words: the word tokenizer makes a hyphen a
    word of its own, and the tagger now and then stops at one ("check" of "check-in",
    "service kiosk" of "self-service kiosk"), where no term starts or ends inside a word."""

    def joined(left: int) -> bool:  # tokens[left], a hyphen, tokens[left + 2], no spaces
        if left < 0 or left + 2 >= len(tokens) or tokens[left + 1].text not in HYPHENS:
            return False
        x, h, y = tokens[left], tokens[left + 1], tokens[left + 2]
        return (
            x.end == h.start and h.end == y.start and x.text[-1:].isalnum() and y.text[:1].isalnum()
        )

    if a >= b:
        return a, b
    if tokens[b - 1].text in HYPHENS and joined(b - 2):  # "check-": the hyphen at its end
        b += 1
    if tokens[a].text in HYPHENS and joined(a - 1):  # "-in": the hyphen at its start
        a -= 1
    while joined(b - 1):
        b += 2
    while joined(a - 2):
        a -= 2
    return a, b


def _term_start(tokens: Sequence[Token], a: int, b: int) -> int:
    """Where the term of words a..b-1 starts: after an opening apostrophe that word tokenizer
    1 glued to its first word ("'pasta" of "the 'pasta' was") and whose partner is not in
    the term; a clitic ('s, 're, ...) is a word of its own and stays."""
    first = tokens[a].text
    if (
        len(first) > 1
        and first[0] == "'"
        and first.lower() not in _CLITICS
        and not any("'" in t.text for t in tokens[a + 1 : b])
    ):
        return tokens[a].start + 1
    return tokens[a].start + _format_run(first)


def _term_end(last: Token) -> int:
    """Where a term whose last word is ``last`` ends: before the format characters that word
    ends with (a soft hyphen or a joiner is part of its word's token, not of a term)."""
    return last.end - _format_run(last.text[::-1])


def _format_run(text: str) -> int:
    """How many invisible characters (``INVISIBLE_CATEGORIES``: a soft hyphen, a zero-width
    joiner, a control character) ``text`` starts with."""
    n = 0
    while n < len(text) and unicodedata.category(text[n]) in INVISIBLE_CATEGORIES:
        n += 1
    return n


#: an opening mark -> the marks that close it
_CLOSES = {'"': '"', "“": "”", "‘": "’", "«": "»", "'": "'", "(": ")", "[": "]", "{": "}"}
_OPENS = {")": "(", "]": "[", "}": "{", "”": "“", "»": "«", '"': '"'}


def unpaired_trimmed(tokens: Sequence[Token], i: int, j: int) -> tuple[int, int]:
    """Words i..j-1 less a quote or bracket at either edge whose partner is not inside: the
    tagger takes the opening quote of '"wine" was' into the term now and then, where the
    terms people annotate hold a quote or bracket only in pairs ('"sales" team',
    'host (owner)'). A closing '"' after a number stays (15" is inches), as does a closing
    apostrophe ("maitre d'"). Invisible words at either edge (a soft hyphen, a control
    character such as NUL) go too, and so
    do pictographs (an emoji, "™"): the tagger takes the one beside a term in now and then
    ('wifi 📶', 'service👎'), where no annotated term starts or ends with one."""
    words = [t.text for t in tokens]
    while i < j and (
        _invisible(words[i])
        or _pictograph(words[i])
        or words[i] in _CLOSES
        and _CLOSES[words[i]] not in words[i + 1 : j]
    ):
        i += 1
    while i < j and (
        _invisible(words[j - 1])
        or _pictograph(words[j - 1])
        or words[j - 1] in _OPENS
        and _OPENS[words[j - 1]] not in words[i : j - 1]
    ):
        if words[j - 1] == '"' and j - 2 >= i and words[j - 2][-1:].isdigit():
            break
        j -= 1
    return i, j


#: the Unicode categories no term starts or ends with: format characters (Cf: a soft hyphen,
#: a zero-width space) and control characters (Cc: NUL, bell, escape, delete; each a word of
#: its own, "\x00food" is \x00 and food: it stayed in the term)
INVISIBLE_CATEGORIES = ("Cf", "Cc")


def _invisible(word: str) -> bool:
    """A word of invisible characters only (``INVISIBLE_CATEGORIES``: a soft hyphen, a NUL),
    which no term starts or ends with."""
    return all(unicodedata.category(c) in INVISIBLE_CATEGORIES for c in word)


def _pictograph(word: str) -> bool:
    """A word that is a symbol, not writing: it starts with an "other" or modifier symbol
    (So, Sk: an emoji, a skin tone, "™") and holds nothing but those and the marks and
    joiners emoji are built with (a variation selector, a keycap, a zero-width joiner).
    A currency or maths sign ("$", "+") is no pictograph: "C++" keeps its pluses."""
    return (
        word[:1] != ""
        and unicodedata.category(word[0]) in ("So", "Sk")
        and all(unicodedata.category(c) in ("So", "Sk", "Mn", "Me", "Cf") for c in word)
    )


def tag_marginals(probs: np.ndarray, learned: Transitions) -> np.ndarray:
    """A CRF tagger's per-word tag distribution (T, K): P(word t is tagged k) over every tag
    sequence ``decode`` allows, under the scores its Viterbi adds (the per-word softmax of
    the emissions, ``probs``, is not that distribution: the transitions carry part of the
    score). Forward-backward, as for a span's confidence."""
    if len(probs) == 0:
        return np.zeros((0, len(TAGS)))
    return _SpanMarginals(probs, learned).tags()


class _SpanMarginals:
    """P(words i..j-1 tagged B I*, word j not I) under a CRF with the BIO rules, by the
    scaled forward-backward algorithm in probability space (the exp of the scores Viterbi
    adds): alpha[t] and beta[t] normalised by c[t] at every word, so nothing overflows."""

    def __init__(self, probs: np.ndarray, learned: Transitions) -> None:
        self.emit = np.clip(probs, 1e-12, 1.0)
        n = len(self.emit)
        self.trans = np.where(_ALLOWED, np.exp(learned.pairs), 0.0)
        self.alpha = np.empty((n, len(TAGS)))
        self.beta = np.ones((n, len(TAGS)))
        self.c = np.empty(n)
        a = np.where(_START, np.exp(learned.start), 0.0) * self.emit[0]
        for t in range(n):
            if t:
                a = (self.alpha[t - 1] @ self.trans) * self.emit[t]
            self.c[t] = a.sum()
            self.alpha[t] = a / self.c[t]
        for t in range(n - 2, -1, -1):
            self.beta[t] = self.trans @ (self.emit[t + 1] * self.beta[t + 1]) / self.c[t + 1]

    def tags(self) -> np.ndarray:
        """(T, K): P(word t is tagged k), the CRF's per-word marginals."""
        return self.alpha * self.beta

    def of(self, i: int, j: int) -> float:
        p = self.alpha[i, B]
        prev = B
        for t in range(i + 1, j):
            p *= self.trans[prev, I] * self.emit[t, I] / self.c[t]
            prev = I
        if j < len(self.emit):  # the next word is O or B (B is forbidden by the rules anyway)
            nxt = [k for k in range(len(TAGS)) if k != I]
            p *= float(self.trans[prev, nxt] @ (self.emit[j, nxt] * self.beta[j, nxt])) / self.c[j]
        return float(p)


def overlaps_any(span: tuple[int, int], others: Iterable[tuple[int, int]]) -> bool:
    """Whether the character span [start, end) shares a character with any of ``others``."""
    return any(span[0] < o[1] and o[0] < span[1] for o in others)


def span_scores(
    gold: Sequence[Iterable[tuple[int, int]]], pred: Sequence[Iterable[tuple[int, int]]]
) -> dict[str, float | int]:
    """Exact-match span precision, recall and F1 (in %) over sentences, with the counts."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    tp = n_gold = n_pred = 0
    for g, p in zip(gold, pred, strict=True):
        g, p = set(g), set(p)
        tp += len(g & p)
        n_gold += len(g)
        n_pred += len(p)
    prec = 100.0 * tp / n_pred if n_pred else 0.0
    rec = 100.0 * tp / n_gold if n_gold else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {
        "precision": prec,
        "recall": rec,
        "f1": f1,
        "true_positives": tp,
        "gold": n_gold,
        "predicted": n_pred,
        "sentences": len(gold),
    }
