"""The file-system model registry: immutable versions, the CURRENT pointer, promotion,
rollback, pruning, the lock and version names. Versions here are copies of the shipped
model with their own name, creation time and a marker file (promote and rollback verify
the version they point at)."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from absa.model import artifact as artifacts
from absa.model.registry import POINTER, Registry, RegistryError, atomic_write_json
from absa.model.runtime import DEFAULT_MODEL_DIR
from tests.helpers import one_writer_killed, said_of, staging_in
from tests.retrain.conftest import LockHolder


def artifact(tmp: Path, name: str, created: str) -> Path:
    """A verifiable artifact: the shipped model, renamed, with a marker file of its own."""
    d = tmp / "staging" / name
    d.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(DEFAULT_MODEL_DIR, d)
    (d / "marker.txt").write_text(f"this is {name}")
    meta = artifacts.read_metadata(d)
    meta.update(version=name, created=created)
    artifacts.record_files(meta, d)
    artifacts.write_metadata(d, meta)
    return d


def make_registry(tmp_path: Path, n: int) -> Registry:
    """v1..vn, created in that order, none promoted."""
    reg = Registry(tmp_path / "registry").init()
    for i in range(1, n + 1):
        reg.add(artifact(tmp_path, f"v{i}", f"2024-01-{i:02d}T00:00:00+00:00"), f"v{i}")
    return reg


def pointer_file(reg: Registry) -> dict:
    """CURRENT parsed as JSON (fails on a torn or partial file), with no temp files beside it."""
    leftovers = [p.name for p in reg.root.iterdir() if p.name.startswith(f".{POINTER}.")]
    assert leftovers == []
    return json.loads((reg.root / POINTER).read_text())


# --------------------------------------------------------------------------- add


def test_add_moves_the_artifact_in_and_lists_by_creation_time(tmp_path: Path) -> None:
    reg = Registry(tmp_path / "registry").init()
    late = artifact(tmp_path, "a-late", "2024-05-01T00:00:00+00:00")
    early = artifact(tmp_path, "z-early", "2024-01-01T00:00:00+00:00")
    assert reg.add(late, "a-late") == reg.versions_dir / "a-late"
    reg.add(early, "z-early")
    assert not late.exists() and not early.exists()  # moved, not copied
    assert reg.versions() == ["z-early", "a-late"]  # oldest first, whatever the names
    assert reg.metadata("a-late")["version"] == "a-late"
    assert reg.current() is None
    with pytest.raises(RegistryError, match="no current version"):
        reg.current_path()


def test_versions_are_immutable(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 1)
    before = (reg.path("v1") / "marker.txt").read_bytes()
    again = artifact(tmp_path / "again", "v1", "2024-06-01T00:00:00+00:00")
    with pytest.raises(RegistryError, match="exists already"):
        reg.add(again, "v1")
    assert again.is_dir()  # left where it was
    assert (reg.path("v1") / "marker.txt").read_bytes() == before


def test_add_refuses_what_is_not_an_artifact(tmp_path: Path) -> None:
    reg = Registry(tmp_path / "registry").init()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RegistryError, match="not an artifact directory"):
        reg.add(empty, "v1")
    assert reg.versions() == []


def test_add_refuses_the_installed_model(tmp_path: Path) -> None:
    """add moves its directory: given the packaged default (a review did so, by way of a
    scratch registry), the install lost its model until it was checked out again."""
    reg = Registry(tmp_path / "registry").init()
    with pytest.raises(RegistryError, match="installed with absa"):
        reg.add(DEFAULT_MODEL_DIR, "v1")
    assert (DEFAULT_MODEL_DIR / "metadata.json").is_file() and reg.versions() == []
    copy = shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "copy")
    assert reg.add(copy, "v1").name == "v1"  # as the message says


def test_a_half_moved_directory_is_not_a_version(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 1)
    (reg.versions_dir / "partial").mkdir()  # no metadata.json
    assert reg.versions() == ["v1"]
    with pytest.raises(RegistryError, match="no version 'partial'"):
        reg.path("partial")


@pytest.mark.parametrize(
    "name", ["../x", "..", ".", "a/b", "/abs", ".hidden", "-flag", "", "x" * 101, "v 1", "v1\n"]
)
def test_bad_version_names_are_refused(tmp_path: Path, name: str) -> None:
    reg = make_registry(tmp_path, 1)
    outside = artifact(tmp_path, "outside", "2024-02-01T00:00:00+00:00")
    with pytest.raises(RegistryError, match="bad version name"):
        reg.add(outside, name)
    assert outside.is_dir()
    with pytest.raises(RegistryError, match="no version"):
        reg.path(name)
    with pytest.raises(RegistryError):
        reg.promote(name)
    assert reg.versions() == ["v1"]
    assert sorted(p.name for p in (tmp_path / "registry").iterdir()) == [".work", "versions"]


def test_path_traversal_does_not_reach_outside_versions(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 1)
    # a real artifact directory one level above versions/
    (reg.root / "metadata.json").write_text(json.dumps({"created": "x"}))
    with pytest.raises(RegistryError):
        reg.path("..")
    with pytest.raises(RegistryError):
        reg.promote("../versions/v1")


# --------------------------------------------------------------------------- promote and rollback


def test_promote_and_rollback(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 3)
    with pytest.raises(RegistryError, match="no previous version"):
        reg.rollback()  # nothing promoted yet
    assert not (reg.root / POINTER).exists()

    reg.promote("v1", reason="first")
    assert pointer_file(reg) == {"version": "v1", "previous": []}
    assert reg.current_path() == reg.versions_dir / "v1"
    with pytest.raises(RegistryError, match="no previous version"):
        reg.rollback()  # one champion, nothing before it
    assert pointer_file(reg) == {"version": "v1", "previous": []}

    reg.promote("v2")
    reg.promote("v2")  # promoting the champion again changes nothing
    reg.promote("v3")
    assert pointer_file(reg) == {"version": "v3", "previous": ["v2", "v1"]}
    reg.promote("v1")  # moved to the front, not listed twice
    assert pointer_file(reg) == {"version": "v1", "previous": ["v3", "v2"]}

    assert reg.rollback() == "v3"
    assert pointer_file(reg) == {"version": "v3", "previous": ["v2"]}
    assert reg.rollback() == "v2"
    assert pointer_file(reg) == {"version": "v2", "previous": []}
    with pytest.raises(RegistryError, match="no previous version"):
        reg.rollback()
    assert reg.current() == "v2"

    with pytest.raises(RegistryError, match="no version 'v9'"):
        reg.promote("v9")
    assert reg.current() == "v2"

    rows = [json.loads(ln) for ln in (reg.root / "history.jsonl").read_text().splitlines()]
    assert [(r["action"], r["version"], r["from"]) for r in rows] == [
        ("promote", "v1", None),
        ("promote", "v2", "v1"),
        ("promote", "v3", "v2"),
        ("promote", "v1", "v3"),
        ("rollback", "v3", "v1"),
        ("rollback", "v2", "v3"),
    ]
    assert rows[0]["reason"] == "first"


def test_rollback_skips_previous_versions_that_are_gone(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 3)
    for v in ("v1", "v2", "v3"):
        reg.promote(v)
    reg.versions_dir.joinpath("v2").rename(tmp_path / "v2-gone")
    assert reg.rollback() == "v1"


# --------------------------------------------------------------------------- prune


def test_prune_keeps_the_newest_and_never_current_or_previous(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 6)
    reg.promote("v1")
    reg.promote("v2")  # current v2, previous v1: both oldest, both protected
    assert reg.prune(keep=2) == ["v3", "v4"]
    assert reg.versions() == ["v1", "v2", "v5", "v6"]
    assert not (reg.versions_dir / "v3").exists()
    assert list(reg.work_dir.iterdir()) == []  # the trash went too
    assert reg.prune(keep=2) == []  # idempotent
    assert reg.prune(keep=0) == ["v5", "v6"]
    assert reg.versions() == ["v1", "v2"]
    assert pointer_file(reg) == {"version": "v2", "previous": ["v1"]}
    assert reg.rollback() == "v1"


def test_prune_protects_only_the_first_previous(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 4)
    for v in ("v1", "v2", "v3", "v4"):
        reg.promote(v)  # current v4, previous v3, v2, v1
    assert reg.prune(keep=1) == ["v1", "v2"]
    assert reg.versions() == ["v3", "v4"]
    assert reg.rollback() == "v3"


def test_rejected_challengers_never_push_out_versions_that_served(tmp_path: Path) -> None:
    """Each job prunes after it adds its version: challengers the gate rejected used to count
    toward ``keep`` like the rest, so weeks of rejections deleted the rollback targets. The
    versions that served are kept by their own count; one that never served only while it is
    among the newest ``keep``."""
    reg = make_registry(tmp_path, 8)
    for v in ("v1", "v2", "v3"):
        reg.promote(v)  # served; v4..v8: rejected challengers, never promoted
    assert reg.prune(keep=5) == []
    assert reg.prune(keep=3) == ["v4", "v5"]  # never served, and older than the newest 3
    assert reg.rollback() == "v2" and reg.rollback() == "v1"  # both rollback targets there
    reg.promote("v3")  # {"version": "v3", "previous": ["v1"]}
    assert reg.prune(keep=2) == ["v6"]  # served: the newest two, and the rollback target v1
    assert reg.prune(keep=1) == ["v2", "v7"]
    assert reg.versions() == ["v1", "v3", "v8"]
    assert reg.rollback() == "v1"


def held_artifact(tmp: Path, name: str, created: str, passed: bool = True) -> Path:
    """A version a retraining job held (``promote = false``), its gate passed or not."""
    d = artifact(tmp, name, created)
    meta = artifacts.read_metadata(d)
    meta.update(held=True, gate={"passed": passed})
    artifacts.write_metadata(d, meta)
    return d


def test_prune_keeps_the_newest_held_version_the_shadow_may_be_watching(tmp_path: Path) -> None:
    """A held version is a challenger a service may be shadowing (ABSA_SHADOW_MODEL): the
    next job's ``keep`` pruned it as a rejected one, and the service's next restart ran
    without its shadow. The newest held one is kept until a newer one is held or it serves;
    older held ones, and one whose gate failed, go as rejected ones do."""
    reg = make_registry(tmp_path, 1)
    reg.promote("v1")
    for i, (name, passed) in enumerate([("v2", True), ("v3", True), ("v4", False)], 2):
        reg.add(held_artifact(tmp_path, name, f"2024-01-{i:02d}T00:00:00+00:00", passed), name)
    reg.add(artifact(tmp_path, "v5", "2024-01-05T00:00:00+00:00"), "v5")  # rejected
    assert reg.prune(keep=1) == ["v2", "v4"]
    assert reg.versions() == ["v1", "v3", "v5"]
    assert reg.prune(keep=0) == ["v5"]  # v3 is held whatever keep is
    reg.promote("v3")  # it serves now: kept as the champion, by the served count after it
    reg.add(artifact(tmp_path, "v6", "2024-01-06T00:00:00+00:00"), "v6")
    reg.promote("v6")
    reg.add(held_artifact(tmp_path, "v7", "2024-01-07T00:00:00+00:00"), "v7")
    assert reg.newest_held() == "v7"
    assert reg.prune(keep=0) == ["v1"]
    assert reg.versions() == ["v3", "v6", "v7"]
    reg.add(artifact(tmp_path, "v8", "2024-01-08T00:00:00+00:00"), "v8")
    reg.promote("v8")  # a newer version serves: v7 is no challenger to it
    assert reg.newest_held() is None
    assert reg.prune(keep=0) == ["v3", "v7"]


@pytest.mark.parametrize("gate", [True, "passed", ["passed"], None])
def test_a_held_version_whose_gate_is_no_object_is_none(tmp_path: Path, gate: object) -> None:
    """A hand-edited metadata.json with ``gate`` that is no object stopped every worker of
    ABSA_SHADOW_MODEL=held from starting (AttributeError), and failed the job's prune."""
    reg = make_registry(tmp_path, 1)
    reg.promote("v1")
    d = held_artifact(tmp_path, "v2", "2024-01-02T00:00:00+00:00")
    meta = artifacts.read_metadata(d)
    meta["gate"] = gate
    artifacts.write_metadata(d, meta)
    reg.add(d, "v2")
    assert reg.newest_held() is None
    assert reg.prune(keep=0) == ["v2"]


