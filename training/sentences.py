"""Sentence-level aspect data for extraction: every sentence with the set of its aspect spans.

- XML (SemEval-2014, MAMS): every ``<sentence>``, the ones without aspect terms too (they
  teach the tagger when to find nothing); ``conflict`` terms are aspects like any other.
- 3-line and JSONL/CSV (the SemEval test files, ACOS): the per-aspect records of
  ``absa.training.readers`` grouped by sentence text (a sentence's aspects are the records
  that share its text). These files hold only sentences with at least one labelled aspect.

Every span keeps its polarity label (``conflict`` included) for end-to-end evaluation.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from absa.training.readers import _parse_xml, _read_bytes, detect_format, normalise_text, read_many
from absa.training.records import DataError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GoldSpan:
    start: int
    end: int
    label: str  # negative / neutral / positive / conflict


@dataclass(frozen=True)
class Sentence:
    text: str
    spans: tuple[GoldSpan, ...]
    source: str = ""

    @property
    def span_set(self) -> set[tuple[int, int]]:
        return {(s.start, s.end) for s in self.spans}


def read_sentences(paths: Iterable[str | Path] | str | Path) -> list[Sentence]:
    """The sentences of one or more files, in file order."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[Sentence] = []
    for path in paths:
        out.extend(_read_xml(str(path)) if detect_format(path) == "xml" else _grouped(str(path)))
    return out


def _read_xml(path: str) -> list[Sentence]:
    root, lines = _parse_xml(_read_bytes(path), path)
    out = []
    for sent in root.iter("sentence"):
        text = sent.findtext("text") or ""
        source = f"{path}:{sent.get('id') or lines[id(sent)]}"
        if not text.strip():
            raise DataError(f"{source}: sentence has no <text> or it is empty")
        spans = []
        for a in sent.iter("aspectTerm"):
            term, start, end = a.get("term", ""), int(a.get("from", -1)), int(a.get("to", -1))
            if text[start:end] != term:
                found = text.find(term)
                if not term or found < 0:
                    raise DataError(f"{source}: aspectTerm {term!r} is not in the text")
                start, end = found, found + len(term)
            spans.append(GoldSpan(start, end, a.get("polarity", "")))
        out.append(Sentence(text, tuple(dict.fromkeys(spans)), source))
    return out


def _grouped(path: str) -> list[Sentence]:
    groups: dict[str, list[GoldSpan]] = {}
    sources: dict[str, str] = {}
    for ex in read_many(path).examples:
        groups.setdefault(ex.text, []).append(GoldSpan(ex.start, ex.end, ex.label))
        sources.setdefault(ex.text, ex.source)
    return [Sentence(t, tuple(dict.fromkeys(s)), sources[t]) for t, s in groups.items()]


def drop_sentences(
    sentences: Sequence[Sentence], reference: Iterable[Sentence]
) -> tuple[list[Sentence], int]:
    """The sentences whose text does not occur in ``reference`` (a test set), and how many
    were dropped (texts compared lower-cased without spaces or punctuation)."""
    banned = {normalise_text(s.text) for s in reference}
    kept = [s for s in sentences if normalise_text(s.text) not in banned]
    return kept, len(sentences) - len(kept)


@dataclass(frozen=True)
class Split:
    train: list[Sentence]
    dev: list[Sentence]
    empty_heldout: list[Sentence]  # aspect-free sentences kept out of train and dev


def split(
    sentences: Sequence[Sentence], dev_fraction: float, empty_heldout: int, seed: int
) -> Split:
    """Hold out ``empty_heldout`` aspect-free sentences (for the precision number), then a
    ``dev_fraction`` of the rest for model selection; the order is fixed by ``seed``."""
    rng = random.Random(seed)
    order = list(range(len(sentences)))
    rng.shuffle(order)
    empty = [i for i in order if not sentences[i].spans][:empty_heldout]
    banned = set(empty)
    rest = [i for i in order if i not in banned]
    n_dev = round(dev_fraction * len(rest))
    return Split(
        train=[sentences[i] for i in sorted(rest[n_dev:])],
        dev=[sentences[i] for i in sorted(rest[:n_dev])],
        empty_heldout=[sentences[i] for i in sorted(empty)],
    )
