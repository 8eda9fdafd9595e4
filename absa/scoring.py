"""Score files offline with a ``Predictor`` (no server, no torch): the same aspect resolver,
encoding and result building as the HTTP API.

Input rows: ``{"text", "aspect", "start"?, "end"?}`` as JSONL or CSV (same columns). Output:
one row per input row, in order, repeating the input's fields and adding ``label`` and
``scores`` (CSV: one ``score_<label>`` column each), plus ``error`` for a row that could
not be scored. Rows are read, scored and written in chunks, so memory stays flat on any
file size; bad rows are reported with their line numbers and the run goes on.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from absa.errors import InputError
from absa.model.aspects import occurrences, pinned
from absa.model.predictor import AspectPrediction, Predictor, Prepared

log = logging.getLogger(__name__)


@dataclass
class ScoreStats:
    rows: int = 0
    scored: int = 0
    bad: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)


def _fmt(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ValueError(f"{path}: use a .jsonl or .csv file")


def _rows(f: IO[str], fmt: str, path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """(line, row or None, error) for each input row."""
    if fmt == "jsonl":
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                yield lineno, None, f"invalid JSON: {e.msg}"
                continue
            if not isinstance(row, dict):
                yield lineno, None, "a row must be a JSON object"
                continue
            yield lineno, row, ""
        return
    reader = csv.DictReader(f)
    if reader.fieldnames is None or not {"text", "aspect"} <= set(reader.fieldnames):
        raise ValueError(f"{path}:1: the CSV header must name the columns text and aspect")
    line = reader.line_num
    for row in reader:
        yield line + 1, dict(row), ""
        line = reader.line_num


def prepare_row(predictor: Predictor, row: dict[str, Any]) -> Prepared:
    """The row's first aspect occurrence (or its pinned span), encoded; InputError says
    what is wrong. One output row per input row: a repeated term scores its first occurrence."""
    text, aspect = row.get("text"), row.get("aspect")
    if not isinstance(text, str) or not text.strip():
        raise InputError("text is missing or empty")
    if not isinstance(aspect, str) or not aspect.strip():
        raise InputError("aspect is missing or empty")
    start, end = row.get("start"), row.get("end")
    if start not in (None, "") or end not in (None, ""):
        try:
            s, e = int(start), int(end)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(f"start/end must be integers, got {start!r}/{end!r}") from None
        span = pinned(text, aspect, s, e)
    else:
        span = occurrences(text, aspect)[0]
    return Prepared(text, [span], predictor.encode(text, [span]))


class _Writer:
    def __init__(self, f: IO[str], fmt: str, labels: list[str]) -> None:
        self.f, self.fmt, self.labels = f, fmt, labels
        self.csv: csv.DictWriter | None = None

    def write(self, row: dict[str, Any], pred: AspectPrediction | None, error: str) -> None:
        out = dict(row)
        if self.fmt == "jsonl":
            if pred is not None:
                out["label"] = pred.label
                out["scores"] = pred.scores
            else:
                out["error"] = error
            self.f.write(json.dumps(out, ensure_ascii=False) + "\n")
            return
        if self.csv is None:
            extra = ["label", *(f"score_{k}" for k in self.labels), "error"]
            cols = [c for c in row if c not in extra] + extra
            self.csv = csv.DictWriter(self.f, fieldnames=cols, extrasaction="ignore")
            self.csv.writeheader()
        if pred is not None:
            out["label"] = pred.label
            out.update({f"score_{k}": f"{p:.6f}" for k, p in pred.scores.items()})
        else:
            out["error"] = error
        self.csv.writerow(out)


def score_file(
    predictor: Predictor, src: Path, dst: Path, chunk: int = 512, progress: bool = True
) -> ScoreStats:
    src, dst = Path(src), Path(dst)
    in_fmt, out_fmt = _fmt(src), _fmt(dst)
    stats = ScoreStats()
    tmp = dst.with_name(dst.name + ".part")
    with (
        src.open(encoding="utf-8", newline="") as fin,
        tmp.open("w", encoding="utf-8", newline="") as fout,
        tqdm(total=src.stat().st_size, unit="B", unit_scale=True, disable=not progress) as bar,
    ):
        writer = _Writer(fout, out_fmt, predictor.labels)
        pending: list[tuple[int, dict, Prepared | None, str]] = []  # (line, row, prepared, error)

        def flush() -> None:
            good = [p[2] for p in pending if p[2] is not None]
            preds = iter(predictor.predict_many(good))
            for line, row, prep, err in pending:
                if prep is None:
                    writer.write(row, None, err)
                    stats.bad.append((line, err))
                    log.warning("%s:%d: %s", src, line, err)
                else:
                    writer.write(row, next(preds)[0], "")
                    stats.scored += 1
            pending.clear()
            bar.n = fin.buffer.tell() if hasattr(fin, "buffer") else bar.n
            bar.refresh()

        for line, row, err in _rows(fin, in_fmt, src):
            stats.rows += 1
            prep = None
            if row is not None:
                try:
                    prep = prepare_row(predictor, row)
                except InputError as e:
                    err = str(e)
            pending.append((line, row or {}, prep, err))
            if len(pending) >= chunk:
                flush()
        flush()
    tmp.replace(dst)  # the output appears whole or not at all
    return stats
