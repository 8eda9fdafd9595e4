"""Sentence-level aspect data for extraction: every sentence with the set of its aspect spans.

- XML (SemEval-2014, MAMS; SemEval-2015/2016's opinion targets, each once, ``NULL`` none):
  every ``<sentence>``, the ones without aspect terms too (they teach the tagger when to
  find nothing); ``conflict`` terms are aspects like any other.
  Each aspect term is checked as ``absa.training.readers`` checks it (a term, a polarity,
  from/to marking the term or the term occurring exactly once in the text).
- JSONL of sentences, ``{"text", "spans": [[start, end, label], ...]}`` (what runs write:
  dev.jsonl, heldout_empty.jsonl): read as they are, aspect-free sentences included; the
  offsets must be integers marking non-blank text, the labels polarities. A JSONL file is
  one of these when its first non-blank line is an object with ``spans``.
- 3-line and JSONL/CSV (the SemEval test files, ACOS): the per-aspect records of
  ``absa.training.readers`` grouped by sentence text (a sentence's aspects are the records
  that share its text). These files hold only sentences with at least one labelled aspect.

Every span keeps its polarity label (``conflict`` included, in every format) for
end-to-end evaluation; labels are normalised as the sentiment readers normalise them
(``Positive`` and ``1`` are ``positive``), anything else is a ``DataError`` naming the file
and the line or sentence.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from absa.errors import InputError
from absa.model.aspects import check_unicode
from absa.model.text import TextError, check_span
from absa.training.overlap import drop_overlap
from absa.training.readers import detect_format, json_line, read_file
from absa.training.readers.files import decode, read_bytes
from absa.training.readers.labels import CONFLICT, parse_label
from absa.training.readers.semeval_xml import opinion_terms, parse_xml, xml_aspect, xml_where
from absa.training.readers.sink import Sink
from absa.training.records import DataError, term_examples

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
            lines = decode(read_bytes(str(path)), str(path)).split("\n")
            first = next((line for line in lines if line.strip()), "")
            if _is_sentence_record(first):
                out.extend(_read_sentence_jsonl(lines, Path(path)))
            else:
                out.extend(_grouped(str(path)))
        else:
            out.extend(_grouped(str(path)))
    return out


def _is_sentence_record(first: str) -> bool:
    """Whether a file's first non-blank line is a sentence record (else: per-aspect records,
    whose reader reports a line that is no JSON at all)."""
    try:
        record = json.loads(first)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(record, dict) and "spans" in record


def _span_label(value: object) -> str:
    """A polarity as the sentiment readers normalise it, ``conflict`` kept."""
    if isinstance(value, str) and value.strip().lower() == CONFLICT:
        return CONFLICT
    return parse_label(value)  # anything else: ValueError


def _gold_span(text: str, item: object, k: int) -> GoldSpan:
    """``spans[k]`` of a record: ``[start, end, label]``, integer offsets marking non-blank
    text, a polarity label. Raises ``ValueError`` saying what is wrong."""
    if not isinstance(item, list) or len(item) != 3:
        raise ValueError(f"spans[{k}] is not [start, end, label]: {item!r}")
    start, end, label = item
    for name, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"spans[{k}]: {name} {value!r} is not an integer offset")
    try:
        check_span(text, start, end)
        return GoldSpan(start, end, _span_label(label))
    except (TextError, ValueError) as e:
        raise ValueError(f"spans[{k}]: {e}") from None


def _read_sentence_jsonl(lines: list[str], path: Path) -> list[Sentence]:
    """The sentences of a file's ``lines`` (split on ``\\n`` only, so that a line number is
    the one an editor shows, as ``absa.training.readers`` numbers them)."""
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json_line(line)
        except ValueError as e:
            raise DataError(f"{where}: {e}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("spans"), list):
            raise DataError(f"{where}: not a sentence record (an object with a 'spans' list)")
        text = rec.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{where}: missing or empty 'text'")
        try:
            check_unicode(text, "the text")
            spans = tuple(_gold_span(text, item, k) for k, item in enumerate(rec["spans"]))
        except (InputError, ValueError) as e:
            raise DataError(f"{where}: {e}") from None
        out.append(Sentence(text, spans, str(rec.get("source") or where)))
    return out


def _read_xml(path: str) -> list[Sentence]:
    """Every sentence, each aspect term checked by ``absa.training.readers``' own XML check
    (a sink that raises at the first bad term and keeps ``conflict``)."""
    root, lines = parse_xml(read_bytes(path), path)
    sink = Sink(path, skip_invalid=False, keep_conflict=True)
    out = []
    for sent in root.iter("sentence"):
        sid = sent.get("id")
        source = f"{path}:{sid or lines[id(sent)]}"
        where = xml_where(path, sid, lines[id(sent)])
        texts = sent.findall("text")
        if len(texts) > 1 or (texts and len(texts[0])):
            why = f"{len(texts)} <text> elements" if len(texts) > 1 else "markup inside <text>"
            raise DataError(f"{where}: {why}: the offsets would not say into which text")
        text = (texts[0].text if texts else None) or ""
        if not text.strip():
            raise DataError(f"{where}: sentence has no <text> or it is empty")
        sink.result.examples.clear()
        for a in list(sent.iter("aspectTerm")) or opinion_terms(sent, lines, sink):
            xml_aspect(a, text, sink, source, xml_where(path, sid, lines[id(a)]))
        spans = [GoldSpan(e.start, e.end, e.label) for e in term_examples(sink.result.examples)]
        out.append(Sentence(text, tuple(dict.fromkeys(spans)), source))
    if sink.relocated:
        log.info(
            "%s: %d aspect term(s) whose from/to did not mark the term, found where it occurs "
            "once in the text",
            path,
            sink.relocated,
        )
    return out


def _grouped(path: str) -> list[Sentence]:
    """The per-aspect records of a 3-line, JSONL or CSV file grouped by sentence text,
    ``conflict`` aspects kept as spans labelled ``conflict``."""
    groups: dict[str, list[GoldSpan]] = {}
    sources: dict[str, str] = {}
    read = read_file(path, None, skip_invalid=False, keep_conflict=True)
    for ex in term_examples(read.examples):
        groups.setdefault(ex.text, []).append(GoldSpan(ex.start, ex.end, ex.label))
        sources.setdefault(ex.text, ex.source)
    return [Sentence(t, tuple(dict.fromkeys(s)), sources[t]) for t, s in groups.items()]


def drop_sentences(
    sentences: Sequence[Sentence], reference: Iterable[Sentence]
) -> tuple[list[Sentence], int]:
    """The sentences whose text does not occur in ``reference`` (a test set), and how many
    were dropped (texts compared lower-cased without spaces, punctuation or Penn Treebank
    bracket tokens: ``readers.bracket_free``)."""
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
