"""Answer samples (ABSA_SAMPLE_PATH) into training data: the lines people labelled, from one
or many files (a pod's each), each answer once, and how often the models that answered were
right. A line is the service's sample line with ``label`` added; one without a label (or
with an empty one) was not checked and is left out. The same answer (text and aspect span,
or text and category) labelled in several lines is kept once where the labels agree, and
left out, with where, where they do not. Torch-free: it reads JSON and the label names."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from absa.errors import DataError
from absa.model.jsonio import DuplicateKey, unique_keys
from absa.training.readers.labels import parse_label
from absa.training.records import CategoryExample

#: why a line was kept by the service (its ``kept``): the random share is a fair sample of the
#: traffic, so its labelled lines estimate live accuracy; the others are drawn on purpose
KEPT = ("random", "unsure", "disagreed")
#: how many places a conflict or an invalid line lists at most
SHOWN = 10


@dataclass
class Labelled:
    """One labelled line: the record as read (label normalised), where it was, and its key."""

    record: dict[str, Any]
    where: str
    key: tuple


@dataclass
class Answers:
    """What ``read_answers`` found."""

    kind: str | None = None  # "term" or "category" (None: no labelled line)
    lines: int = 0
    unlabelled: int = 0
    invalid: list[str] = field(default_factory=list)  # "FILE:LINE: why"
    labelled: list[Labelled] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)  # each answer once
    repeats: int = 0  # lines of an answer kept already, with the same label
    conflicts: list[str] = field(default_factory=list)  # answers left out: labels disagree

    def report(self) -> dict[str, Any]:
        """The counts and each model's accuracy on the labelled lines (``accuracy``)."""
        return {
            "kind": self.kind,
            "lines": self.lines,
            "unlabelled": self.unlabelled,
            "invalid": len(self.invalid),
            "labelled": len(self.labelled),
            "repeats": self.repeats,
            "conflicts": len(self.conflicts),
            "written": len(self.kept),
            "labels": dict(sorted(Counter(r["label"] for r in self.kept).items())),
            "accuracy": accuracy(self.labelled),
        }


def _key(record: dict[str, Any], kind: str, where: str) -> tuple:
    """What a labelled line is about, as the training reader reads it (the term's span, or
    the category): a DataError for a line it would refuse (an aspect that is no string,
    offsets that are no span of the term), so the file written trains."""
    from absa.training.category_readers import add_category_record
    from absa.training.readers.sink import Sink
    from absa.training.readers.tables import add_record

    sink = Sink(where.rsplit(":", 1)[0], skip_invalid=False)
    (add_category_record if kind == "category" else add_record)(record, sink, where, where)
    for example in sink.result.examples:
        if isinstance(example, CategoryExample):
            return (example.text, example.category)
        return (example.text, example.start, example.end)
    raise DataError(f"{where}: not a training record")  # none read: refused above


def _parse(line: str, where: str) -> tuple[dict[str, Any] | None, str]:
    """The labelled record of one line (None: unlabelled), and its kind; DataError."""
    try:
        record = json.loads(line, object_pairs_hook=unique_keys)
    except DuplicateKey as e:
        raise DataError(f"{where}: {e}") from None
    except ValueError as e:
        raise DataError(f"{where}: not JSON ({e}); a line cut short by a full disk?") from None
    if not isinstance(record, dict):
        raise DataError(f"{where}: not a JSON object")
    kind = "category" if "category" in record else "term" if "aspect" in record else ""
    if not kind or not isinstance(record.get("text"), str):
        raise DataError(f"{where}: not an answer sample's line (text and aspect, or category)")
    label = record.get("label")
    if label is None or (isinstance(label, str) and not label.strip()):
        return None, kind
    try:
        record["label"] = parse_label(label)
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None
    return record, kind


def read_answers(paths: Sequence[Path], skip_invalid: bool = False) -> Answers:
    """The labelled lines of ``paths``, in order; each answer once (``Answers.kept``). A
    line that is no sample line, or whose label is not one, is a DataError naming its file
    and line, or with ``skip_invalid`` listed in ``invalid`` and passed over. Term and
    category lines together are refused: they train different models."""
    out = Answers()
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            out.lines += 1
            where = f"{path}:{n}"
            try:
                record, kind = _parse(line, where)
            except DataError as e:
                if not skip_invalid:
                    raise
                out.invalid.append(str(e))
                continue
            if record is None:
                out.unlabelled += 1
                continue
            if out.kind is not None and kind != out.kind:
                raise DataError(
                    f"{where}: a {kind} answer among {out.kind} answers: they train different "
                    "models (the term model's answers.jsonl, the category model's "
                    "answers.categories.jsonl): one kind a run"
                )
            try:
                key = _key(record, kind, where)
            except DataError as e:
                if not skip_invalid:
                    raise
                out.invalid.append(str(e))
                continue
            out.kind = kind
            out.labelled.append(Labelled(record, where, key))
    _once(out)
    return out


