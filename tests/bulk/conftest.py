"""Rows for bulk scoring: the session artifact's training sentences (the model fits them),
some with a pinned span, and bad rows (an aspect not in the text, an empty aspect, a pin
that is not the term), each with an ``id`` and a gold ``label`` column that must survive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ARTIFACT_EXAMPLES, read_jsonl


def bulk_rows(n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(n):
        ex = ARTIFACT_EXAMPLES[i % len(ARTIFACT_EXAMPLES)]
        row: dict[str, Any] = {"id": i, "text": ex.text, "aspect": ex.term, "label": ex.label}
        row["start"] = row["end"] = None
        if i % 5 == 1:
            row["start"], row["end"] = ex.start, ex.end
        elif i % 7 == 3:
            row["aspect"] = "lobster"
        elif i % 11 == 4:
            row["aspect"] = ""
        elif i % 13 == 6:
            row["start"], row["end"] = 0, len(ex.term)
        rows.append(row)
    return rows


def write_parquet(path: Path, rows: list[dict[str, Any]], row_group: int | None = None) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def single_process(artifact: Path, rows: list[dict[str, Any]], tmp: Path) -> list[dict]:
    """The rows scored by ``absa.scoring.score_file`` (JSONL in, JSONL out): the reference."""
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.scoring import score_file

    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    src = write_jsonl(tmp / "reference.in.jsonl", rows)
    score_file(predictor, src, tmp / "reference.out.jsonl", progress=False)
    return read_jsonl(tmp / "reference.out.jsonl")


def assert_same_predictions(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Row by row (by ``id``): same label, probabilities within 1e-6, same span, occurrence
    and error; ``got`` has flat ``pred_score_<label>`` columns, ``want`` a ``pred_scores``."""
    assert sorted(r["id"] for r in got) == [r["id"] for r in want]
    by_id = {r["id"]: r for r in got}
    worst = 0.0
    for w in want:
        g = by_id[w["id"]]
        assert g["label"] == w["label"]  # the input's gold label column, untouched
        if "error" in w:
            assert g["error"] == w["error"] and g["pred_label"] is None
            continue
        assert g["error"] is None and g["pred_label"] == w["pred_label"]
        for k in ("pred_start", "pred_end", "pred_occurrence", "pred_occurrences"):
            assert g[k] == w[k], k
        worst = max(worst, *(abs(g[f"pred_score_{k}"] - p) for k, p in w["pred_scores"].items()))
    assert worst <= 1e-6


@pytest.fixture(scope="session")
def rows() -> list[dict[str, Any]]:
    return bulk_rows(400)


#: JSONL with one line of each kind that single-process scoring keeps as a row with its
#: error (not JSON, not an object, a byte that is not UTF-8), a blank line it skips, rows
#: whose fields differ, and good rows around them
BAD_JSONL = (
    b'{"id": 1, "text": "the food was great", "aspect": "food"}\n'
    b"not json\n"
    b"\n"
    b"[1, 2]\n"
    b'{"id": 4, "text": "the \xff wine was fine", "aspect": "wine"}\n'
    b'{"id": 5, "text": "the service was slow", "aspect": "service", "note": {"k": 1}}\n'
    b'{"text": "no id and no aspect"}\n'
    b'{"id": 7, "text": "the pasta was cold", "aspect": "pasta"}'  # no newline at the end
)


def outcomes(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(id, text, error, label) of each scored row, sorted: what must match across engines."""
    got = [(r.get("id"), r.get("text"), r.get("error"), r.get("pred_label")) for r in rows]
    return sorted(got, key=repr)


def single_process_file(artifact: Path, src: Path, tmp: Path) -> list[dict[str, Any]]:
    """``src`` (JSONL) scored by ``absa.scoring.score_file`` into JSONL: the reference."""
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.scoring import score_file

    predictor = Predictor(Runtime.load(artifact, device="cpu", threads=1))
    score_file(predictor, src, tmp / "reference.out.jsonl", progress=False)
    return read_jsonl(tmp / "reference.out.jsonl")
