"""The benchmark shell scripts parse, and every config file they name is there: they run
for hours, so a typo must fail here, not after the first step."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
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
    for name in ("gpu_teachers.sh", "gpu_bundle.sh", "recipe_files.sh"):
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


def _staged(tmp_path: Path, script_dir: str, part: bytes) -> None:
    """``part`` as the one part `stage` put in tmp_path/stage, its checksum where `parts`
    writes it (runs/SCRIPT_DIR/parts/SHA256SUMS)."""
    parts, stage = tmp_path / "runs" / script_dir / "parts", tmp_path / "stage"
    parts.mkdir(parents=True)
    stage.mkdir()
    (stage / "part-00").write_bytes(part)
    sums = subprocess.run(
        ["sha256sum", "part-00"], cwd=stage, capture_output=True, text=True, check=True
    ).stdout
    (parts / "SHA256SUMS").write_text(sums)


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
    tar = subprocess.run(
        ["tar", "-C", str(bundle), "-cf", "-", "."], capture_output=True, check=True
    )
    _staged(tmp_path, "gpu-oof", tar.stdout)
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


STUDENT_CONFIGS = [
    ROOT / f"benchmarks/configs/{net}-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-4t.json"
    for net in ("card-lite", "fast")
]


def _gpu_students(
    tmp_path: Path, *args: str, path: str = "/usr/bin:/bin", **env: str
) -> subprocess.CompletedProcess:
    """gpu_students.sh ARGS from a copy of the scripts (the configs linked), its staging and
    work directories and $OUT under tmp_path; env: more variables (GPU_NETS=...)."""
    (tmp_path / "benchmarks").mkdir(exist_ok=True)
    for name in ("gpu_students.sh", "gpu_bundle.sh", "recipe_files.sh", "teacher_score.py"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    if not (tmp_path / "benchmarks" / "configs").exists():
        (tmp_path / "benchmarks" / "configs").symlink_to(ROOT / "benchmarks" / "configs")
    (tmp_path / "out").mkdir(exist_ok=True)
    return subprocess.run(
        ["/bin/bash", "benchmarks/gpu_students.sh", *args],
        cwd=tmp_path,
        env={
            "PATH": path,
            "GPU_STAGE": str(tmp_path / "stage"),
            "GPU_WORK": str(tmp_path / "work"),
            "GPU_DEVICE": "cpu",
            "OUT": str(tmp_path / "out"),
            **env,
        },
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"GPU_NETS": "card-lite bogus"}, "GPU_NETS"),
        ({"GPU_NETS": "card-gru"}, "GPU_NETS"),  # a network without an -oof-4t config
        ({"GPU_NETS": "../card-lite"}, "GPU_NETS"),
        ({"GPU_SEEDS": "4 x"}, "GPU_SEEDS"),
        ({"GPU_SEEDS": " "}, "GPU_SEEDS"),
        ({"GPU_TAG": "a b"}, "GPU_TAG"),
    ],
)
def test_gpu_students_refuses_a_bad_student_before_starting_anything(
    tmp_path: Path, env: dict[str, str], named: str
) -> None:
    done = _gpu_students(tmp_path, "run", **env)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert not (tmp_path / "work").exists()


def test_gpu_students_knows_its_students(tmp_path: Path) -> None:
    done = _gpu_students(tmp_path, "run", GPU_NETS="fast card-lite", GPU_SEEDS="4 13")
    assert done.returncode == 1 and "GPU_" not in done.stderr  # on to the checksums
    assert "SHA256SUMS" in done.stderr, done.stderr


def _named_inputs(config: Path) -> tuple[set[str], set[str]]:
    """The teachers and the other inputs a -4t config's train section names."""
    train = json.loads(config.read_text())["train"]
    teachers = {train["teacher"], *train["teachers_more"]}
    teachers |= {teacher for _, teacher in train["teacher_folds"]}
    folds = {fold for fold, _ in train["teacher_folds"]}
    return teachers, folds | {train["glove"], train["teacher_states"]}