def _once(out: Answers) -> None:
    """Each answer once: the first line of a key whose lines agree on the label."""
    labels: dict[tuple, set[str]] = {}
    places: dict[tuple, list[str]] = {}
    for item in out.labelled:
        labels.setdefault(item.key, set()).add(item.record["label"])
        places.setdefault(item.key, []).append(f"{item.where} ({item.record['label']})")
    seen: set[tuple] = set()
    for item in out.labelled:
        if len(labels[item.key]) > 1:
            if item.key not in seen:
                out.conflicts.append(", ".join(places[item.key]))
            seen.add(item.key)
        elif item.key in seen:
            out.repeats += 1
        else:
            seen.add(item.key)
            out.kept.append(item.record)


def accuracy(items: Iterable[Labelled]) -> dict[str, Any]:
    """By the model that answered: how often its label was the person's, by why the line was
    kept (``random``: the live accuracy, with a 95 % Wilson interval; ``unsure`` and
    ``disagreed`` are drawn on purpose and say nothing of the traffic), and on ``disagreed``
    lines how often the shadow model was right instead."""
    tally: dict[str, dict[str, list[int]]] = {}
    shadows: dict[str, dict[str, Counter]] = {}
    for item in items:
        r = item.record
        model, kept = str(r.get("model", "unknown")), str(r.get("kept", "unknown"))
        if not isinstance(r.get("predicted"), str):
            continue
        right = r["predicted"] == r["label"]
        counts = tally.setdefault(model, {}).setdefault(kept, [0, 0])
        counts[0] += right
        counts[1] += 1
        shadow = r.get("shadow")
        if kept == "disagreed" and isinstance(shadow, dict):
            theirs = shadow.get("predicted")
            who = "served" if right else "shadow" if theirs == r["label"] else "neither"
            name = str(shadow.get("model", "unknown"))
            shadows.setdefault(model, {}).setdefault(name, Counter())[who] += 1
    out: dict[str, Any] = {}
    for model, by_kept in sorted(tally.items()):
        out[model] = {}
        for kept, (right, n) in sorted(by_kept.items()):
            entry: dict[str, Any] = {"n": n, "accuracy": round(right / n, 4)}
            if kept == "random":
                lo, hi = wilson(right, n)
                entry["interval_95"] = [round(lo, 4), round(hi, 4)]
            out[model][kept] = entry
        if model in shadows:
            out[model]["shadow_right"] = {
                name: {w: c[w] for w in ("served", "shadow", "neither")}
                for name, c in sorted(shadows[model].items())
            }
    return out


def wilson(right: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % Wilson score interval of ``right`` of ``n``."""
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def format_report(rep: dict[str, Any]) -> str:
    """The report as a person reads it."""
    lines = [
        f"{rep['lines']} line(s): {rep['labelled']} labelled, {rep['unlabelled']} not yet, "
        f"{rep['invalid']} invalid (skipped); {rep['written']} answer(s) written, "
        f"{rep['repeats']} repeat(s) left out, {rep['conflicts']} with labels that disagree "
        f"left out; labels {rep['labels']}"
    ]
    for model, by_kept in rep["accuracy"].items():
        for kept in KEPT:
            if kept in by_kept:
                e = by_kept[kept]
                ci = e.get("interval_95")
                note = (
                    f" (95 % {100 * ci[0]:.1f}-{100 * ci[1]:.1f}: the live accuracy)"
                    if ci
                    else " (drawn on purpose: not the traffic's)"
                )
                lines.append(
                    f"{model}: {kept} lines: {100 * e['accuracy']:.1f} % right of {e['n']}{note}"
                )
        for name, c in by_kept.get("shadow_right", {}).items():
            lines.append(
                f"{model} against the shadow {name}: served right {c['served']}, shadow right "
                f"{c['shadow']}, neither {c['neither']}"
            )
    return "\n".join(lines)
