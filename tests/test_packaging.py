"""The install: one import name (`absa`) in site-packages with its data, and a serving path
that imports without torch."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Modules that need torch (the training side). Every other module must import without it.
NEEDS_TORCH = {
    "absa.model.network",
    "absa.model.onnx_rnn",  # the recurrent layers as export writes them
    "absa.model.export",
    "absa.model.recalibrate",  # onnx and the temperature fit: the train extra
    "absa.model.tagger",
    "absa.model.tagger_export",
    "absa.model.piece_tagger",
    "absa.model.crf",
}
NEEDS_TORCH_PREFIX = ("absa.training.",)
TORCH_FREE_TRAINING = {  # training modules the service or the CLI reach without torch
    "absa.training.records",
    "absa.training.metrics",
    "absa.training.sentences",
    "absa.training.tagging_run",
}


def package_folder(package: str, dirs: dict[str, str]) -> Path:
    """The source folder of a package, through pyproject.toml's package-dir."""
    top = max((p for p in dirs if package == p or package.startswith(p + ".")), key=len)
    return ROOT / dirs[top] / package[len(top) :].lstrip(".").replace(".", "/")


def all_modules() -> list[str]:
    """Every module of the packages pyproject.toml installs, from their source folders (a
    data folder listed as a package, with no Python file, has none)."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = tool["package-dir"]
    names = []
    for package in tool["packages"]:
        folder = package_folder(package, dirs)
        assert folder.is_dir(), f"{package}: no {folder}"
        if package in tool["package-data"] and not any(folder.glob("*.py")):
            continue  # a data folder
        assert (folder / "__init__.py").is_file(), f"{package}: no {folder}/__init__.py"
        for f in sorted(folder.glob("*.py")):
            if f.stem == "__main__":
                continue
            names.append(package if f.stem == "__init__" else f"{package}.{f.stem}")
    return sorted(names)


def torch_free_modules() -> list[str]:
    return [
        m
        for m in all_modules()
        if m not in NEEDS_TORCH
        and (not m.startswith(NEEDS_TORCH_PREFIX) or m in TORCH_FREE_TRAINING)
    ]


def test_the_package_maps_every_folder() -> None:
    """Every Python folder under the mapped roots is a listed package (else the wheel
    silently leaves it out)."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package, folder in tool["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            assert ".".join((package, *rel)) in tool["packages"], init
    mods = all_modules()
    for expected in ("absa.api", "absa.cli", "absa.model.runtime", "absa.service.app"):
        assert expected in mods
    assert "absa.training.train" in mods


def source_copy(to: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) copied to ``to``: a
    wheel built in the checkout itself reuses its build/ folder, whose stale files (a module
    since removed, or a new data file missing from package-data found there all the same)
    went into the wheel."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        if (ROOT / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    return to


def test_the_wheel_installs_only_absa(tmp_path: Path) -> None:
    """No generic top-level package (model, service, training) lands in site-packages, and
    the shipped model, the web page and the lexicon travel as package data."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: its files are not known apart from build/'s")
    source = source_copy(tmp_path / "source")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    # Every folder that ships (data folders too) is a listed package: setuptools warns of a
    # folder it installs as data but that `packages` lacks ("Package would be ignored").
    assert "would be ignored" not in built.stdout + built.stderr, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("absa-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"absa"}
    for data in (
        "absa/model/artifacts/default/model.onnx",
        "absa/model/artifacts/default/metadata.json",
        "absa/model/artifacts/default/vocab.json",
        "absa/model/artifacts/extractor/model.onnx",
        "absa/model/artifacts/extractor/chars.json",
        "absa/service/static/index.html",
        "absa/training/lexicon.json",
        "absa/cli/__init__.py",
        "absa/py.typed",  # PEP 561: without it, mypy took absa.load()'s answers as Any
    ):
        assert data in names, data
    entry = (
        zipfile.ZipFile(wheel)
        .read(next(n for n in names if n.endswith("entry_points.txt")))
        .decode()
    )
    assert "absa = absa.cli:main" in entry


BLOCK_TORCH = """
import importlib, sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked: this module must not need it")

