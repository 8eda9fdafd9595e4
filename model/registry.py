"""A model registry on the file system (no torch: the service reads it too).

    <root>/versions/<version>/   immutable artifact directories (model.onnx + JSON)
    <root>/CURRENT               {"version": ..., "previous": [...]}: the champion
    <root>/history.jsonl         every promotion and rollback, appended
    <root>/.lock                 flock held by whoever changes the registry
    <root>/.work/                scratch space of running jobs (never read as a version)

A version appears by an atomic rename of a finished directory, and the pointer changes by
writing a temporary file, fsync, rename, fsync of the directory: a process killed at any
point leaves either the old state or the new one, never half of either.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from absa.errors import RegistryError

__all__ = ["Registry", "RegistryError", "atomic_write_json"]

log = logging.getLogger(__name__)

POINTER = "CURRENT"
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")  # \Z: "$" allows a final newline


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, obj: object) -> None:
    """Write JSON so that readers see the old file or the new one, never a torn one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Registry:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @staticmethod
    def looks_like(path: Path | str) -> bool:
        """A registry directory (a CURRENT pointer or versions/), not an artifact."""
        path = Path(path)
        return (path / POINTER).is_file() or (path / "versions").is_dir()

    @property
    def versions_dir(self) -> Path:
        return self.root / "versions"

    @property
    def work_dir(self) -> Path:
        return self.root / ".work"

    def init(self) -> Registry:
        self.versions_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(exist_ok=True)
        return self

    @contextmanager
    def lock(self, blocking: bool = True) -> Iterator[None]:
        """Exclusive lock for changes; released by the OS if the holder dies."""
        self.init()
        with open(self.root / ".lock", "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                raise RegistryError(f"{self.root} is locked by another job") from None
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ reading

    def versions(self) -> list[str]:
        """Versions, oldest first (by creation time in their metadata, then name)."""
        if not self.versions_dir.is_dir():
            return []
        out = []
        for d in self.versions_dir.iterdir():
            meta = d / "metadata.json"
            if d.is_dir() and meta.is_file():
                out.append((json.loads(meta.read_text()).get("created", ""), d.name))
        return [name for _, name in sorted(out)]

    def path(self, version: str) -> Path:
        p = self.versions_dir / version
        if not _VERSION_RE.match(version) or not (p / "metadata.json").is_file():
            raise RegistryError(f"no version {version!r} in {self.root}")
        return p

    def metadata(self, version: str) -> dict:
        return json.loads((self.path(version) / "metadata.json").read_text())

    def pointer(self) -> dict:
        p = self.root / POINTER
        if not p.is_file():
            return {"version": None, "previous": []}
        return json.loads(p.read_text())

    def current(self) -> str | None:
        return self.pointer().get("version")

    def current_path(self) -> Path:
        v = self.current()
        if v is None:
            raise RegistryError(f"{self.root} has no current version yet")
        return self.path(v)

    # ------------------------------------------------------------------ changing (hold the lock)

    def new_work_dir(self, prefix: str = "job-") -> Path:
        self.init()
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.work_dir))

    def clean_work(self) -> None:
        """Remove what killed jobs left in .work (call with the lock held)."""
        if self.work_dir.is_dir():
            for d in self.work_dir.iterdir():
                shutil.rmtree(d, ignore_errors=True)

    def add(self, artifact_dir: Path, version: str) -> Path:
        """Move a finished artifact directory in as ``version`` (atomic rename)."""
        if not _VERSION_RE.match(version):
            raise RegistryError(f"bad version name {version!r}")
        if not (Path(artifact_dir) / "metadata.json").is_file():
            raise RegistryError(f"{artifact_dir} is not an artifact directory")
        self.init()
        dest = self.versions_dir / version
        if dest.exists():
            raise RegistryError(f"version {version!r} exists already; versions are immutable")
        os.rename(artifact_dir, dest)
        _fsync_dir(self.versions_dir)
        return dest

    def promote(self, version: str, reason: str = "") -> None:
        self.path(version)  # must exist
        ptr = self.pointer()
        old = ptr.get("version")
        if old == version:
            return
        previous = ([old] if old else []) + [v for v in ptr.get("previous", []) if v != version]
        atomic_write_json(self.root / POINTER, {"version": version, "previous": previous[:20]})
        self._history("promote", version, old, reason)
        log.info("promoted %s (was %s)", version, old)

    def rollback(self) -> str:
        """Point back at the previous champion."""
        ptr = self.pointer()
        previous = [v for v in ptr.get("previous", []) if (self.versions_dir / v).is_dir()]
        if not previous:
            raise RegistryError("no previous version to roll back to")
        target, rest = previous[0], previous[1:]
        atomic_write_json(self.root / POINTER, {"version": target, "previous": rest})
        self._history("rollback", target, ptr.get("version"), "")
        return target

    def prune(self, keep: int) -> list[str]:
        """Delete all but the newest ``keep`` versions; never the current or the previous one."""
        ptr = self.pointer()
        protected = {ptr.get("version"), *ptr.get("previous", [])[:1]}
        versions = self.versions()
        removed = []
        for v in versions[: max(0, len(versions) - keep)]:
            if v in protected:
                continue
            # rename first so a half-deleted version is never listed
            trash = self.new_work_dir("trash-")
            os.rename(self.versions_dir / v, trash / v)
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(v)
        return removed

    def _history(self, action: str, version: str, old: str | None, reason: str) -> None:
        row = {
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "action": action,
            "version": version,
            "from": old,
            "reason": reason,
        }
        with open(self.root / "history.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
