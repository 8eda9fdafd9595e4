"""Aspect robustness rules (after ARTS, Xing et al. 2020) and training-time augmentation.

One implementation of the rules serves two users: the robustness suite
(``benchmarks/robustness``, built from TEST sets) and ``augment`` (synthetic TRAINING
examples, ``TrainConfig.augment``). They read the same opinion-word lexicon
(``training/lexicon.json``) but disjoint parts of it: the suite's clause templates, generic
aspects and added words (``use="suite"``) are never used for training (``use="augment"``).

The rules, on a sentence cut into clauses (see ``Sentence``):

- ``reverse_target`` (REVTGT): replace the opinion words of the target's clause by their
  antonyms (or drop the ``not`` that negates them); the label flips positive <-> negative.
- ``reverse_non_target`` (REVNON): the same, in every OTHER clause; the label is unchanged.
- ``add_diff`` (ADDDIFF): append a clause about another aspect with an opinion of the
  opposite polarity (``", but the service was terrible"``); the label is unchanged.

Each returns an ``Example`` whose ``text[start:end]`` is still the target term, or ``None``
when the rule does not apply (they are deliberately conservative: no word to flip, words of
mixed polarity, a negation that cannot be undone, an opinion word without a safe antonym).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from absa.model.text import Token, tokenize
from absa.training.records import Example

__all__ = [
    "DEFAULT_LEXICON",
    "KINDS",
    "Lexicon",
    "Sentence",
    "add_diff",
    "apply_edits",
    "augment",
    "group_by_text",
    "load_lexicon",
    "reverse_non_target",
    "reverse_target",
    "variants",
]

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("revtgt", "revnon", "adddiff")
USES: tuple[str, ...] = ("suite", "augment")
DEFAULT_LEXICON = Path(__file__).with_name("lexicon.json")
FLIP = {"positive": "negative", "negative": "positive"}

# Clause boundaries, weakest first. A piece between boundaries merges into a neighbour
# across a boundary no stronger than its kind allows (see ``Sentence``).
AND, COMMA, CLAUSE, SENTENCE = 1, 2, 3, 4
_PUNCT_BOUNDARIES = {
    ",": COMMA,
    "(": COMMA,
    ")": COMMA,
    ";": CLAUSE,
    ":": CLAUSE,
    "-": CLAUSE,
    ".": SENTENCE,
    "!": SENTENCE,
    "?": SENTENCE,
}
_WORD_BOUNDARIES = {
    "and": AND,
    "lrb": COMMA,  # "-LRB-" / "-RRB-": parentheses in the SemEval .seg files
    "rrb": COMMA,
    "but": CLAUSE,
    "although": CLAUSE,
    "though": CLAUSE,
    "while": CLAUSE,
    "whereas": CLAUSE,
    "however": CLAUSE,
    "yet": CLAUSE,
}
_SHORT_PIECE = 4  # an opinion-less verbless piece this short joins the next (2: or the last)
_VERBS = frozenset(
    "is was are were 's 're 'm be been being am has have had do does did work works worked "
    "came come comes seem seems seemed look looks looked feel feels felt get gets got run "
    "runs ran make makes made take takes took go goes went".split()
)
_PRONOUNS = frozenset("it they he she it's".split())
_NEG_WINDOW = 3  # a negator up to this many tokens before an opinion word negates it
_WORD_RE = re.compile(r"^(\w+|n't)$")


# --------------------------------------------------------------------------- lexicon


@dataclass(frozen=True)
class Lexicon:
    """The opinion-word lexicon (see ``training/lexicon.json``), lower-case throughout."""

    antonyms: Mapping[str, str]  # word -> antonym, both directions
    polarity: Mapping[str, str]  # word -> "positive" | "negative"
    unflippable: frozenset[str]  # opinion-ish words without a safe antonym: REVTGT skips
    removable_negators: frozenset[str]  # "not", "n't": REVTGT may drop them
    other_negators: frozenset[str]  # "never", "no", ...: REVTGT skips
    removable_before_nt: frozenset[str]  # "was" in "wasn't": dropping "n't" leaves a word
    fillers: frozenset[str]  # words a bare "very good" piece may hold besides opinions
    not_opinion: tuple[tuple[str, ...], ...]  # phrases whose words are no opinion: dim sum
    templates: Mapping[str, tuple[str, ...]]  # use -> ADDDIFF clause templates
    aspects: Mapping[str, Mapping[str, tuple[str, ...]]]  # use -> domain -> generic aspects
    add_words: Mapping[str, Mapping[str, tuple[str, ...]]]  # use -> polarity -> words
    sha256: str = ""

    def domains(self, use: str) -> tuple[str, ...]:
        return tuple(self.aspects[use])


def load_lexicon(path: str | Path | None = None) -> Lexicon:
    """Load and check a lexicon file (default: the packaged ``training/lexicon.json``)."""
    path = Path(path) if path is not None else DEFAULT_LEXICON
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: bad JSON: {e}") from None

    def words(key: str, value: object) -> frozenset[str]:
        if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
            raise ValueError(f"{path}: {key} must be a list of words")
        bad = [w for w in value if not _WORD_RE.match(w) or w != w.lower()]
        if bad:
            raise ValueError(f"{path}: {key}: not lower-case single words: {bad}")
        return frozenset(value)

    antonyms: dict[str, str] = {}
    polarity: dict[str, str] = {}
    for group, pairs in data["pairs"].items():
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f"{path}: pairs.{group}: {pair} is not a [positive, negative]")
            words(f"pairs.{group}", pair)
            for word, other, pol in (
                (pair[0], pair[1], "positive"),
                (pair[1], pair[0], "negative"),
            ):
                if polarity.setdefault(word, pol) != pol:
                    raise ValueError(f"{path}: {word!r} is listed as positive and negative")
                antonyms.setdefault(word, other)
    unflippable = words("unflippable", data["unflippable"])
    both = sorted(unflippable & set(polarity))
    if both:
        raise ValueError(f"{path}: {both} are both opinion pairs and unflippable")
    templates = {u: tuple(data["templates"][u]) for u in USES}
    for use, ts in templates.items():
        for t in ts:
            if t[:1] not in ",;." or "{aspect}" not in t or "{word}" not in t:
                raise ValueError(
                    f"{path}: template {t!r} ({use}) must start with , ; or . and "
                    "hold {aspect} and {word}"
                )
    add_words = {
        u: {p: tuple(data["add_words"][u][p]) for p in ("positive", "negative")} for u in USES
    }
    for use, by_pol in add_words.items():
        for pol, ws in by_pol.items():
            wrong = [w for w in ws if polarity.get(w) != pol]
            if not ws or wrong:
                raise ValueError(f"{path}: add_words.{use}.{pol} must be {pol} pair words: {wrong}")
    return Lexicon(
        antonyms=antonyms,
        polarity=polarity,
        unflippable=unflippable,
        removable_negators=words("negators.removable", data["negators"]["removable"]),
        other_negators=words("negators.other", data["negators"]["other"]),
        removable_before_nt=words("removable_before_nt", data["removable_before_nt"]),
        fillers=words("fillers", data["fillers"]),
        not_opinion=tuple(tuple(p.lower().split()) for p in data.get("not_opinion", [])),
        templates=templates,
        aspects={u: {d: tuple(a) for d, a in data["aspects"][u].items()} for u in USES},
        add_words=add_words,
        sha256=hashlib.sha256(raw).hexdigest(),
    )


# --------------------------------------------------------------------------- sentences


@dataclass(frozen=True)
class Sentence:
    """A text cut into tokens and clauses.

    Boundaries, weakest first: "and"; "," and parentheses; "but although though while
    whereas however yet", ";", ":" and a free-standing " - "; "." "!" "?". "and" between
    opinion words ("easy and very intuitive") is no boundary. Then pieces merge:

    - a piece of opinion words and fillers only ("very fresh", "but pricey") joins the
      clause before it (else the one after) across anything but a sentence end;
    - a piece opening with a pronoun ("and they were fast") joins the one before across
      "and" or a comma;
    - a short verbless piece without opinion words joins the next across "and" ("the food
      and service were great"; two words or fewer: else the previous, "great food and
      service"). Longer or verb-bearing opinion-less pieces ("everything always works")
      stay clauses of their own, so their unseen sentiment is never attributed elsewhere.
    """

    text: str
    tokens: tuple[Token, ...]
    words: tuple[str, ...]  # lower-case token texts
    opinion: tuple[bool, ...]  # a lexicon opinion word (not inside a not_opinion phrase)
    clauses: tuple[tuple[int, int], ...]  # token ranges [lo, hi)

    @classmethod
    def parse(cls, text: str, lexicon: Lexicon) -> Sentence:
        tokens = tuple(tokenize(text))
        words = tuple(t.text.lower() for t in tokens)
        opinion = [w in lexicon.polarity for w in words]
        for phrase in lexicon.not_opinion:
            n = len(phrase)
            for i in range(len(words) - n + 1):
                if words[i : i + n] == phrase:
                    opinion[i : i + n] = [False] * n
        sent = cls(text, tokens, words, tuple(opinion), ())
        return replace(sent, clauses=tuple(sent._segment(lexicon)))

    def _boundary(self, i: int, lexicon: Lexicon) -> int:
        w, tok = self.words[i], self.tokens[i]
        before = self.text[tok.start - 1 : tok.start] if tok.start else " "
        after = self.text[tok.end : tok.end + 1] or " "
        if w in ("lrb", "rrb"):
            return COMMA if tok.text.isupper() else 0
        if w in _WORD_BOUNDARIES:
            if not (before.isspace() and after.isspace()):
                return 0  # "and/or"
            if w == "and" and i > 0 and self.opinion[i - 1]:
                j = i + 1
                while j < len(self.words) and self.words[j] in lexicon.fillers:
                    j += 1
                if j < len(self.words) and self.opinion[j]:
                    return 0  # "easy and (very) intuitive": one predicate
            return _WORD_BOUNDARIES[w]
        if w in _PUNCT_BOUNDARIES:
            if w == "-":  # " - " separates clauses; "top-notch", "-LRB-" do not
                return CLAUSE if before.isspace() and after.isspace() else 0
            if not before.isspace() and not after.isspace():
                return 0  # "2.5", "1,000"
            return _PUNCT_BOUNDARIES[w]
        return 0

    def _segment(self, lexicon: Lexicon) -> list[tuple[int, int]]:
        pieces: list[list[int]] = []  # [lo, hi, the boundary before it]
        pending = 0
        for i in range(len(self.tokens)):
            b = self._boundary(i, lexicon)
            if b:
                pending = max(pending, b)
                continue
            if pieces and not pending:
                pieces[-1][1] = i + 1
            else:
                pieces.append([i, i + 1, pending if pieces else 0])
            pending = 0

        def moves(i: int) -> tuple[tuple[int, int], ...]:
            """Where piece ``i`` may merge: (-1 back | +1 forward, the strongest boundary
            it may cross), in order of preference."""
            lo, hi, _ = pieces[i]
            words = [w for w in self.words[lo:hi] if _WORD_RE.match(w)]
            if not words:
                return ((-1, CLAUSE), (1, CLAUSE))
            if not any(self.opinion[lo:hi]):
                # "the food and service were great", "great food and service": a short
                # verbless piece joins its neighbour across "and"; "works , easy to use" not
                if _VERBS.intersection(words) or len(words) > _SHORT_PIECE:
                    return ()
                return ((1, AND), (-1, AND)) if len(words) <= 2 else ((1, AND),)
            if words[0] in _PRONOUNS:  # "the staff was great and they were fast"
                return ((-1, COMMA),)
            if all(w in lexicon.polarity or w in lexicon.fillers for w in words):
                return ((-1, CLAUSE), (1, CLAUSE))  # "great , fresh and tasty", "good but pricey"
            return ()

        merged = True
        while merged and len(pieces) > 1:
            merged = False
            for i in range(len(pieces)):
                for step, limit in moves(i):
                    a = i if step > 0 else i - 1  # merge pieces a and a + 1
                    if 0 <= a < len(pieces) - 1 and pieces[a + 1][2] <= limit:
                        pieces[a : a + 2] = [[pieces[a][0], pieces[a + 1][1], pieces[a][2]]]
                        merged = True
                        break
                if merged:
                    break
        return [(lo, hi) for lo, hi, _ in pieces]

    def span_tokens(self, start: int, end: int) -> list[int]:
        return [i for i, t in enumerate(self.tokens) if t.start < end and t.end > start]

    def clause_of(self, i: int) -> tuple[int, int] | None:
        for lo, hi in self.clauses:
            if lo <= i < hi:
                return lo, hi
        return None

    def negator(self, i: int, clause: tuple[int, int], lexicon: Lexicon) -> int | None:
        """The nearest negator up to ``_NEG_WINDOW`` tokens before token ``i`` in its clause."""
        for j in range(i - 1, max(clause[0], i - _NEG_WINDOW) - 1, -1):
            if self.words[j] in lexicon.removable_negators | lexicon.other_negators:
                return j
        return None

    def removable(self, j: int, lexicon: Lexicon) -> bool:
        """Whether negator token ``j`` can be dropped: "not", or "n't" after "was", "does", ..."""
        w = self.words[j]
        if w not in lexicon.removable_negators:
            return False
        return w != "n't" or (j > 0 and self.words[j - 1] in lexicon.removable_before_nt)


def _match_case(new: str, old: str) -> str:
    if len(old) > 1 and old.isupper():
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


Edit = tuple[int, int, str]  # replace text[start:end] by the string


def _delete(text: str, tok: Token) -> Edit:
    """Drop a token and one space beside it: "was not good" -> "was good", "Not bad" ->
    "bad", "wasn't" -> "was"."""
    if tok.start > 0 and not text[tok.start - 1].isspace():
        return tok.start, tok.end, ""  # glued to the word before: "n't"
    if tok.start > 0:
        return tok.start - 1, tok.end, ""
    end = tok.end + 1 if text[tok.end : tok.end + 1] == " " else tok.end
    return tok.start, end, ""


def _flip_edits(
    s: Sentence, opinions: Iterable[int], lexicon: Lexicon, strict: bool
) -> list[Edit] | None:
    """Edits that reverse the given opinion tokens: drop a removable negator, else swap the
    word for its antonym (fixing "a"/"an" before it). ``strict``: None when a negator cannot
    be dropped; otherwise the negated word is swapped anyway."""
    edits: dict[int, Edit] = {}  # keyed by token index
    for i in opinions:
        clause = s.clause_of(i) or (0, len(s.tokens))
        j = s.negator(i, clause, lexicon)
        if j is not None and s.removable(j, lexicon):
            edits[j] = _delete(s.text, s.tokens[j])
            continue
        if j is not None and strict:
            return None
        tok = s.tokens[i]
        new = _match_case(lexicon.antonyms[s.words[i]], tok.text)
        edits[i] = (tok.start, tok.end, new)
        if i > 0 and s.words[i - 1] in ("a", "an") and i - 1 not in edits:
            art = s.tokens[i - 1]
            want = "an" if new[0].lower() in "aeiou" else "a"
            if s.words[i - 1] != want:
                edits[i - 1] = (art.start, art.end, _match_case(want, art.text))
    return sorted(edits.values())


def apply_edits(text: str, edits: Sequence[Edit], start: int, end: int) -> tuple[str, int, int]:
    """The edited text and the moved span [start, end); no edit may touch the span."""
    out, pos, shift = [], 0, 0
    for a, b, new in sorted(edits):
        if a < pos:
            raise ValueError(f"overlapping edits at {a}")
        if a < end and b > start:
            raise ValueError(f"edit [{a}, {b}) touches the aspect span [{start}, {end})")
        out += [text[pos:a], new]
        if b <= start:
            shift += len(new) - (b - a)
        pos = b
    out.append(text[pos:])
    return "".join(out), start + shift, end + shift


def _derive(ex: Example, text: str, start: int, end: int, label: str, kind: str) -> Example:
    out = Example(text, start, end, label, f"{ex.source}#{kind}")
    if out.term != ex.term:
        raise AssertionError(f"{kind}: span lost the term {ex.term!r}: {out.term!r} in {text!r}")
    return out


def _polarities(s: Sentence, opinions: Iterable[int], lexicon: Lexicon) -> set[str]:
    """The polarity each opinion token expresses, negation taken into account."""
    out = set()
    for i in opinions:
        pol = lexicon.polarity[s.words[i]]
        if s.negator(i, s.clause_of(i) or (0, len(s.tokens)), lexicon) is not None:
            pol = FLIP[pol]
        out.add(pol)
    return out


def _target_clause(s: Sentence, ex: Example) -> tuple[set[int], tuple[int, int]] | None:
    target = s.span_tokens(ex.start, ex.end)
    clauses = {s.clause_of(i) for i in target}
    if not target or len(clauses) != 1 or None in clauses:
        return None
    return set(target), clauses.pop()  # type: ignore[return-value]


# --------------------------------------------------------------------------- the rules


def _target_opinions(
    ex: Example, lexicon: Lexicon
) -> tuple[Sentence, set[int], tuple[int, int], list[int]] | None:
    """The parsed sentence, the target's word indices, its clause (lo, hi) and the opinion
    words of that clause outside the term; None when the target's clause is not found."""
    s = Sentence.parse(ex.text, lexicon)
    found = _target_clause(s, ex)
    if found is None:
        return None
    target, (lo, hi) = found
    own = [i for i in range(lo, hi) if s.opinion[i] and i not in target]
    return s, target, (lo, hi), own


def reverse_target(ex: Example, lexicon: Lexicon) -> Example | None:
    """REVTGT: reverse the opinion words in the target's clause; the label flips.

    Applies to positive/negative targets whose clause holds opinion words that all express
    the target's label (after negation), no unflippable opinion word, and no negation but a
    droppable "not"/"n't". Words inside the aspect term itself are never touched."""
    if ex.label not in FLIP:
        return None
    parsed = _target_opinions(ex, lexicon)
    if parsed is None:
        return None
    s, target, (lo, hi), own = parsed
    if not own or _polarities(s, own, lexicon) != {ex.label}:
        return None
    if any(s.words[i] in lexicon.unflippable for i in range(lo, hi) if i not in target):
        return None
    edits = _flip_edits(s, own, lexicon, strict=True)
    if not edits:
        return None
    text, start, end = apply_edits(ex.text, edits, ex.start, ex.end)
    return _derive(ex, text, start, end, FLIP[ex.label], "revtgt")


def reverse_non_target(ex: Example, lexicon: Lexicon) -> Example | None:
    """REVNON: reverse the opinion words of every clause but the target's; label unchanged.

    Applies when other clauses hold opinion words and the target's own clause carries its
    label: for positive/negative targets its opinion words all express the label, for
    neutral targets it holds none."""
    parsed = _target_opinions(ex, lexicon)
    if parsed is None:
        return None
    s, target, (lo, hi), own = parsed
    if ex.label in FLIP:
        if not own or _polarities(s, own, lexicon) != {ex.label}:
            return None
    elif own:
        return None
    others = [i for i, op in enumerate(s.opinion) if op and not lo <= i < hi]
    if not others:
        return None
    edits = _flip_edits(s, others, lexicon, strict=False)
    if not edits:
        return None
    text, start, end = apply_edits(ex.text, edits, ex.start, ex.end)
    return _derive(ex, text, start, end, ex.label, "revnon")


def _is_plural(aspect: str) -> bool:
    last = aspect.split()[-1].lower()
    return len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is"))


def _mentions(text: str, aspect: str) -> bool:
    """Whether any word of ``aspect`` (or its singular/plural) occurs in ``text``."""
    for w in aspect.lower().split():
        stem = re.escape(w.removesuffix("s"))
        if re.search(rf"(?<!\w){stem}s?(?!\w)", text, re.I):
            return True
    return False


def _is_tokenized(text: str) -> bool:
    """SemEval .seg / 3-line style: punctuation stands alone ("great , but ... .")."""
    return bool(re.search(r"\w [,.!?;:]+(\s|$)", text)) or " n't" in text


def _other_aspect(
    ex: Example,
    siblings: Sequence[Example],
    want: str,
    lexicon: Lexicon,
    use: str,
    domain: str,
    rng: random.Random,
) -> str | None:
    """Another aspect term of the sentence whose gold label agrees with the added opinion
    (or is neutral), else a generic aspect of the domain that the sentence does not mention."""
    term = ex.term.lower()
    seen: dict[str, str] = {}
    for o in siblings:
        other = o.term.lower()
        if o.text != ex.text or (o.start < ex.end and o.end > ex.start):
            continue
        if other in term or term in other or o.label not in (want, "neutral"):
            continue
        name = o.term
        if o.start == 0 and name[1:] == name[1:].lower():
            name = name[:1].lower() + name[1:]  # sentence-initial capital
        seen.setdefault(other, name)
    if seen:
        return rng.choice(sorted(seen.values()))
    try:
        generic = lexicon.aspects[use][domain]
    except KeyError:
        raise ValueError(
            f"no generic aspects for domain {domain!r} ({use}); "
            f"known: {', '.join(lexicon.domains(use))}"
        ) from None
    free = [a for a in generic if not _mentions(ex.text, a)]
    return rng.choice(free) if free else None


def add_diff(
    ex: Example,
    lexicon: Lexicon,
    rng: random.Random,
    *,
    use: str = "suite",
    domain: str = "restaurant",
    siblings: Sequence[Example] = (),
) -> Example | None:
    """ADDDIFF: append a clause about another aspect with the opposite opinion; label unchanged.

    The opinion is the opposite of the target's label (a random strong one for neutral
    targets); the aspect is another aspect term of the same sentence (``siblings``: the
    examples sharing ``ex.text``) or a generic aspect of ``domain``. The clause goes before
    the sentence's final punctuation, in the sentence's own tokenisation style."""
    want = FLIP.get(ex.label) or rng.choice(("positive", "negative"))
    word = rng.choice(lexicon.add_words[use][want])
    aspect = _other_aspect(ex, siblings, want, lexicon, use, domain, rng)
    if aspect is None:
        return None
    plural = _is_plural(aspect)
    be = {"was": "were" if plural else "was", "is": "are" if plural else "is"}
    clause = rng.choice(lexicon.templates[use]).format(aspect=aspect, word=word, **be)
    text = ex.text
    cut = max(re.search(r"[\s.!?]*$", text).start(), ex.end)  # type: ignore[union-attr]
    head, tail = text[:cut], text[cut:].strip()
    stripped = head.rstrip(" ,;:-")
    if len(stripped) >= ex.end:
        head = stripped
    if _is_tokenized(text):
        new = f"{head} {clause}" + (f" {tail}" if tail else "")
    else:
        new = head + re.sub(r" ([,;.])", r"\1", clause) + tail
    return _derive(ex, new, ex.start, ex.end, ex.label, "adddiff")


def example_rng(ex: Example, seed: int, use: str) -> random.Random:
    """A generator fixed by the seed and the example alone (not by the order of a data set)."""
    return random.Random(f"{seed}|{use}|{ex.text}|{ex.start}|{ex.end}|{ex.label}")


def variants(
    ex: Example,
    lexicon: Lexicon,
    *,
    use: str,
    domain: str,
    seed: int,
    siblings: Sequence[Example] = (),
) -> dict[str, Example]:
    """Every rule that applies to ``ex``: kind -> the variant with its expected label."""
    out = {
        "revtgt": reverse_target(ex, lexicon),
        "revnon": reverse_non_target(ex, lexicon),
        "adddiff": add_diff(
            ex, lexicon, example_rng(ex, seed, use), use=use, domain=domain, siblings=siblings
        ),
    }
    return {k: v for k, v in out.items() if v is not None}


def group_by_text(examples: Iterable[Example]) -> dict[str, list[Example]]:
    by_text: dict[str, list[Example]] = {}
    for e in examples:
        by_text.setdefault(e.text, []).append(e)
    return by_text


# --------------------------------------------------------------------------- augmentation


def augment(
    examples: Sequence[Example],
    lexicon_path: str | Path | None = None,
    seed: int = 0,
    rate: float = 0.5,
    *,
    domain: str = "any",
) -> list[Example]:
    """Synthetic training examples, about ``rate * len(examples)`` of them (the inputs are
    NOT included in the result).

    Each is one rule applied to one input example with the ``augment`` part of the lexicon
    (templates, generic aspects and added words the robustness suite never uses). The kinds
    are taken in turn (REVTGT, REVNON, ADDDIFF), each in a seeded random order, so the mix is
    as even as the rules allow; fewer come back (with a warning) when the rules apply to too
    few examples. ``domain`` picks ADDDIFF's generic aspects when a sentence has no other
    aspect term to use ("restaurant", "laptop" or "any"). Pass training examples only:
    never dev or test data."""
    if rate < 0:
        raise ValueError("rate must be >= 0")
    want = round(rate * len(examples))
    if want == 0:
        return []
    lexicon = load_lexicon(lexicon_path)
    by_text = group_by_text(examples)
    pools: dict[str, list[Example]] = {k: [] for k in KINDS}
    for ex in examples:
        for kind, v in variants(
            ex, lexicon, use="augment", domain=domain, seed=seed, siblings=by_text[ex.text]
        ).items():
            pools[kind].append(v)
    rng = random.Random(seed)
    for kind in KINDS:
        rng.shuffle(pools[kind])
    out: list[Example] = []
    taken = dict.fromkeys(KINDS, 0)
    while len(out) < want and any(taken[k] < len(pools[k]) for k in KINDS):
        for kind in KINDS:
            if len(out) < want and taken[kind] < len(pools[kind]):
                out.append(pools[kind][taken[kind]])
                taken[kind] += 1
    if len(out) < want:
        log.warning("augment: asked for %d examples, the rules gave only %d", want, len(out))
    log.info(
        "augment: %d synthetic example(s) (%s)",
        len(out),
        ", ".join(f"{k} {taken[k]}" for k in KINDS),
    )
    return out