def test_gpu_students_bundles_every_input_of_the_configs_and_no_teacher(tmp_path: Path) -> None:
    done = _gpu_students(tmp_path, "files")
    assert done.returncode == 0, done.stderr
    files = done.stdout.split()
    for config in STUDENT_CONFIGS:
        assert str(config.relative_to(ROOT)) in files
        teachers, others = _named_inputs(config)
        for path in others:
            assert any(f == path or f.startswith(path + "/") for f in files), path
        for path in teachers:  # a scores directory in the teacher's place
            assert f"{path}/scores.json" in files and f"{path}/run.json" in files, path
    assert all(f in files for f in TRANSFER)
    assert "../shared/data/acos-laptop/train.jsonl" in files  # --train-more
    assert "../shared/data/mams/test.xml" in files  # --exclude
    assert not [f for f in files if f.endswith("weights.safetensors")]


def test_gpu_students_pairs_each_fold_teacher_with_the_fold_it_scores() -> None:
    """`parts` checks a fold teacher's scores against the fold file the configs give it."""
    text = (ROOT / "benchmarks" / "gpu_students.sh").read_text()
    fold_of = re.search(r"^fold_of\(\) \{ (.*) \}$", text, re.M)
    assert fold_of
    for config in STUDENT_CONFIGS:
        for fold, teacher in json.loads(config.read_text())["train"]["teacher_folds"]:
            got = subprocess.run(
                ["bash", "-c", f"{fold_of.group(1)}", "_", teacher],
                capture_output=True,
                text=True,
            )
            # fold_of is called as `fold_of TEACHER`: its body reads $1
            assert got.stdout.strip() == fold, (teacher, got.stdout)


def test_gpu_students_train_as_distill_would(tmp_path: Path, monkeypatch) -> None:
    """Each student's `absa train` is the one benchmarks/distill.py runs for that seed (recipe
    _students.sh's name and options), so distill.py here takes the run as its own."""
    from benchmarks import default_model, distill

    class First(Exception):
        pass

    def first(cmd: list[str], execute: bool = True, record: list[str] | None = None) -> str:
        seen.append(cmd)
        raise First

    seen: list[list[str]] = []
    monkeypatch.setattr(default_model, "run", first)
    monkeypatch.delenv("ABSA_DATA_DIR", raising=False)
    lines = _gpu_students(tmp_path, "commands", GPU_SEEDS="4 6").stdout.splitlines()
    recipe = (ROOT / "benchmarks" / "recipe_students.sh").read_text()
    name = re.search(r"^N=(\S+)$", recipe, re.M)
    assert name and len(lines) == 4
    for (net, seed), line in zip(
        [(n, s) for n in ("card-lite", "fast") for s in (4, 6)], lines, strict=True
    ):
        config = STUDENT_CONFIGS[0 if net == "card-lite" else 1]
        args = argparse.Namespace(
            name=name.group(1).replace("$short", f"{net}-ae2e-r50-4t"),
            config=config.relative_to(ROOT),
            transfer=[Path(t) for t in TRANSFER],
            train_more=True,
            dev_seed=1,
            threads=1,
            machine="",
        )
        with pytest.raises(First):
            distill.student(args, seed, {})
        theirs = [
            a.replace(str(ROOT) + "/", "").replace(str(ROOT.parent) + "/", "../") for a in seen[-1]
        ]
        assert theirs[1:3] == ["-m", "absa.cli"]
        assert line.split() == ["python3", *theirs[1:]]


def _staged_student_bundle(tmp_path: Path, leave_out: str = "", limit: bool = False) -> None:
    """A bundle of empty files, gzipped into one part, staged and checksummed as `parts` and
    `stage` leave it; ``leave_out``: a file it lacks; ``limit``: a dry run's (GPU_LIMIT)."""
    files = _gpu_students(tmp_path, "files").stdout.split()
    bundle = tmp_path / "bundle"
    for f in files:
        if f != leave_out:
            where = bundle / "work" / f if not f.startswith("../") else bundle / f[3:]
            where.parent.mkdir(parents=True, exist_ok=True)
            where.touch()
    (bundle / "code_version").write_text("test\n")
    if limit:
        (bundle / "limit").write_text("40\n")
    tar = subprocess.run(
        ["tar", "-C", str(bundle), "-cf", "-", "."], capture_output=True, check=True
    )
    zipped = subprocess.run(["gzip", "-1"], input=tar.stdout, capture_output=True, check=True)
    _staged(tmp_path, "gpu-students", zipped.stdout)


