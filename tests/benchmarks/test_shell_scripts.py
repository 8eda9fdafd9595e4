"""The benchmark shell scripts parse, and every config file they name is there: they run
for hours, so a typo must fail here, not after the first step."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import data_dir

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


def test_the_recipe_files_are_the_python_sides() -> None:
    """benchmarks/recipe_files.sh lists the sets of benchmarks/datasets.py, in its order."""
    from benchmarks.datasets import TRAIN_ONLY, test_files, union_files

    data = data_dir()
    lists = subprocess.run(
        [
            "bash",
            "-c",
            'D="$1"; . benchmarks/recipe_files.sh; '
            'for a in TRAIN MORE TESTS TRANSFER; do n="$a[*]"; echo "${!n}"; done',
            "_",
            str(data),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    train, more, tests, transfer = (line.split() for line in lists)
    union = [str(p) for _, p in union_files(new=True)]
    assert train + more == union and len(more) == len(TRAIN_ONLY)
    assert tests == [str(p) for p in test_files().values()]
    assert transfer == [f"runs/transfer-{n}.jsonl" for n in ("set", "subst1", "subst-laptop4")]


def _gpu_teachers(tmp_path: Path, verb: str, names: str) -> subprocess.CompletedProcess:
    """gpu_teachers.sh VERB from a copy of the scripts alone (no parts: `run` would stop at
    their checksums with status 1), GPU_TEACHERS=names."""
    (tmp_path / "benchmarks").mkdir()
    for name in ("gpu_teachers.sh", "recipe_files.sh"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    return subprocess.run(
        ["bash", "benchmarks/gpu_teachers.sh", verb],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "GPU_TEACHERS": names},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("names", ["oof-a bogus", "seed-x", "oof-c", "main oof-a-s"])
def test_gpu_teachers_refuses_a_bad_name_before_starting_anything(
    tmp_path: Path, names: str
) -> None:
    """`run` starts its teachers in the background: a bad name found after the first one had
    started would leave it running on the lent machine."""
    done = _gpu_teachers(tmp_path, "run", names)
    assert done.returncode == 2 and "GPU_TEACHERS" in done.stderr, done.stderr


@pytest.mark.parametrize("names", ["main", "oof-a oof-b-s2", "seed-2 seed-13"])
def test_gpu_teachers_knows_its_names(tmp_path: Path, names: str) -> None:
    done = _gpu_teachers(tmp_path, "run", names)
    assert done.returncode == 1 and "GPU_TEACHERS" not in done.stderr  # on to the checksums
