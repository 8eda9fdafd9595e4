"""benchmarks/calibration_compare.py: a result file's cells in the table's order, in %."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.calibration_compare import LAPTOP_T, SHIPPED, columns

ROOT = Path(__file__).resolve().parents[2]


def record(shift: float) -> dict:
    tests = {"rest14": 0.02, "lap14": 0.05 - shift, "twitter": 0.04, "mams": 0.03}
    return {
        "ece_out_of_fold": {
            kind: {"all": [0.01, 0.02], "lap14": [0.07 - s, 0.09 - s]}
            for kind, s in ((SHIPPED, 0.0), (LAPTOP_T, shift))
        },
        "ece_tests": {SHIPPED: dict(tests, lap14=0.05), LAPTOP_T: tests},
    }


def test_columns_are_dev_its_part_each_test_set_and_the_worst() -> None:
    got = columns(record(0.02), LAPTOP_T, "lap14")
    assert [round(c, 6) for c in got] == [1.5, 6.0, 2.0, 3.0, 4.0, 3.0, 4.0]
    assert round(columns(record(0.02), SHIPPED, "lap14")[-1], 6) == 5.0  # Lap14 the worst


def test_the_table_counts_where_the_second_kind_is_lower(tmp_path: Path) -> None:
    files = []
    for i, shift in enumerate((0.02, -0.01)):
        files.append(tmp_path / f"a{i}.json")
        files[-1].write_text(json.dumps(record(shift)))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "calibration_compare.py"), *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mean = next(line for line in out.splitlines() if line.startswith("| **mean**"))
    assert "(1 of 2 lower)" in mean.split("|")[3]  # dev lap14: lower in one, higher in the other
    assert "(0 of 2 lower)" in mean.split("|")[2]  # pooled dev: the same in both