def _stub_python(tmp_path: Path) -> str:
    """A PATH whose python3 stands in for `absa train`: a finished run (run.json) of STUB_KB
    kilobytes at its --out, at once."""
    bin_ = tmp_path / "stub"
    bin_.mkdir()
    stub = bin_ / "python3"
    stub.write_text(
        "#!/bin/bash\n"
        'out=""; prev=""; for a in "$@"; do [ "$prev" != --out ] || out=$a; prev=$a; done\n'
        'mkdir -p "$out" && echo "{}" > "$out/run.json"\n'
        'head -c $((STUB_KB * 1024)) /dev/zero > "$out/weights.safetensors"\n'
    )
    stub.chmod(0o755)
    return f"{bin_}:/usr/bin:/bin"


def _returned(out: Path) -> list[Path]:
    """What a call's $OUT holds, checked against what a call returns: 8 files, 64 MiB."""
    files = sorted(out.iterdir())
    assert len(files) <= 8 and sum(f.stat().st_size for f in files) <= 64 << 20, files
    return files


def test_gpu_students_run_refuses_a_torn_part(tmp_path: Path) -> None:
    _staged_student_bundle(tmp_path)
    with (tmp_path / "stage" / "part-00").open("ab") as f:
        f.write(b"x")
    done = _gpu_students(tmp_path, "run", path=_stub_python(tmp_path), STUB_KB="1")
    assert done.returncode == 1 and "did NOT match" in done.stderr, done.stderr
    assert not (tmp_path / "work" / "opened").exists()
    assert not list((tmp_path / "work").rglob("run.json"))


def test_gpu_students_run_refuses_a_dry_runs_bundle_on_the_gpu(tmp_path: Path) -> None:
    """A dry run's bundle trains on 80 items: on a lent GPU, a lend spent for nothing."""
    _staged_student_bundle(tmp_path, limit=True)
    done = _gpu_students(tmp_path, "run", path=_stub_python(tmp_path), GPU_DEVICE="cuda")
    assert done.returncode == 1 and "a dry run's bundle" in done.stderr, done.stderr
    assert not (tmp_path / "work" / "work" / "runs" / "distill").exists()


def test_gpu_students_run_refuses_a_bundle_without_a_teacher_before_training(
    tmp_path: Path,
) -> None:
    _staged_student_bundle(tmp_path, leave_out="runs/teacher-union-mpnet-s3/scores.json")
    done = _gpu_students(tmp_path, "run", path=_stub_python(tmp_path), STUB_KB="1")
    assert done.returncode == 1
    assert "not in the bundle: runs/teacher-union-mpnet-s3/scores.json" in done.stderr
    assert not list((tmp_path / "work" / "work" / "status").iterdir())


def test_gpu_students_run_returns_each_run_within_a_calls_limits_and_unpack_keeps_them(
    tmp_path: Path,
) -> None:
    """Four students of 16 MiB (two pieces each): the first call returns three (7 files at
    most beside logs.tar), `fetch` the fourth; `unpack` puts the four runs in place and
    refuses to put one there again."""
    _staged_student_bundle(tmp_path)
    path, out = _stub_python(tmp_path), tmp_path / "out"
    students = {"GPU_SEEDS": "4 5", "STUB_KB": str(16 << 10)}
    done = _gpu_students(tmp_path, "run", path=path, **students)
    assert done.returncode == 0, done.stderr
    first = _returned(out)
    assert len([f for f in first if ".tar." in f.name]) == 6 and out / "logs.tar" in first
    assert done.stdout.count(": sent") == 3 and done.stdout.count(": to fetch") == 1
    kept = tmp_path / "first"
    shutil.move(out, kept)
    done = _gpu_students(tmp_path, "fetch", path=path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(": sent") == 4
    second = _returned(out)
    assert len([f for f in second if ".tar." in f.name]) == 2
    pieces = [str(f) for f in [*sorted(kept.iterdir()), *second] if ".tar." in f.name]
    runs = tmp_path / "unpacked"
    env = {"GPU_UNPACK_TO": str(runs), "GPU_UNPACK_LOGS": str(tmp_path / "logs")}
    done = _gpu_students(tmp_path, "unpack", *pieces, str(kept / "logs.tar"), **env)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in runs.iterdir())
    assert sorted(n.rsplit(".", 1)[1] for n in names) == ["s4", "s4", "s5", "s5"]
    assert all((runs / n / "weights.safetensors").stat().st_size == 16 << 20 for n in names)
    (runs / names[0] / "mark").touch()
    done = _gpu_students(tmp_path, "unpack", *pieces, **env)
    assert done.returncode == 1 and "is there: move it first" in done.stderr
    assert (runs / names[0] / "mark").exists() and not list(runs.glob(".unpack*"))


