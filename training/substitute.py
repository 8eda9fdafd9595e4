"""Word-substitution copies of training sentences for the transfer set (after TinyBERT's
data augmentation, Jiao et al. 2020, and Tang et al. 2019's distillation of BERT into a
BiLSTM): a teacher labels the copies, and the student learns the teacher's answers on many
more sentences than the annotators wrote.

Each copy of a sentence replaces some of its words outside every aspect span (each word with
probability ``p``) by one of the word's nearest neighbours in a word-vector table (cosine,
the ``k`` nearest among the table's first ``vocab`` words); the aspects stay as they are, and
every aspect of the sentence is asked about in every copy. Copies carry no label: the
teacher's probabilities are their only target (``absa train --transfer``), so a
substitution that turns "great" into "awful" is a new example, not a wrong one.
Deterministic: a copy depends only on the seed, the sentence and its number.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from absa.model.text import tokenize
from absa.training.overlap import bracket_free
from absa.training.transfer_set import Candidate

log = logging.getLogger(__name__)

__all__ = ["copies", "nearest_words", "sentence_copies", "source_file"]

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")  # lower-case words only: no names, numbers, marks
_COPY = re.compile(r"subst\d+:")


def source_file(source: str) -> tuple[str, bool]:
    """A transfer candidate's source file (``path:line`` less the line) and whether the
    candidate is a substitution copy (``subst<i>:path:line``)."""
    copy = _COPY.match(source)
    rest = source[copy.end() :] if copy else source
    path, _, line = rest.rpartition(":")
    return (path if path and line.isdigit() else rest), copy is not None


def comes_from(source: str, endings: Sequence[str]) -> bool:
    """Whether a source (``path:line``, a copy's ``subst<i>:path:line``) names a file whose
    path ends with one of ``endings``."""
    return source_file(source)[0].endswith(tuple(endings))


def from_sources(found: Sequence[Candidate], endings: Sequence[str]) -> list[Candidate]:
    """The candidates whose source file (``source_file``) ends with one of ``endings``."""
    return [c for c in found if comes_from(c.source, endings)]


def nearest_words(
    words: Sequence[str], vectors: np.ndarray, k: int = 8, vocab: int = 20000,
    min_cosine: float = 0.5, block: int = 2048,
) -> dict[str, list[str]]:  # fmt: skip
    """For each of the first ``vocab`` words that is a plain lower-case word, its ``k``
    nearest other such words by cosine, those at ``min_cosine`` or above."""
    keep = [i for i, w in enumerate(words[:vocab]) if _WORD.fullmatch(w)]
    names = [words[i] for i in keep]
    unit = vectors[keep].astype(np.float32)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-8)
    out: dict[str, list[str]] = {}
    for lo in range(0, len(keep), block):
        sims = unit[lo : lo + block] @ unit.T
        for r in range(sims.shape[0]):
            sims[r, lo + r] = -1.0  # not the word itself
        top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        for r, row in enumerate(top):
            near = [names[j] for j in row if sims[r, j] >= min_cosine]
            if near:
                out[names[lo + r]] = near
    log.info("neighbours for %d of %d words", len(out), len(names))
    return out


def _rng(seed: int, text: str, n: int) -> random.Random:
    digest = hashlib.sha256(f"{seed}\0{n}\0{text}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _match_case(new: str, old: str) -> str:
    return new.capitalize() if old[:1].isupper() and old[1:].islower() else new


def _copy(
    text: str, spans: Sequence[tuple[int, int]], near: Mapping[str, list[str]],
    p: float, rng: random.Random,
) -> tuple[str, list[tuple[int, int]]] | None:  # fmt: skip
    """One copy of the text and where its spans went, or None if no word was replaced."""
    edits: list[tuple[int, int, str]] = []
    for tok in tokenize(text):
        if any(tok.start < e and s < tok.end for s, e in spans):
            continue
        options = near.get(tok.text.lower())
        if options and rng.random() < p:
            edits.append((tok.start, tok.end, _match_case(rng.choice(options), tok.text)))
    if not edits:
        return None
    pieces, last = [], 0
    for s, e, new in edits:
        pieces += [text[last:s], new]
        last = e
    pieces.append(text[last:])

    def moved(x: int) -> int:  # an offset outside every edit, in the copy
        return x + sum(len(new) - (e - s) for s, e, new in edits if e <= x)

    return "".join(pieces), [(moved(s), moved(e)) for s, e in spans]


def _copies_of(
    text: str, spans: Sequence[tuple[int, int]], near: Mapping[str, list[str]],
    banned: set[str], n: int, p: float, seed: int, seen: set[str],
) -> Iterator[tuple[int, str, list[tuple[int, int]]]]:  # fmt: skip
    """Up to ``n`` copies of ``text`` (copy number, copy, where its ``spans`` went): none
    that ``seen`` holds (each one made is added to it) or whose ``bracket_free`` form is
    ``banned``."""
    for i in range(n):
        made = _copy(text, spans, near, p, _rng(seed, text, i))
        if made is None or made[0] in seen or bracket_free(made[0]) in banned:
            continue
        seen.add(made[0])
        yield i, *made


def copies(
    found: Sequence[Candidate], near: Mapping[str, list[str]], banned: set[str],
    n: int = 2, p: float = 0.3, seed: int = 0,
) -> list[Candidate]:  # fmt: skip
    """``n`` substitution copies of each sentence of ``found`` (candidates or annotated aspects
    as candidates), every aspect of the sentence in each: unlabelled candidates whose source
    is ``subst<i>:<the aspect's source>``. Sentences whose ``bracket_free`` form is
    ``banned`` (test and dev sentences) are not copied, nor is a copy kept that turns into
    one. A copy equal to the sentence or to an earlier copy is not repeated, so a sentence
    with few replaceable words gets fewer."""
    by_text: dict[str, list[Candidate]] = {}
    for c in found:
        if bracket_free(c.text) not in banned:
            by_text.setdefault(c.text, []).append(c)
    out: list[Candidate] = []
    for text, group in by_text.items():
        spans = [(c.start, c.end) for c in group]
        for i, new_text, moved in _copies_of(text, spans, near, banned, n, p, seed, {text}):
            for c, (s, e) in zip(group, moved, strict=True):
                assert new_text[s:e] == c.aspect, (new_text, s, e, c.aspect)
                out.append(Candidate(new_text, s, e, 1.0, f"subst{i}:{c.source}"))
    log.info("%d substitution copies of %d sentences' aspects", len(out), len(by_text))
    return out


def sentence_copies(
    texts: Sequence[str], near: Mapping[str, list[str]], banned: set[str],
    n: int = 2, p: float = 0.3, seed: int = 0,
) -> list[tuple[str, int]]:  # fmt: skip
    """``n`` substitution copies of each text, any word replaceable (aspect words too: a
    tagger's teacher labels the copy, and a neighbour of a term is often a term it never
    saw): (copy, index of its text) pairs. Texts whose ``bracket_free`` form is ``banned``
    are not copied, nor is a copy kept that turns into one; a copy equal to its text or to an
    earlier copy is not repeated. Deterministic, as ``copies``."""
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    for k, text in enumerate(texts):
        if bracket_free(text) in banned or text in seen:
            continue
        seen.add(text)
        out += [(new, k) for _, new, _ in _copies_of(text, (), near, banned, n, p, seed, seen)]
    log.info("%d substitution copies of %d texts", len(out), len(texts))
    return out
