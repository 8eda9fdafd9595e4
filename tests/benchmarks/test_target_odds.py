"""benchmarks/target_odds.py: how often served students meet each of the eight targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import target_odds
from benchmarks.served import TARGETS


def _student(path: Path, lap14_f1: float, twitter_acc: float) -> Path:
    test = {name: {"accuracy": (ta + 1) / 100, "macro_f1": (tf + 1) / 100}
            for name, (ta, tf) in TARGETS.items()}  # fmt: skip
    test["lap14"]["macro_f1"] = lap14_f1 / 100
    test["twitter"]["accuracy"] = twitter_acc / 100
    path.write_text(json.dumps({"test": test}))
    return path


def test_each_target_is_counted_over_the_students(tmp_path: Path) -> None:
    files = [
        _student(tmp_path / "test-a-s1.json", 72.0, 74.0),  # misses Lap14 macro-F1 only
        _student(tmp_path / "test-a-s2.json", 73.5, 72.0),  # misses Twitter accuracy only
        _student(tmp_path / "test-b-s1.json", 74.0, 73.5),  # meets all eight
    ]
    result = target_odds.odds(files)
    lap = result["targets"]["lap14 macro-F1"]
    assert lap["met"] == 2 and lap["mean"] == pytest.approx(73.1667, abs=1e-3)
    assert lap["gap"] == pytest.approx(73.0 - lap["mean"])
    assert result["targets"]["twitter accuracy"]["met"] == 2
    assert result["targets"]["rest14 accuracy"]["met"] == 3
    assert result["met_of_8"] == {7: 2, 8: 1} and result["all"] == ["test-b-s1"]
    text = target_odds.table(result)
    assert "| lap14 macro-F1 | 73 | 2 | 73.17 ± 1.04 | – |" in text
    assert "All eight: test-b-s1." in text


def test_a_target_the_mean_misses_shows_by_how_much(tmp_path: Path) -> None:
    files = [_student(tmp_path / f"test-c-s{i}.json", 71.0 + i / 10, 74.0) for i in range(3)]
    text = target_odds.table(target_odds.odds(files))
    assert "| lap14 macro-F1 | 73 | 0 | 71.10 ± 0.10 | 1.90 |" in text
    assert "All eight: none." in text
