"""benchmarks/teacher_engines.py: a teacher run timed through torch and onnxruntime."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks import teacher_engines
from tests.helpers import synthetic_examples, write_3line


def test_both_engines_are_timed_on_the_same_aspects_and_agree(
    tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    data = write_3line(tmp_path / "d.raw", synthetic_examples(6, seed=7))
    argv = ["x", "--teacher", str(tiny_run), "--data", str(data), "--limit", "10", "--rounds", "2"]
    monkeypatch.setattr(sys, "argv", argv)
    assert teacher_engines.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("round ") for line in lines) == 4
    record = json.loads(lines[-1])
    assert record["aspects"] == 10 and record["threads"] == 1
    assert set(record["aspects_per_s"]) == {"torch", "onnxruntime"}
    assert all(v > 0 for v in record["aspects_per_s"].values())
    assert record["max_abs_diff"] < 1e-5
