"""A transfer set for distillation: aspects the annotators skipped in training sentences.

An aspect term extractor tags every training sentence; a span that overlaps no annotated
aspect of that sentence is a candidate, for a teacher to label (its probabilities become the
student's only target for it). Sentences of any test set are never used: ``banned`` holds
their ``normalise_text`` forms.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from absa.training.readers import normalise_text
from absa.training.records import Example

log = logging.getLogger(__name__)

__all__ = ["Candidate", "candidates", "write_jsonl"]

#: texts -> per text the found spans as (start, end, confidence)
Extract = Callable[[list[str]], list[list[tuple[int, int, float]]]]


@dataclass(frozen=True)
class Candidate:
    """An unannotated aspect term of a training sentence (no label: the teacher gives one)."""

    text: str
    start: int
    end: int
    confidence: float  # the extractor's
    source: str  # the source of the sentence's first annotated example

    @property
    def aspect(self) -> str:
        return self.text[self.start : self.end]


def candidates(
    examples: Sequence[Example],
    extract: Extract,
    banned: set[str],
    min_confidence: float = 0.5,
) -> list[Candidate]:
    """Spans the extractor finds in the examples' sentences that overlap no annotated aspect,
    at ``min_confidence`` or above; sentences whose normalised form is ``banned`` are skipped."""
    by_text: dict[str, list[Example]] = {}
    for e in examples:
        if normalise_text(e.text) not in banned:
            by_text.setdefault(e.text, []).append(e)
    texts = list(by_text)
    out: list[Candidate] = []
    for text, found in zip(texts, extract(texts), strict=True):
        gold = by_text[text]
        for start, end, conf in found:
            if conf < min_confidence or any(start < g.end and g.start < end for g in gold):
                continue
            out.append(Candidate(text, start, end, conf, gold[0].source))
    log.info(
        "%d candidate aspect(s) in %d sentence(s) (%d skipped as test sentences)",
        len(out),
        len(texts),
        len({e.text for e in examples}) - len(texts),
    )
    return out


def write_jsonl(path: Path, found: Sequence[Candidate]) -> None:
    """One JSON object per candidate: text, aspect, start, end, confidence, source."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for c in found:
            f.write(json.dumps({"aspect": c.aspect, **asdict(c)}, ensure_ascii=False) + "\n")
