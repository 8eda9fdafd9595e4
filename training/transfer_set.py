"""A transfer set for distillation: aspects the annotators skipped in training sentences.

An aspect term extractor tags every training sentence; a span that overlaps no annotated
aspect of that sentence is a candidate, for a teacher to label (its probabilities become the
student's only target for it: ``absa train --transfer``, ``training/distill.py``). Sentences
of any test set are never used: ``banned`` holds their ``bracket_free`` forms.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from absa.training.overlap import bracket_free
from absa.training.records import DataError, Example

log = logging.getLogger(__name__)

__all__ = ["Candidate", "candidates", "read_jsonl", "write_jsonl"]

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
        if bracket_free(e.text) not in banned:
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


#: decimals of the confidence written: onnxruntime's kernels differ in the last bits between
#: CPUs (AVX2 against AVX-512), and training never reads it, so the file does not carry them
CONFIDENCE_DIGITS = 6


def write_jsonl(path: Path, found: Sequence[Candidate]) -> None:
    """One JSON object per candidate: text, aspect, start, end, confidence (to
    ``CONFIDENCE_DIGITS`` decimals, so the same candidates give the same bytes on any CPU),
    source."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for c in found:
            row = {"aspect": c.aspect, **asdict(c)}
            row["confidence"] = round(c.confidence, CONFIDENCE_DIGITS)
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(paths: Sequence[str | Path]) -> list[Candidate]:
    """Candidates from JSONL files as ``write_jsonl`` writes them (``text``, ``start``,
    ``end``; ``aspect``, if given, must be ``text[start:end]``; ``confidence`` and ``source``
    optional). A bad line is a DataError naming the file and line."""
    out: list[Candidate] = []
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{path}: cannot read the transfer set ({e})") from None
        for n, line in enumerate(lines, 1):
            if line.strip():
                out.append(_candidate(line, f"{path}:{n}"))
    return out


def _candidate(line: str, where: str) -> Candidate:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: invalid JSON ({e.msg})") from None
    if not isinstance(row, dict):
        raise DataError(f"{where}: a line must be a JSON object")
    text, start, end = row.get("text"), row.get("start"), row.get("end")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: 'text' must be a non-empty string")
    if not (type(start) is int and type(end) is int and 0 <= start < end <= len(text)):
        raise DataError(f"{where}: 'start' and 'end' must be offsets of a span in the text")
    aspect = row.get("aspect")
    if aspect is not None and aspect != text[start:end]:
        raise DataError(f"{where}: aspect {aspect!r} is not text[start:end] ({text[start:end]!r})")
    conf = row.get("confidence", 1.0)
    if not isinstance(conf, int | float) or isinstance(conf, bool):
        raise DataError(f"{where}: 'confidence' must be a number")
    return Candidate(text, start, end, float(conf), str(row.get("source") or where))
