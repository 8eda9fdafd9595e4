"""benchmarks/extraction_latency.py: every artifact timed in every round on the same
sentences, its best round kept; a directory that is no extractor artifact is a one-line
error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.extraction_latency import measure

ROOT = Path(__file__).resolve().parents[2]


def test_each_artifact_each_round(extractor_artifact: Path) -> None:
    texts = ["The battery life is great.", "The screen is dim but the keyboard is fine."] * 5
    rows = measure([extractor_artifact, extractor_artifact], texts, threads=1, rounds=2)
    assert [r["artifact"] for r in rows] == [str(extractor_artifact)]  # named twice, timed once
    assert len(rows[0]["p50_per_round"]) == 2
    rows = measure([extractor_artifact], texts, threads=1, rounds=3)
    (row,) = rows
    assert len(row["p50_per_round"]) == 3 and row["sentences"] == len(texts)
    assert row["batch1_p50_ms"] == min(row["p50_per_round"]) > 0
    assert row["batch1_p99_ms"] >= row["batch1_p50_ms"]


def test_not_an_artifact(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "extraction_latency.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert f"not an extractor artifact: {tmp_path}" in proc.stderr