def test_gpu_students_unpack_refuses_a_run_missing_a_piece(tmp_path: Path) -> None:
    _staged_student_bundle(tmp_path)
    path, out = _stub_python(tmp_path), tmp_path / "out"
    done = _gpu_students(tmp_path, "run", path=path, GPU_NETS="fast", STUB_KB=str(16 << 10))
    assert done.returncode == 0, done.stderr
    alone, runs = tmp_path / "alone", tmp_path / "unpacked"
    alone.mkdir()
    first = shutil.copy(next(out.glob("*.tar.00")), alone)  # its .01 not beside it
    done = _gpu_students(tmp_path, "unpack", str(first), GPU_UNPACK_TO=str(runs))
    assert done.returncode == 1 and "missing or torn" in done.stderr, done.stderr
    assert not list(runs.iterdir())


def _teachers_with_scores(root: Path, lacking: str) -> None:
    """Stand-ins under root/runs for the -4t inputs `parts` reads first: three lines of each
    fold file and transfer set, the main and fold teachers as runs (no network in them, their
    weights a few bytes) with their cache entries in root/cache, the draws as scores
    directories; the teacher ``lacking`` misses one aspect it is asked for."""
    import numpy as np

    from absa.training.readers import read_examples
    from absa.training.records import Example
    from absa.training.teacher_cache import span_key, teacher_key, write_shard
    from absa.training.teacher_scores import export_scores
    from absa.training.transfer_set import read_jsonl

    runs, labels = root / "runs", ["negative", "neutral", "positive"]
    (runs / "oof").mkdir(parents=True)
    for n, fold in enumerate(("a", "b")):
        lines = [
            {"text": f"the food {n} {i} was great", "aspect": "food", "start": 4, "end": 8}
            for i in range(3)
        ]
        (runs / "oof" / f"fold-{fold}.jsonl").write_text(
            "".join(json.dumps({**x, "label": "positive"}) + "\n" for x in lines)
        )
    for n, transfer in enumerate(TRANSFER):
        lines = [{"text": f"the wine {n} {i} was fine", "start": 4, "end": 8} for i in range(3)]
        (root / transfer).write_text("".join(json.dumps(x) + "\n" for x in lines))
    folds = {f: read_examples(runs / "oof" / f"fold-{f}.jsonl").examples for f in "ab"}
    found = read_jsonl([root / t for t in TRANSFER])
    transfer = [Example(c.text, c.start, c.end, "positive") for c in found]
    asked = {
        "teacher-oof-a": folds["b"],
        "teacher-oof-b": folds["a"],
        **{f"teacher-union-mpnet{s}": [*folds["a"], *folds["b"], *transfer] for s in ("", "-s2")},
    }
    asked |= {f"teacher-union-mpnet-s{s}": asked["teacher-union-mpnet"] for s in (3, 4)}
    for name, examples in asked.items():
        run = (root / "draws" if "-s" in name else runs) / name
        run.mkdir(parents=True)
        (run / "run.json").write_text("{}")
        (run / "weights.safetensors").write_text(name)
        spans = [span_key(e) for e in examples][: -1 if name == lacking else None]
        probs = np.full((len(spans), 3), 1 / 3, np.float32)
        write_shard(root / "cache" / teacher_key(run), spans, probs, labels)
        if "-s" in name:  # a draw comes as its scores
            export_scores(run, root / "cache", runs / name)


@pytest.mark.parametrize("lacking", ["teacher-oof-a", "teacher-union-mpnet-s3"])
def test_gpu_students_parts_refuses_a_teacher_whose_scores_lack_an_aspect(
    tmp_path: Path, lacking: str
) -> None:
    """A fold teacher's out-of-fold scores are written while the chain runs: a bundle made
    then would stop on the device, its students asking for aspects its scores lack."""
    _teachers_with_scores(tmp_path, lacking)
    venv = str(Path(sys.executable).parent)
    done = _gpu_students(
        tmp_path,
        "parts",
        path=f"{venv}:/usr/bin:/bin",
        GPU_LIMIT="3",
        ABSA_TEACHER_CACHE=str(tmp_path / "cache"),
    )
    assert done.returncode == 1
    assert f"refused: runs/{lacking}'s scores lack" in done.stderr, done.stderr
    assert "lacks 1 of the" in done.stderr
    assert not (tmp_path / "runs" / "gpu-students" / "parts").exists()
    assert not (tmp_path / "runs" / "gpu-students" / "bundle").exists()


