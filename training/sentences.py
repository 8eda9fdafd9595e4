"""Sentence-level aspect data for extraction: every sentence with the set of its aspect spans.

- XML (SemEval-2014, MAMS): every ``<sentence>``, the ones without aspect terms too (they
  teach the tagger when to find nothing); ``conflict`` terms are aspects like any other.
- JSONL of sentences, ``{"text", "spans": [[start, end, label], ...]}`` (what runs write:
  dev.jsonl, heldout_empty.jsonl): read as they are, aspect-free sentences included.
- 3-line and JSONL/CSV (the SemEval test files, ACOS): the per-aspect records of
  ``absa.training.readers`` grouped by sentence text (a sentence's aspects are the records
  that share its text). These files hold only sentences with at least one labelled aspect.

Every span keeps its polarity label (``conflict`` included) for end-to-end evaluation.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from absa.training.readers import (
    _decode,
    _parse_xml,
    _read_bytes,
    detect_format,
    drop_overlap,
    read_many,
)
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
        fmt = detect_format(path)
        if fmt == "xml":
            out.extend(_read_xml(str(path)))
        elif fmt == "jsonl":
            # read and decoded as the record readers do: a missing file, a byte that is not
            # UTF-8 is a DataError naming the file and line, not a bare codec message
            lines = _decode(_read_bytes(str(path)), str(path)).split("\n")
            if _is_sentence_record(lines[0]):
                out.extend(_read_sentence_jsonl(lines, Path(path)))
            else:
                out.extend(_grouped(str(path)))
        else:
            out.extend(_grouped(str(path)))
    return out


def _is_sentence_record(first: str) -> bool:
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(record, dict) and "spans" in record


def _read_sentence_jsonl(lines: list[str], path: Path) -> list[Sentence]:
    """The sentences of a file's ``lines`` (split on ``\\n`` only, so that a line number is
    the one an editor shows, as ``absa.training.readers`` numbers them)."""
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            spans = tuple(GoldSpan(int(a), int(b), str(lab)) for a, b, lab in rec["spans"])
            text = rec["text"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise DataError(f"{path}:{lineno}: not a sentence record ({e})") from None
        outside = [s for s in spans if not 0 <= s.start < s.end <= len(str(text))]
        if not isinstance(text, str) or outside:
            raise DataError(f"{path}:{lineno}: a span is outside the text")
        out.append(Sentence(text, spans, str(rec.get("source") or f"{path}:{lineno}")))
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
    return drop_overlap(sentences, reference)


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


def keep_aspect_free(
    sentences: Sequence[Sentence], share: float, seed: int
) -> tuple[list[Sentence], int]:
    """Every sentence with an aspect, and a seeded ``share`` of the aspect-free ones (order
    kept); with how many aspect-free sentences were left out. The test files hold only
    sentences with an aspect, while half of the SemEval-2014 laptop training sentences have
    none: a lower share moves the tagger's prior towards finding a term."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the share of aspect-free sentences kept must be in [0, 1], not {share}")
    empty = [i for i, s in enumerate(sentences) if not s.spans]
    random.Random(seed).shuffle(empty)
    dropped = set(empty[round(share * len(empty)) :])
    return [s for i, s in enumerate(sentences) if i not in dropped], len(dropped)
