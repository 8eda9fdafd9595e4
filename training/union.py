"""Several training files as one training set: test sentences out, each sentence from one file
(``combine``); a domain's files given more than once per epoch (``oversample``).

Public ABSA sets share sentences: MAMS and SemEval-2014 restaurants, and SemEval-2015
restaurants repeats 578 sentences of SemEval-2014 restaurants train (2 of its test, 9 of
MAMS test), in another tokenisation. ``combine`` decides, file by file in the order given:

Sentences are compared by ``key``: ``bracket_free`` (case, spaces, punctuation and the
spelling of brackets aside: Rest14's test file writes "-LRB-" where MAMS train writes "(");
runs made before it (no ``sentence_key`` in their run.json) compared by ``normalise_text``.

- an example whose sentence occurs in a test set is dropped; it is
  counted once however many test sets hold its sentence (``test_overlap``), and each test
  set's share is listed too (``test_hits``: an example may count under two sets there);
- from the files marked ``fresh``, an example whose sentence already came from an earlier
  file is dropped as well (``seen_before``): the same annotation twice would weigh double,
  and the two spellings of one sentence could land on both sides of the dev split (it
  groups sentences by their exact text). Of those, ``same_example`` repeat an earlier
  example (same normalised sentence, aspect term and label), ``other_label`` give an
  earlier example's aspect another label, the rest annotate an aspect the earlier file
  did not;
- exact duplicates inside one file stay as that file has them (the four original sets
  carry a few, and the shipped model was trained with them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from absa.training.overlap import HasText, bracket_free
from absa.training.records import Example, Labelled
from absa.training.substitute import comes_from

log = logging.getLogger(__name__)

__all__ = ["FileReport", "combine", "combine_more", "oversample"]


@dataclass
class FileReport:
    """What ``combine`` did with one training file's examples."""

    name: str
    read: int
    test_overlap: int = 0  # examples dropped because their sentence is in a test set
    test_hits: dict[str, int] = field(default_factory=dict)  # per test set (may overlap)
    seen_before: int = 0  # fresh files only: sentence already given by an earlier file
    same_example: int = 0  # of seen_before: the same aspect and label as an earlier example
    other_label: int = 0  # of seen_before: the same aspect with another label
    kept: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def combine(
    files: Sequence[tuple[str, Sequence[Example]]],
    tests: Mapping[str, Sequence[HasText]],
    fresh: frozenset[str] = frozenset(),
    key: Callable[[str], str] = bracket_free,
) -> tuple[list[Example], list[FileReport]]:
    """The training examples of ``files`` (name, examples) in order, without test sentences,
    and the files named in ``fresh`` without sentences an earlier file gave; a report per file."""

    def _key(e: Example) -> tuple[str, str]:
        return key(e.text), key(e.term)

    banned = {name: {key(e.text) for e in ex} for name, ex in tests.items()}
    sentences: set[str] = set()  # of the files kept so far
    labels: dict[tuple[str, str], set[str]] = {}  # (sentence, aspect) -> labels so far
    out: list[Example] = []
    reports: list[FileReport] = []
    for name, examples in files:
        rep = FileReport(name, len(examples))
        this_file: set[str] = set()
        kept: list[Example] = []
        for e in examples:
            sentence, aspect = _key(e)
            hits = [t for t, s in banned.items() if sentence in s]
            if hits:
                rep.test_overlap += 1
                for t in hits:
                    rep.test_hits[t] = rep.test_hits.get(t, 0) + 1
                continue
            if name in fresh and sentence in sentences:
                rep.seen_before += 1
                earlier = labels.get((sentence, aspect), set())
                if e.label in earlier:
                    rep.same_example += 1
                elif earlier:
                    rep.other_label += 1
                continue
            this_file.add(sentence)
            kept.append(e)
        for e in kept:
            labels.setdefault(_key(e), set()).add(e.label)
        sentences |= this_file
        rep.kept = len(kept)
        out.extend(kept)
        reports.append(rep)
        log.info(
            "%s: %d read, %d dropped (sentence in a test set: %s), %d dropped (sentence "
            "from an earlier file: %d the same example, %d another label), %d kept",
            name,
            rep.read,
            rep.test_overlap,
            rep.test_hits or "none",
            rep.seen_before,
            rep.same_example,
            rep.other_label,
            rep.kept,
        )
    return out, reports


def combine_more(
    train: Sequence[Example],
    more: Sequence[tuple[str, Sequence[Example]]],
    tests: Mapping[str, Sequence[HasText]],
    key: Callable[[str], str] = bracket_free,
) -> tuple[list[Example], list[FileReport]]:
    """``absa train --train-more``'s union: --train's examples (reported as ``--train``), then
    each of ``more`` (name, examples) without the sentences an earlier file gave, all without
    ``tests``' sentences. The training run and whatever rebuilds its split both call this."""
    return combine([("--train", train), *more], tests, frozenset(n for n, _ in more), key)


def oversample(
    examples: Sequence[Labelled], endings: Sequence[str], times: int
) -> tuple[list[Labelled], int]:
    """``examples`` with those from files whose path ends with one of ``endings`` given
    ``times`` times in all (a domain the union holds little of weighs more in each epoch;
    the copies follow the originals, whose order is kept). Returns them and the copies added."""
    if not endings or times <= 1:
        return list(examples), 0
    chosen = [e for e in examples if comes_from(e.source, endings)]
    return [*examples, *chosen * (times - 1)], len(chosen) * (times - 1)