@pytest.mark.parametrize(("precision", "flag"), [("bf16", ["--precision", "bf16"]), ("", [])])
def test_the_fold_teachers_train_in_the_precision_asked_for(
    tmp_path: Path, precision: str, flag: list[str]
) -> None:
    """rebuild_inputs.py --precision bf16 reaches the fold teachers through ABSA_PRECISION;
    without it they train as the recipe does (no --precision)."""
    (tmp_path / "benchmarks").mkdir()
    for name in ("oof_teachers.sh", "recipe_files.sh"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    (tmp_path / "runs" / "oof").mkdir(parents=True)
    (tmp_path / "runs" / "oof" / "fold-b.jsonl").write_text("")
    log = tmp_path / "steps.log"
    bin_ = Path(_tools(tmp_path, "dirname"))
    for name in ("absa", "python"):
        (bin_ / name).write_text(f'#!/bin/bash\necho "{name} $*" >> {log}\n')
        (bin_ / name).chmod(0o755)
    env = {"PATH": str(bin_), "ABSA_PRECISION": precision}
    done = subprocess.run(
        ["/bin/bash", "benchmarks/oof_teachers.sh", "teachers"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    trains = [line.split() for line in log.read_text().splitlines() if line.startswith("absa")]
    outs = sorted(t[t.index("--out") + 1] for t in trains)  # the two run at once
    assert outs == ["runs/teacher-oof-a", "runs/teacher-oof-b"]
    for t in trains:
        assert t[t.index("--quiet") + 1 :] == flag, t


def _students(tmp_path: Path, more: str | None) -> tuple[subprocess.CompletedProcess, list[str]]:
    """recipe_students.sh from a copy of the scripts, with a `python` on its PATH that writes
    down its arguments and fails: the first step's command line, and nothing run."""
    (tmp_path / "benchmarks").mkdir()
    for name in ("recipe_students.sh", "recipe_files.sh"):
        (tmp_path / "benchmarks" / name).write_text((ROOT / "benchmarks" / name).read_text())
    path = _tools(tmp_path, "dirname")
    said = tmp_path / "args"
    stub = tmp_path / "bin" / "python"
    stub.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {said}\nexit 3\n')
    stub.chmod(0o755)
    env = {"PATH": path} | ({"TRANSFER_MORE": more} if more is not None else {})
    done = subprocess.run(
        ["/bin/bash", "benchmarks/recipe_students.sh", "c.json", "card", "4"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    return done, said.read_text().splitlines() if said.exists() else []


def _after(args: list[str], flag: str) -> list[str]:
    i = args.index(flag) + 1
    return args[i : next((j for j in range(i, len(args)) if args[j].startswith("--")), None)]


@pytest.mark.parametrize("more", [None, "", "runs/transfer-subst-rest3.jsonl"])
def test_the_students_take_more_transfer_files_under_a_name_of_their_own(
    tmp_path: Path, more: str | None
) -> None:
    """TRANSFER_MORE's files go after the recipe's, and into the run's name: a run with them
    must not find the results of one without them and skip its training as done."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "transfer-subst-rest3.jsonl").write_text("")
    done, args = _students(tmp_path, more)
    assert done.returncode == 3, done.stderr
    assert args[0] == "benchmarks/distill.py"
    name = _after(args, "--name")[0]
    assert name.startswith("union-card-kd-")
    if more:
        assert _after(args, "--transfer") == [*TRANSFER, more]
        assert name.endswith("-lap4-more-subst-rest3")
    else:
        assert _after(args, "--transfer") == TRANSFER
        assert name.endswith("-lap4-more")


def test_the_students_refuse_a_transfer_file_that_is_not_there(tmp_path: Path) -> None:
    done, args = _students(tmp_path, "runs/transfer-subst-rest3.jsonl")
    assert done.returncode == 2 and args == []
    assert "TRANSFER_MORE: runs/transfer-subst-rest3.jsonl: no such file" in done.stderr