sys.meta_path.insert(0, NoTorch())
for name in sys.argv[1:]:
    importlib.import_module(name)
from absa import load
clf = load()
(r,) = clf("The food was great", aspects=["food"])
assert r.label == "positive", r
assert "torch" not in sys.modules
print("ok", len(sys.argv) - 1)
"""


def test_torch_free_modules_import_and_predict_without_torch() -> None:
    """What the serve-only install has (CI also runs this in a real venv without torch)."""
    mods = torch_free_modules()
    assert "absa.service.app" in mods and "absa.cli.serve" in mods and "absa.api" in mods
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH, *mods], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == f"ok {len(mods)}"


IMPORTED = """
import importlib, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
from absa import load
load(extractor="shipped")("The food was great")  # what loads on first use: onnxruntime, ...
print(" ".join(sorted({m.split(".")[0] for m in set(sys.modules) - before})))
"""


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, with theirs and those of the extras
    they name (as installed here), by normalised name. absa's own extras are not followed:
    ``absa[serve]`` within an extra is absa's base install."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[tuple[str, str]] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        wanted = [""] + ([] if name == "absa" else sorted(req.extras))
        for want in wanted:
            if (name, want) in seen:
                continue
            seen.add((name, want))
            try:
                todo.extend((Requirement(r), want) for r in requires(req.name) or [])
            except PackageNotFoundError:  # a platform's own (uvloop on Windows): not here
                break
    return {name for name, _ in seen}


def test_the_base_install_has_what_serving_imports() -> None:
    """`pip install absa` gave a traceback on every command, --help too: what serving
    imports was the serve extra's. Every distribution the torch-free modules import is one
    the base dependencies install."""
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = _closure(project["dependencies"])
    extras = project["optional-dependencies"]  # modules of their own: absa.bulk, tracing
    allowed = base | _closure([r for x in ("parquet", "ray", "otel") for r in extras[x]])
    allowed.add("cloudpickle")  # pyarrow imports it where installed (joblib's, here)
    out = subprocess.run(
        [sys.executable, "-c", IMPORTED, *torch_free_modules()],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    of = packages_distributions()
    imported = {canonicalize_name(d) for top in out.stdout.split() for d in of.get(top, [])}
    assert "onnxruntime" in imported and "fastapi" in imported
    assert imported - {"absa"} <= allowed, sorted(imported - {"absa"} - allowed)
    for serving in ("onnxruntime", "fastapi", "uvicorn", "pydantic-settings", "tokenizers"):
        assert serving in base, serving


#: names no distribution of the install may put at the top of site-packages: a package of
#: one of these names shadows, or is shadowed by, the user's own (swagger-ui-py, the base
#: install's Swagger UI assets until 0.1, installed its own tests as `test`)
GENERIC = {
    "test",
    "tests",
    "testing",
    "doc",
    "docs",
    "example",
    "examples",
    "src",
    "lib",
    "utils",
    "util",
    "common",
    "scripts",
    "benchmarks",
    "model",
    "models",
    "service",
    "training",
    "data",
    "app",
    "api",
    "core",
}


def test_the_base_install_puts_no_generic_name_in_site_packages() -> None:
    """The customer's rule (one import name, nothing generic at the top of site-packages)
    holds for what the base install brings along too, not only for absa's own wheel."""
    from importlib.metadata import distribution

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = {}
    for name in _closure(project["dependencies"]):
        files = distribution(name).files or []
        top = {f.parts[0] for f in files if len(f.parts) > 1 and not f.parts[0].startswith("..")}
        top |= {f.stem for f in files if len(f.parts) == 1 and f.suffix == ".py"}
        found.update({t: name for t in top & GENERIC})
    assert not found, found
