"""``absa models`` on a registry whose pointer names a version it lacks, and a promote of a
version that is not there: said, and nothing created in the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.cli import main
from absa.model.registry import POINTER
from tests.retrain.test_registry import make_registry


def test_list_says_when_the_pointer_names_a_version_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The listing marked nothing and said nothing, while the service fails to start on
    that registry ("points at nothing")."""
    reg = make_registry(tmp_path, 2)
    (reg.root / POINTER).write_text(json.dumps({"version": "v9", "previous": []}))
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()] == ["v1", "v2"]  # none marked
    assert err == (
        f"absa models: warning: {reg.root / POINTER} names version 'v9', which is not in "
        f"{reg.root / 'versions'}; promote a version to mend it\n"
    )


@pytest.mark.parametrize("versions", [True, False])
def test_promote_of_a_version_that_is_not_there_creates_nothing(
    tmp_path: Path, versions: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lock, taken before the version was looked for, made .lock, .work and versions/
    in the registry (on a read-only one: "Permission denied: .lock" instead of the
    missing version)."""
    root = tmp_path / "registry"
    if versions:
        root = make_registry(tmp_path, 1).root
        (root / ".work").rmdir()  # init's, as a registry copied without it
    else:  # a pointer alone: a registry whose versions are gone
        root.mkdir()
        (root / POINTER).write_text(json.dumps({"version": "v1", "previous": []}))
    before = sorted(p.name for p in root.iterdir())
    assert main(["models", "promote", "v7", "--registry", str(root)]) == 2
    assert capsys.readouterr().err == f"absa models: error: no version 'v7' in {root}\n"
    assert sorted(p.name for p in root.iterdir()) == before


@pytest.mark.parametrize("versions", [True, False])
def test_a_rollback_with_nothing_to_go_back_to_creates_nothing(
    tmp_path: Path, versions: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """As promote of a missing version: the lock, taken before rollback looked for a version
    to go back to, made .lock (and .work, versions/) in the registry, and the message named
    no registry."""
    root = tmp_path / "registry"
    if versions:
        reg = make_registry(tmp_path, 1)
        (root / ".work").rmdir()  # init's, as a registry copied without it
        reg.promote("v1")
    else:  # a pointer alone, whose previous version is gone
        root.mkdir()
        (root / POINTER).write_text(json.dumps({"version": "v1", "previous": ["v0"]}))
    before = sorted(p.name for p in root.iterdir())
    assert main(["models", "rollback", "--registry", str(root)]) == 2
    assert capsys.readouterr().err == (
        f"absa models: error: no previous version to roll back to in {root}\n"
    )
    assert sorted(p.name for p in root.iterdir()) == before


@pytest.mark.parametrize("where", ["after", "before", "models"])
def test_the_registry_may_be_named_before_or_after_the_version(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``absa models promote --registry DIR v2`` ended in "unrecognized arguments: v2" (the
    optional VERSION positional was filled, empty, before the option)."""
    reg = make_registry(tmp_path, 2)
    at = ["--registry", str(reg.root)]

    def argv(action: str, *version: str) -> list[str]:
        if where == "models":
            return ["models", *at, action, *version]
        return ["models", action, *(at if where == "before" else []), *version] + (
            at if where == "after" else []
        )

    assert main(argv("show", "v2")) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "v2"
    for version in ("v2", "v1"):  # make_registry promotes none
        assert main(argv("promote", version)) == 0
        assert capsys.readouterr().out == f"current: {version}\n"
    assert main(argv("rollback")) == 0
    assert capsys.readouterr().out == "current: v2\n"
    assert main(argv("list")) == 0
    assert "\n* v2 " in capsys.readouterr().out


def test_a_pointer_that_is_a_folder_gets_advice_that_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`list` said "promote a version to mend it", and promote then failed with "[Errno 21]
    Is a directory: '.CURRENT.0rqqkuej' -> 'CURRENT'" (a temporary file's name)."""
    reg = make_registry(tmp_path, 2)
    (reg.root / POINTER).mkdir()
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    said = (
        f"{reg.root / POINTER} is a folder, not the pointer file: move it away, then "
        "`absa models promote VERSION` writes the pointer"
    )
    assert capsys.readouterr().err == f"absa models: warning: {said}\n"
    assert main(["models", "promote", "v1", "--registry", str(reg.root)]) == 2
    assert capsys.readouterr().err == f"absa models: error: {said}\n"
    assert (reg.root / POINTER).is_dir()
    (reg.root / POINTER).rmdir()
    assert main(["models", "promote", "v1", "--registry", str(reg.root)]) == 0
    assert reg.current() == "v1"


def test_list_of_an_empty_registry_folder_says_there_is_no_version_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh volume (deploy/README's `run --rm retrain models list` before the first
    retraining) was "not a model registry", exit 2, where the service serves it as an
    empty registry (the fallback model). A folder of other files is still refused."""
    volume = tmp_path / "models"
    (volume / "lost+found").mkdir(parents=True)
    assert main(["models", "list", "--registry", str(volume)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"absa models: {volume} holds no version yet: an empty registry, whose service "
        "serves its fallback model; `absa retrain` adds the first\n"
    )
    (volume / "notes.txt").write_text("the user's\n")
    assert main(["models", "list", "--registry", str(volume)]) == 2
    assert "is not a model registry" in capsys.readouterr().err


def test_with_json_logs_an_empty_registry_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its line (exit 0) was logged at level ERROR: a collector alerting on ERROR fired on
    every fresh volume."""
    from tests.helpers import main_with_json_logs

    argv = ["models", "list", "--registry", str(tmp_path)]
    code, records = main_with_json_logs(argv, monkeypatch, capsys)
    said = [r for r in records if "holds no version yet" in r["message"]]
    assert code == 0 and [r["level"] for r in said] == ["WARNING"], records


@pytest.mark.parametrize("action", ["promote", "rollback"])
def test_a_killed_promotes_temporary_is_removed_by_the_next_change(
    tmp_path: Path, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manual promote killed by SIGKILL between the temporary's write and its rename left
    a hidden ``.CURRENT.*`` file in the registry for good: only a retraining job's
    clean-up removed it. The next change of the pointer (it holds the lock) does."""
    reg = make_registry(tmp_path, 2)
    assert main(["models", "promote", "v1", "--registry", str(reg.root)]) == 0
    assert main(["models", "promote", "v2", "--registry", str(reg.root)]) == 0
    left = reg.root / f".{POINTER}.k1ll3d"
    left.write_text('{"version": "v1", "previous": []}')
    argv = ["models", action] + (["v1"] if action == "promote" else [])
    assert main([*argv, "--registry", str(reg.root)]) == 0
    assert reg.current() == "v1"
    assert not left.exists()
    assert not list(reg.root.glob(f".{POINTER}.*"))


def test_a_temporary_that_cannot_be_removed_does_not_stop_a_promote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Review (diff): the clean-up before a pointer write raised where a ``.CURRENT.*``
    could not be removed (another user's, in a sticky folder; here a folder), and the
    promote failed for it."""
    reg = make_registry(tmp_path, 2)
    stuck = reg.root / f".{POINTER}.stuck"
    stuck.mkdir()
    assert main(["models", "promote", "v2", "--registry", str(reg.root)]) == 0
    assert reg.current() == "v2"
    assert stuck.is_dir() and "could not remove" in caplog.text
