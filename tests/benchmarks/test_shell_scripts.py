"""The benchmark shell scripts parse, and every config file they name is there: they run
for hours, so a typo must fail here, not after the first step."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.sh"))
CONFIG = re.compile(r"benchmarks/configs/[\w.-]+\.json")


def test_there_are_scripts() -> None:
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_parses(script: Path) -> None:
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_configs_it_names_are_there(script: Path) -> None:
    named = set(CONFIG.findall(script.read_text()))
    missing = sorted(c for c in named if not (ROOT / c).is_file())
    assert not missing, f"{script.name} names {missing}"
