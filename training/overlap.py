"""The same sentence across data sets (differently tokenised copies: "n't" split or not,
brackets as -LRB-): training sentences that occur in a test set are dropped, and a dev or
eval set's overlap with training is counted."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar


def normalise_text(text: str) -> str:
    """Lower-cased text without punctuation or spaces: finds the same sentence across
    differently tokenised copies (the 3-line files split "n't", the XML files do not)."""
    return re.sub(r"\W+", "", text.lower())


class HasText(Protocol):
    @property
    def text(self) -> str: ...


T = TypeVar("T", bound=HasText)


_PTB_BRACKET = re.compile(r"-(?:LRB|RRB|LSB|RSB|LCB|RCB)-", re.IGNORECASE)


def bracket_free(text: str) -> str:
    """``normalise_text`` of the text without its Penn Treebank bracket tokens: the
    SemEval-2014 .seg files and Twitter write "(" as -LRB-, MAMS and the rest write "(", and
    ``normalise_text`` keeps the "lrb" (Rest14 test's "-LRB- including 2 drinks" is MAMS
    train's "(including 2 drinks")."""
    return normalise_text(_PTB_BRACKET.sub(" ", text))


def drop_overlap(
    examples: Sequence[T],
    reference: Iterable[HasText],
    key: Callable[[str], str] = bracket_free,
) -> tuple[list[T], int]:
    """The examples (anything with a sentence ``text``: examples, sentences, transfer-set
    candidates) whose sentence does not occur in ``reference`` (e.g. test sets), and how many
    were dropped, texts compared by ``key`` (``bracket_free``: punctuation, spaces, case and
    the spelling of brackets aside; runs made before it compared by ``normalise_text``).
    Public ABSA sets share sentences (MAMS and SemEval-2014 restaurants)."""
    banned = {key(e.text) for e in reference}
    kept = [e for e in examples if key(e.text) not in banned]
    return kept, len(examples) - len(kept)


def sentences_of(examples: Iterable[HasText]) -> set[str]:
    """The distinct sentences of ``examples`` as ``drop_overlap`` compares them
    (``bracket_free``)."""
    return {bracket_free(e.text) for e in examples}


def sentence_overlap(examples: Iterable[HasText], seen: set[str]) -> dict[str, int]:
    """How many of the sentences of ``examples`` the sentences ``seen`` (``sentences_of`` a
    reference set, made once for every set compared with it) hold too: ``{"sentences": n,
    "of": m}``. An eval or dev set measured on what training saw (retrain's gate, ``absa
    train``)."""
    sentences = sentences_of(examples)
    return {"sentences": len(sentences & seen), "of": len(sentences)}