def test_a_version_rolled_back_from_is_a_version_that_served(tmp_path: Path) -> None:
    """The pointer forgets the version a rollback leaves; the history still counts it."""
    reg = make_registry(tmp_path, 5)
    reg.promote("v1")
    reg.promote("v2")
    reg.rollback()  # v2 leaves the pointer: {"version": "v1", "previous": []}
    assert reg.prune(keep=2) == ["v3"]  # never served, older than the newest 2 (v4, v5)
    assert reg.prune(keep=1) == ["v4"]  # v2 is the newest that served: kept
    assert reg.versions() == ["v1", "v2", "v5"]


def test_prune_leaves_a_version_whose_metadata_cannot_be_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its creation time unknown, it listed first and went first, where the next job's
    repair leaves it for an operator to look at."""
    reg = make_registry(tmp_path, 4)
    reg.promote("v4")
    (reg.versions_dir / "v2" / "metadata.json").write_text('{"created": "2024-')  # torn
    assert reg.versions()[0] == "v2"
    assert reg.prune(keep=1) == ["v1", "v3"]
    assert reg.versions() == ["v2", "v4"]
    assert "v2" in caplog.text and "not pruned" in caplog.text


def test_prune_leaves_a_version_directory_without_metadata_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A directory in versions/ without metadata.json (a copy in progress, or one cut short)
    is no version, and prune passed over it without a word, for good. It may be a copy still
    being made: prune never removes it, and names it for an operator to look at."""
    reg = make_registry(tmp_path, 3)
    reg.promote("v3")
    half = reg.versions_dir / "v0-copy"
    half.mkdir()
    (half / "model.onnx").write_bytes(b"half a graph")
    assert reg.incomplete() == ["v0-copy"]
    with caplog.at_level("WARNING", logger="absa.model.registry"):
        assert reg.prune(keep=1) == ["v1", "v2"]
    assert (half / "model.onnx").read_bytes() == b"half a graph"
    assert reg.versions() == ["v3"] and reg.incomplete() == ["v0-copy"]
    said = [r.getMessage() for r in caplog.records if str(half) in r.getMessage()]
    assert said == [
        f"not pruned, for an operator to look at: {half} has no metadata.json (a copy in "
        "progress, or one cut short): finish it, or remove it"
    ], caplog.text


