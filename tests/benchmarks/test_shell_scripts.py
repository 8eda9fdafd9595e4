"""The benchmark shell scripts parse, and every config file they name is there: they run
for hours, so a typo must fail here, not after the first step."""

from __future__ import annotations

import re
import shutil
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


def _gpu_teachers(
    tmp_path: Path, verb: str, names: str, path: str = "/usr/bin:/bin"
) -> subprocess.CompletedProcess:
    """gpu_teachers.sh VERB from a copy of the scripts alone (no parts: `run` would stop at
    their checksums with status 1), GPU_TEACHERS=names; its staging and work directories
    under tmp_path, not /tmp."""
    (tmp_path / "benchmarks").mkdir(exist_ok=True)
    for name in ("gpu_teachers.sh", "recipe_files.sh"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    return subprocess.run(
        ["/bin/bash", "benchmarks/gpu_teachers.sh", verb],
        cwd=tmp_path,
        env={
            "PATH": path,
            "GPU_TEACHERS": names,
            "GPU_STAGE": str(tmp_path / "stage"),
            "GPU_WORK": str(tmp_path / "work"),
            "GPU_DEVICE": "cpu",
            "OUT": str(tmp_path),
        },
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


def _tools(tmp_path: Path, *tools: str) -> str:
    """A PATH of these tools alone (links in tmp_path/bin): a script past its checks fails at
    the first command it lacks, so nothing it would start runs."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in tools:
        (bin_ / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    return str(bin_)


def _chain(tmp_path: Path, card_net: str | None, *args: str) -> subprocess.CompletedProcess:
    """recipe_chain.sh from a copy of the scripts and configs alone, with no python on its
    PATH: past its config check, its first step fails (status 127), so nothing runs."""
    (tmp_path / "benchmarks").mkdir()
    for name in ("recipe_chain.sh", "recipe_files.sh"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    (tmp_path / "benchmarks" / "configs").symlink_to(ROOT / "benchmarks" / "configs")
    env = {"PATH": _tools(tmp_path, "dirname", "date"), "VIRTUAL_ENV": "none"}
    if card_net is not None:
        env["CARD_NET"] = card_net
    return subprocess.run(
        ["/bin/bash", "benchmarks/recipe_chain.sh", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("card_net", "args"),
    [
        (None, ["t"]),
        (None, ["t", "4t"]),
        (None, ["t", "3f"]),
        (None, ["t", "auto"]),
        ("card-lite-qb-p0", ["t"]),
        ("card-lite-qb-p0", ["t", "3f"]),
    ],
)
def test_the_chain_finds_its_configs(tmp_path: Path, card_net: str | None, args: list[str]) -> None:
    done = _chain(tmp_path, card_net, *args)
    assert done.returncode == 127 and "no configs" not in done.stderr, done.stderr
    assert "0. the inputs" in done.stdout


@pytest.mark.parametrize(
    ("card_net", "args"),
    [
        ("card-bogus", ["t"]),
        (None, ["t", "5t"]),
        ("card-gru", ["t", "3f"]),
        ("card-gru", ["t", "auto"]),  # auto may pick -3f: its configs are checked up front
    ],
)
def test_the_chain_refuses_a_network_or_variant_without_configs(
    tmp_path: Path, card_net: str | None, args: list[str]
) -> None:
    """No such card network, no -5t configs, no card-gru -3f config (nor, so, auto): refused
    before the first step, not hours later."""
    done = _chain(tmp_path, card_net, *args)
    assert done.returncode == 2 and "no configs" in done.stderr, done.stderr
    assert "0. the inputs" not in done.stdout


TRANSFER = [
    "runs/transfer-set.jsonl",
    "runs/transfer-subst1.jsonl",
    "runs/transfer-subst-laptop4.jsonl",
]


@pytest.mark.parametrize(
    ("names", "carries"), [("oof-a oof-b", False), ("oof-a seed-2", True), ("main", True)]
)
def test_gpu_teachers_bundles_the_transfer_sets_for_the_teachers_that_score_them(
    tmp_path: Path, names: str, carries: bool
) -> None:
    """Sessions 50-51 chose them before recipe_files.sh had named them: no bundle carried one,
    and a seed-N teacher would have trained on a lent GPU and then failed to score."""
    done = _gpu_teachers(tmp_path, "files", names)
    assert done.returncode == 0, done.stderr
    files = done.stdout.split()
    assert "../shared/data/semeval14/Laptops_Test_Gold.xml.seg" in files
    assert all((f in files) == carries for f in TRANSFER)


def _staged_bundle(tmp_path: Path, files: list[str]) -> None:
    """A bundle of empty files, split into one part, staged and checksummed as `parts` and
    `stage` leave it."""
    bundle = tmp_path / "bundle"
    for f in files:
        where = (
            bundle / f.removeprefix("../")
            if f.startswith("../")
            else bundle / "transfer" / Path(f).name
        )
        where.parent.mkdir(parents=True, exist_ok=True)
        where.touch()
    (bundle / "code_version").write_text("test\n")
    parts, stage = tmp_path / "runs" / "gpu-oof" / "parts", tmp_path / "stage"
    parts.mkdir(parents=True)
    stage.mkdir()
    subprocess.run(["tar", "-C", str(bundle), "-cf", str(stage / "part-00"), "."], check=True)
    sums = subprocess.run(
        ["sha256sum", "part-00"], cwd=stage, capture_output=True, text=True, check=True
    ).stdout
    (parts / "SHA256SUMS").write_text(sums)
    configs = tmp_path / "benchmarks" / "configs"
    configs.mkdir(parents=True)
    (configs / "teacher-union-mpnet.json").write_text("{}")
    (tmp_path / "benchmarks" / "teacher_score.py").write_text("")


def _no_python(tmp_path: Path) -> str:
    """A PATH of the tools `run` needs up to its first teacher, without python: nothing trains."""
    tools = ("dirname", "rm", "mkdir", "sha256sum", "cat", "tar", "mv", "cp", "tail", "head")
    return _tools(tmp_path, *tools)


def test_gpu_teachers_run_refuses_a_bundle_without_a_transfer_set_before_training(
    tmp_path: Path,
) -> None:
    data = _gpu_teachers(tmp_path, "files", "oof-a").stdout.split()
    _staged_bundle(tmp_path, data)  # the data, no transfer set
    done = _gpu_teachers(tmp_path, "run", "seed-2", _no_python(tmp_path))
    assert done.returncode == 1
    assert "not in the bundle: runs/transfer-set.jsonl" in done.stderr, done.stderr


def test_gpu_teachers_run_takes_a_whole_bundle(tmp_path: Path) -> None:
    _staged_bundle(tmp_path, _gpu_teachers(tmp_path, "files", "seed-2").stdout.split())
    done = _gpu_teachers(tmp_path, "run", "seed-2", _no_python(tmp_path))
    assert "not in the bundle" not in done.stderr  # on to the teachers, which need python
    assert "python3: command not found" in done.stdout + done.stderr, done.stderr


def _chain_steps(tmp_path: Path, variant: str, lead: str = "") -> list[str]:
    """recipe_chain.sh TAG VARIANT run through with stand-ins: a `python` and the two scripts it
    runs with bash only log their arguments (teacher_lead.py prints ``lead``), so the log is
    the chain's steps in order."""
    (tmp_path / "benchmarks").mkdir()
    for name in ("recipe_chain.sh", "recipe_files.sh"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    (tmp_path / "benchmarks" / "configs").symlink_to(ROOT / "benchmarks" / "configs")
    log = tmp_path / "steps.log"
    stand_in = f'#!/bin/bash\necho "$0 $*" >> {log}\n'
    for name in ("oof_teachers.sh", "recipe_students.sh"):
        (tmp_path / "benchmarks" / name).write_text(stand_in)
    bin_ = Path(_tools(tmp_path, "dirname", "date", "bash"))
    python = bin_ / "python"
    python.write_text(stand_in + f'[[ "$1" != *teacher_lead.py ]] || echo "{lead}"\n')
    python.chmod(0o755)
    done = subprocess.run(
        ["/bin/bash", "benchmarks/recipe_chain.sh", "t", variant],
        cwd=tmp_path,
        env={"PATH": str(bin_), "VIRTUAL_ENV": "none", "SEEDS": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return [
        Path(line.split()[0]).name + " " + " ".join(line.split()[1:3])
        for line in log.read_text().splitlines()
    ]


def test_a_named_variant_skips_the_ensemble_check_and_finishes_the_out_of_fold_scores(
    tmp_path: Path,
) -> None:
    """Session 55's chain was cut off with fold a's out-of-fold scores part done: on restart
    rebuild_inputs counted the fold teachers as done and the chain went on without them. The
    ensemble check (40 minutes) only serves `auto`'s choice."""
    steps = _chain_steps(tmp_path, "4t")
    assert not any("ensemble.py" in s for s in steps), steps
    rebuild = max(i for i, s in enumerate(steps) if "rebuild_inputs.py" in s)
    assert steps[rebuild + 1] == "oof_teachers.sh teachers", steps
    assert sum("recipe_students.sh" in s for s in steps) == 2
    assert any("fast-t-4t" in s for s in steps)


@pytest.mark.parametrize(("lead", "tag"), [("", "fast-t"), ("3f", "fast-t-3f")])
def test_auto_runs_the_ensemble_check_and_takes_its_pick(
    tmp_path: Path, lead: str, tag: str
) -> None:
    steps = _chain_steps(tmp_path, "auto", lead)
    check = [i for i, s in enumerate(steps) if "ensemble.py" in s]
    pick = [i for i, s in enumerate(steps) if "teacher_lead.py" in s]
    assert len(check) == 1 and pick and check[0] < pick[0], steps
    assert any(tag + " " in s + " " for s in steps if "recipe_students.sh" in s), steps