def test_a_killed_exports_directory_in_versions_is_no_version_and_prune_removes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An export into versions/ killed by SIGKILL after it wrote metadata.json left
    versions/.export-xxxx, which was listed as a version (the oldest: a copied metadata's
    creation time) and which prune then left for good. Only valid version names are
    versions; prune removes the .export-* no process holds, and says so, and leaves a
    running export's alone."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v2")
    meta = {"metadata.json": (reg.versions_dir / "v1" / "metadata.json").read_bytes()}
    writers = staging_in(reg.versions_dir, "v3", meta), staging_in(reg.versions_dir, "v4", meta)
    with one_writer_killed(*writers) as (stale, live):
        assert stale.parent == reg.versions_dir
        assert reg.versions() == ["v1", "v2"] and reg.incomplete() == []
        with caplog.at_level("INFO", logger="absa"):
            assert reg.prune(keep=1) == ["v1"]
        assert not stale.exists() and (live / "metadata.json").is_file()
        assert sorted(p.name for p in reg.versions_dir.iterdir()) == sorted([live.name, "v2"])
        assert said_of(caplog, stale) == [
            f"removed {stale}: the temporary directory of an export that did not end"
        ]


def test_prune_leaves_a_version_copy_in_progress_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator's `cp -r` of a version into versions/ that has copied metadata.json (with
    the old creation time inside) but not yet all of the graph was the oldest version, and
    prune deleted it under the copy. Prune removes only a version whose files all match its
    metadata's checksums; this one it leaves, and names, for an operator to look at."""
    reg = make_registry(tmp_path, 3)
    reg.promote("v3")
    copy = reg.versions_dir / "v1-copy"
    copy.mkdir()
    for f in sorted((reg.versions_dir / "v1").iterdir()):
        data = f.read_bytes()
        (copy / f.name).write_bytes(data[: len(data) // 2] if f.name == "model.onnx" else data)
    assert reg.versions()[:2] == ["v1", "v1-copy"]  # the copied creation time: the oldest
    with caplog.at_level("WARNING", logger="absa.model.registry"):
        assert reg.prune(keep=1) == ["v1", "v2"]
    assert reg.versions() == ["v1-copy", "v3"]
    said = [r.getMessage() for r in caplog.records if "v1-copy" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert said[0].startswith(
        "not pruned, for an operator to look at: version 'v1-copy' does not match its "
        "metadata.json (a copy in progress, or a damaged one): "
    ), said
    assert str(copy / "model.onnx") in said[0]


def test_prune_of_an_empty_registry(tmp_path: Path) -> None:
    # made by init: a path that holds no registry is refused (the test below)
    assert Registry(tmp_path / "empty").init().prune(keep=0) == []


# --------------------------------------------------------------------------- atomic pointer


def test_atomic_write_json_replaces_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "CURRENT"
    for i in range(20):
        atomic_write_json(target, {"version": f"v{i}", "previous": []})
        assert json.loads(target.read_text())["version"] == f"v{i}"
    assert [p.name for p in tmp_path.iterdir()] == ["CURRENT"]


def test_readers_never_see_a_torn_pointer(tmp_path: Path) -> None:
    """A reader polling CURRENT (as the service does) while the champion flips back and forth
    always parses a whole pointer."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    done = threading.Event()

    def flip() -> None:
        for i in range(20):
            reg.promote(("v2", "v1")[i % 2])
        done.set()

    writer = threading.Thread(target=flip)
    writer.start()
    seen = set()
    while not done.is_set():
        seen.add(Registry(reg.root).current())  # raises on a missing or partial file
    writer.join()
    assert seen <= {"v1", "v2"} and len(seen) == 2
    assert pointer_file(reg)["version"] == "v1"


def _dir_sync_fails(
    monkeypatch: pytest.MonkeyPatch, code: str, times: int = 1, only: Path | None = None
) -> list[int]:
    """os.fsync on a directory (``only`` that one) raises ``code`` the next ``times`` times
    (the list counts down)."""
    import errno
    import os

    real, left = os.fsync, [times]

    def fsync(fd: int) -> None:
        at = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if left[0] and at.is_dir() and only in (None, at):
            left[0] -= 1
            raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return left


@pytest.mark.parametrize("code", ["EINVAL", "EIO"])
def test_a_directory_the_file_system_will_not_sync_is_no_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, code: str
) -> None:
    """fsync on a directory comes after the rename, which every reader already sees: raised,
    the write was reported failed with the new file in place (EINVAL: a file system that does
    not sync directories, some FUSE and network mounts). A disk's I/O error there is logged
    as an error, that a power cut may lose the file, and not raised: nothing can undo it."""
    target = tmp_path / POINTER
    atomic_write_json(target, {"version": "v1"})
    _dir_sync_fails(monkeypatch, code, times=10)
    atomic_write_json(target, {"version": "v2"})
    assert json.loads(target.read_text()) == {"version": "v2"}  # renamed, either way
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    if code == "EIO":
        assert len(errors) == 1 and "a power cut may lose it" in errors[0], errors
        assert str(target) in errors[0] and "Input/output error" in errors[0]
    else:
        assert not errors
    assert [p.name for p in tmp_path.iterdir()] == [POINTER]


def test_a_rollback_whose_directory_sync_failed_is_done_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The directory's EIO after CURRENT's rename: ``absa models rollback`` said it failed and
    "may succeed if run again" (exit 75, which the rollback Job retries) with v2 already
    served and no history line; run again, it went back to v1. The rollback is done, said
    and recorded; the same for promote and add, whose version is in place."""
    from absa.cli import main

    reg = make_registry(tmp_path, 3)
    for v in ("v1", "v2", "v3"):
        reg.promote(v)
    at = ["--registry", str(reg.root)]
    _dir_sync_fails(monkeypatch, "EIO")
    assert main(["models", "rollback", *at]) == 0
    assert capsys.readouterr().out == "current: v2\n"
    assert reg.pointer() == {"version": "v2", "previous": ["v1"]}
    history = [json.loads(line) for line in (reg.root / "history.jsonl").read_text().splitlines()]
    assert [(h["action"], h["version"]) for h in history][-1] == ("rollback", "v2")
    _dir_sync_fails(monkeypatch, "EIO")
    assert main(["models", "promote", "v3", *at]) == 0 and reg.current() == "v3"
    staged = shutil.copytree(reg.path("v1"), tmp_path / "v4")
    _dir_sync_fails(monkeypatch, "EIO", only=reg.root / "versions")  # after the rename
    assert reg.add(staged, "v4") == reg.path("v4") and reg.path("v4").is_dir()


def test_atomic_write_json_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "CURRENT"
    atomic_write_json(target, {"version": "v1"})
    with pytest.raises(TypeError):
        atomic_write_json(target, {"version": object()})  # not serialisable half-way through
    assert json.loads(target.read_text()) == {"version": "v1"}
    assert [p.name for p in tmp_path.iterdir()] == ["CURRENT"]


# --------------------------------------------------------------------------- lock


def test_lock_is_exclusive_across_processes(tmp_path: Path, hold_lock: LockHolder) -> None:
    reg = Registry(tmp_path / "registry").init()  # the lock makes no registry
    holder = hold_lock(reg.root)
    try:
        with pytest.raises(RegistryError, match="is being changed by another process"):
            with reg.lock(blocking=False):
                pass
        with reg.job_lock():  # the other lock: a job may start, and waits only to change
            pass
    finally:
        holder.communicate("", timeout=10)  # released on exit
    with reg.lock(blocking=False):
        pass


def test_a_lock_file_another_user_made_still_locks(
    tmp_path: Path, hold_lock: LockHolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .lock created by root (an operator's `absa models` as root) is 0644: a job under
    another uid could not open it for writing (EACCES) and failed, where a read-only handle
    takes flock as well. (The tests run as root, so the refusal is made by a stand-in.)"""
    import builtins

    from absa.model import registry as module

    reg = Registry(tmp_path / "registry").init()
    for name in (".lock", ".job.lock"):
        (reg.root / name).touch()

    def open_as_another_user(file: object, mode: str = "r", *args: object, **kw: object):  # type: ignore[no-untyped-def]
        if str(file).endswith(".lock") and mode != "r":
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, mode, *args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(module, "open", open_as_another_user, raising=False)
    with reg.lock(blocking=False), reg.job_lock():
        pass
    holder = hold_lock(reg.root)
    try:
        with pytest.raises(RegistryError, match="is being changed by another process"):
            with reg.lock(blocking=False):
                pass
    finally:
        holder.communicate("", timeout=10)


def test_a_running_job_holds_only_the_job_lock(tmp_path: Path, hold_lock: LockHolder) -> None:
    reg = Registry(tmp_path / "registry").init()
    holder = hold_lock(reg.root, "job_lock")
    try:
        with pytest.raises(RegistryError, match="has a retraining job running"):
            with reg.job_lock():
                pass
        with reg.lock(blocking=False):  # a rollback does not wait for the job's training
            pass
    finally:
        holder.communicate("", timeout=10)
    with reg.job_lock():
        pass


def test_lock_of_a_killed_holder_is_released(tmp_path: Path, hold_lock: LockHolder) -> None:
    reg = Registry(tmp_path / "registry").init()
    holder = hold_lock(reg.root)
    holder.kill()
    holder.wait(timeout=10)
    with reg.lock(blocking=False):
        with pytest.raises(RegistryError, match="being changed by another process"):
            with Registry(reg.root).lock(blocking=False):  # another open file description
                pass


# --------------------------------------------------------------------------- trust


def corrupt(reg: Registry, version: str) -> None:
    """Change one byte of a file of ``version`` (its sha256 no longer verifies)."""
    path = reg.path(version) / "vocab.json"
    path.write_bytes(path.read_bytes().replace(b'"great"', b'"graet"'))


def test_promote_refuses_a_version_that_fails_verification(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    corrupt(reg, "v2")
    with pytest.raises(RegistryError, match="'v2' fails verification.*vocab.json: sha256"):
        reg.promote("v2")
    assert reg.pointer() == {"version": "v1", "previous": []}
    assert len((reg.root / "history.jsonl").read_text().splitlines()) == 1


def test_rollback_refuses_a_previous_version_that_fails_verification(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    reg.promote("v2")
    corrupt(reg, "v1")
    with pytest.raises(RegistryError, match="'v1' fails verification"):
        reg.rollback()
    assert reg.pointer() == {"version": "v2", "previous": ["v1"]}


@pytest.mark.parametrize(
    ("pointer", "reason"),
    [
        ('{"version": "v1", "prev', "unreadable pointer"),  # truncated
        ("[1, 2]", "not a JSON object"),
        ('"v1"', "not a JSON object"),
        ('{"version": "../../etc"}', "bad version name '../../etc'"),
        ('{"version": 7}', "bad version name 7"),
        ('{"version": "v1", "previous": "v0"}', "'previous' is not a list"),
        ('{"version": "gone"}', "no version 'gone'"),
    ],
)
def test_a_bad_pointer_is_a_registry_error_with_the_reason(
    tmp_path: Path, pointer: str, reason: str
) -> None:
    reg = make_registry(tmp_path, 1)
    (reg.root / POINTER).write_text(pointer)
    with pytest.raises(RegistryError, match=reason):
        reg.current_path()


def test_a_pointer_that_is_not_a_file_is_a_registry_error(tmp_path: Path) -> None:
    """A CURRENT that is a directory (or a link to nothing) read as "no champion yet": a
    retrain trained against the fallback, then failed to promote ("Is a directory"), and the
    service served the fallback without a word."""
    reg = make_registry(tmp_path, 1)
    (reg.root / POINTER).mkdir()
    with pytest.raises(RegistryError, match="is a folder, not the pointer file"):
        reg.current()
    (reg.root / POINTER).rmdir()
    (reg.root / POINTER).symlink_to(tmp_path / "nowhere")
    with pytest.raises(RegistryError, match="the pointer is not a file"):
        reg.current()


def test_open_refuses_what_is_not_a_registry(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="does not exist"):
        Registry.open(tmp_path / "typo")
    assert not (tmp_path / "typo").exists()
    (tmp_path / "plain").mkdir()
    with pytest.raises(RegistryError, match="is not a model registry"):
        Registry.open(tmp_path / "plain")
    reg = make_registry(tmp_path, 1)
    assert Registry.open(reg.root).versions() == ["v1"]
    odd = tmp_path / "odd"  # a pointer, and versions a file: it listed nothing, promoted nothing
    odd.mkdir()
    (odd / "CURRENT").write_text('{"version": "v1", "previous": []}')
    (odd / "versions").write_text("not a directory\n")
    with pytest.raises(RegistryError, match="versions is not a directory"):
        Registry.open(odd)


def _enter(lock: AbstractContextManager) -> None:
    with lock:
        pass


CHANGES: dict[str, Callable[[Registry], object]] = {
    "lock": lambda reg: _enter(reg.lock()),
    "job_lock": lambda reg: _enter(reg.job_lock()),
    "promote": lambda reg: reg.promote("v1"),
    "rollback": lambda reg: reg.rollback(),
    "prune": lambda reg: reg.prune(1),
}


@pytest.mark.parametrize("made", [False, True], ids=["typo", "empty-dir"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_refuses_what_is_not_a_registry_and_creates_nothing(
    tmp_path: Path, change: str, made: bool
) -> None:
    """The lock (taken for every change) created versions/, .work/ and its lock file in the
    directory it was given, a mistyped one included: an empty registry appeared where there
    was none. rollback said "no previous version" and prune removed nothing, naming no path."""
    root = tmp_path / "regsitry"
    if made:
        root.mkdir()
    with pytest.raises(RegistryError, match=re.escape(str(root))):
        CHANGES[change](Registry(root))
    assert list(tmp_path.rglob("*")) == ([root] if made else [])


def test_a_registry_is_still_created_on_purpose(tmp_path: Path) -> None:
    """``init`` (a retraining job's first run) and ``add`` make a registry where there is none;
    the lock then works on it."""
    reg = Registry(tmp_path / "new").init()
    with reg.lock(), reg.job_lock():
        pass
    other = Registry(tmp_path / "other")
    other.add(artifact(tmp_path, "v1", "2024-01-01T00:00:00+00:00"), "v1")
    with other.lock():
        other.promote("v1")
    assert Registry.open(other.root).current() == "v1"


def test_clean_work_removes_pointer_temporaries(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 1)
    (reg.root / f".{POINTER}.abc123").write_text('{"vers')  # a job killed mid-write
    with reg.lock():
        reg.clean_work()
    assert not list(reg.root.glob(f".{POINTER}.*"))


def test_promote_mends_a_pointer_that_cannot_be_read(tmp_path: Path) -> None:
    """A torn CURRENT blocked the operator's only way to mend it; promote now writes a new
    one naming the (verified) version, and the history says so."""
    reg = make_registry(tmp_path, 2)
    (reg.root / POINTER).write_text('{"vers')
    reg.promote("v2", reason="mend")
    assert pointer_file(reg) == {"version": "v2", "previous": []}
    last = json.loads((reg.root / "history.jsonl").read_text().splitlines()[-1])
    assert "replaced an unreadable pointer" in last["reason"]


def test_promote_keeps_only_versions_that_are_there_in_the_history(tmp_path: Path) -> None:
    reg = make_registry(tmp_path, 3)
    (reg.root / POINTER).write_text(json.dumps({"version": "v9", "previous": ["v1", "v8"]}))
    reg.promote("v2")
    assert pointer_file(reg) == {"version": "v2", "previous": ["v1"]}
    reg.promote("v3")
    assert pointer_file(reg) == {"version": "v3", "previous": ["v2", "v1"]}


def test_the_pointer_and_history_are_readable_by_other_users(tmp_path: Path) -> None:
    """CURRENT was written by mkstemp and renamed as it was: mode 0600, so a reader under
    another uid (the Ray bulk job, uid 1000 in deploy/k8s/ray, beside the CronJob's 10001)
    could not read which version serves. The versions themselves are 0644 (artifact.py)."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    reg.promote("v2")
    assert (reg.root / POINTER).stat().st_mode & 0o777 == 0o644
    reg.rollback()
    assert (reg.root / POINTER).stat().st_mode & 0o777 == 0o644
    target = tmp_path / "plain.json"
    atomic_write_json(target, {"a": 1})
    assert target.stat().st_mode & 0o777 == 0o644


def test_a_history_line_torn_by_a_full_disk_does_not_swallow_the_next_one(
    tmp_path: Path,
) -> None:
    """An append cut short leaves half a line with no newline; the next change's line was
    written onto it, both unreadable, so the history forgot that a rolled-back version had
    served and the next job's repair promoted it again."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    history = reg.root / "history.jsonl"
    with open(history, "a") as f:  # v2's promotion, cut short after CURRENT was written
        f.write('{"time": "2024-01-02T00:00:00+00:00", "action": "prom')
    reg.promote("v2")
    reg.rollback()
    lines = history.read_text().splitlines()
    assert [json.loads(ln)["action"] for ln in lines[-2:]] == ["promote", "rollback"]
    assert lines[1].endswith('"action": "prom')  # the torn line stays, on its own
    assert reg.ever_served("v2")


def test_a_history_that_cannot_be_written_does_not_fail_a_change_that_took_effect(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """CURRENT is written first: a history line lost to a full disk used to make the command
    fail (exit 2) although the new version served."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    history = reg.root / "history.jsonl"
    history.unlink()
    history.mkdir()  # open(..., "a") fails as on a full disk
    reg.promote("v2")
    assert pointer_file(reg) == {"version": "v2", "previous": ["v1"]}
    assert reg.rollback() == "v1"
    assert pointer_file(reg) == {"version": "v1", "previous": []}
    assert "promote v2 took effect" in caplog.text and "rollback v1 took effect" in caplog.text


def test_a_lost_pointer_is_no_fresh_registry(tmp_path: Path) -> None:
    """CURRENT deleted, or a volume restored without it, while history.jsonl says v2 serves:
    the registry read as never promoted. A worker that started served the shipped model
    (the fleet split), and the next job gated against it and promoted with no rollback
    target. It is an error naming the file and the last version served, until promote
    writes the pointer again."""
    from absa.settings import Settings

    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    reg.promote("v2")
    (reg.root / POINTER).unlink()
    for read in (reg.current, Settings(registry=reg.root).model_path, reg.rollback):
        with pytest.raises(RegistryError, match="CURRENT is missing") as e:
            read()
        assert "history.jsonl" in str(e.value) and "v2" in str(e.value)
    assert not (reg.root / POINTER).exists()
    reg.promote("v2")
    assert Settings(registry=reg.root).model_path() == reg.path("v2")


def test_a_registry_whose_history_records_no_promotion_is_still_fresh(tmp_path: Path) -> None:
    """Versions added, none ever served (a first job whose challenger its gate refused):
    no pointer yet, the fallback model serves, as before."""
    from absa.settings import Settings

    reg = make_registry(tmp_path, 1)
    assert reg.current() is None and not (reg.root / "history.jsonl").exists()
    assert Settings(registry=reg.root, model_dir=reg.path("v1")).model_path() == reg.path("v1")


def test_a_pruned_versions_name_is_not_given_again(tmp_path: Path) -> None:
    """A name prune had freed was taken by the next version: the old version's report was
    read as the new one's (a killed job's version then never promoted nor reported), or
    overwritten, and the history spoke of two versions under one name."""
    reg = make_registry(tmp_path, 3)
    for v in ("v1", "v2", "v3"):
        reg.promote(v)
    reports = reg.root / "reports"
    reports.mkdir()
    (reports / "v4.json").write_text("{}")  # a job's report whose version was pruned
    assert reg.prune(1) == ["v1"] and not (reg.versions_dir / "v1").exists()
    for name in ("v1", "v4"):
        with pytest.raises(RegistryError, match="was used before"):
            reg.check_new(name)
        staged = shutil.copytree(reg.path("v2"), tmp_path / f"staged-{name}")
        with pytest.raises(RegistryError, match="was used before"):
            reg.add(staged, name)
    assert reg.check_new("v5") == reg.versions_dir / "v5"


def test_a_registry_made_under_a_strict_umask_is_readable_by_all(tmp_path: Path) -> None:
    """A job under umask 077 made versions/, the version's files and history.jsonl private
    (0700 / 0600): a service under another uid could not load the version CURRENT names,
    where CURRENT itself is 0644. Its lock files too (0600): every other uid's promote,
    rollback and retraining job then failed with "Permission denied: '.lock'"."""
    before = os.umask(0o077)
    try:
        art = artifact(tmp_path, "v1", "2024-01-01T00:00:00+00:00")
        for p in [art, *art.rglob("*")]:  # the artifact as the job made it: private
            p.chmod(0o700 if p.is_dir() else 0o600)
        reg = Registry(tmp_path / "registry").init()
        reg.add(art, "v1")
        with reg.job_lock(), reg.lock():
            reg.promote("v1")
    finally:
        os.umask(before)
    assert (reg.root / ".lock").is_file() and (reg.root / ".job.lock").is_file()
    private = [
        str(p.relative_to(reg.root))
        for p in [reg.root, *reg.root.rglob("*")]
        if p.relative_to(reg.root).parts[:1] != (".work",)  # the job's scratch space
        and not p.is_symlink()
        and (p.stat().st_mode & (0o555 if p.is_dir() else 0o444))
        != (0o555 if p.is_dir() else 0o444)
    ]
    assert private == [], private


def _unservable(tmp_path: Path, kind: str) -> Path:
    """A version that passes its checksums but cannot serve: a category model, a graph
    cut short whose sha256 was recorded again, a graph that takes an input the runtime does
    not give, labels the graph does not give, a top-label map the runtime refuses."""
    from absa.model.categories import SHIPPED_CATEGORY_MODEL

    d = tmp_path / "staging" / kind
    d.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SHIPPED_CATEGORY_MODEL if kind == "category" else DEFAULT_MODEL_DIR, d)
    if kind == "cut":
        onnx = d / "model.onnx"
        onnx.write_bytes(onnx.read_bytes()[: onnx.stat().st_size // 2])
    if kind == "input":  # a graph that opens but takes an input a term model's items lack
        shutil.copy(SHIPPED_CATEGORY_MODEL / "model.onnx", d / "model.onnx")
    meta = json.loads((d / "metadata.json").read_text())
    meta["version"] = kind
    if kind == "labels":  # two labels named, three probabilities given
        meta["labels"] = ["negative", "positive"]
    if kind == "top-map":  # knots the runtime refuses: more y than x
        meta["calibration"]["top_map"] = {"x": [0.0, 1.0], "y": [0.0, 0.5, 1.0]}
    artifacts.record_files(meta, d)
    artifacts.record_onnx(meta, d)
    (d / "metadata.json").write_text(json.dumps(meta))
    return d


@pytest.mark.parametrize("kind", ["category", "cut", "input", "labels", "top-map"])
def test_promote_and_rollback_refuse_a_version_the_service_cannot_serve(
    tmp_path: Path, kind: str
) -> None:
    """Both passed (the checksums match): the running workers refused it and kept the old
    model, but the next worker or pod to start failed, and the service went down; a rollback
    then landed on it too."""
    reg = make_registry(tmp_path, 1)
    reg.promote("v1")
    reg.add(_unservable(tmp_path, kind), kind)
    before = pointer_file(reg)
    words = {
        "category": "aspect-category model",
        "cut": "onnxruntime cannot open",
        "input": r"fails its first prediction: the terms model needs \['category_ids'\]",
        "labels": "names 2 labels, the graph gives 3",
        "top-map": "top_map",
    }[kind]
    with pytest.raises(RegistryError, match=words):
        reg.promote(kind)
    assert pointer_file(reg) == before
    # a pointer that names it as the one before (an older registry): rollback refuses it
    atomic_write_json(reg.root / POINTER, {"version": "v1", "previous": [kind]})
    with pytest.raises(RegistryError, match=words):
        reg.rollback()
    assert pointer_file(reg)["version"] == "v1"


def test_a_history_line_that_is_not_utf8_is_passed_over_as_a_torn_one(tmp_path: Path) -> None:
    """One byte that is not UTF-8 (a bad block, another tool's write) made the whole of
    history.jsonl unreadable: every retraining job failed on it, while promote, rollback
    and list went on."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    with (reg.root / "history.jsonl").open("ab") as f:
        f.write(b'{"version": "\xff"}\n')
    reg.promote("v2")
    assert reg.ever_served("v1") and reg.ever_served("v2")


def test_a_rollback_target_that_cannot_serve_names_the_version_before_it(tmp_path: Path) -> None:
    """Refused, and no way past it: the operator had to find the next good version in
    CURRENT by hand."""
    reg = make_registry(tmp_path, 1)
    reg.promote("v1")
    reg.add(_unservable(tmp_path, "cut"), "cut")
    atomic_write_json(reg.root / POINTER, {"version": "v1", "previous": ["cut", "v1"]})
    with pytest.raises(RegistryError, match="`absa models promote v1` points there"):
        reg.rollback()
