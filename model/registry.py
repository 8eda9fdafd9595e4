"""A model registry on the file system (no torch: the service reads it too).

    <root>/versions/<version>/   immutable artifact directories (model.onnx + JSON)
    <root>/CURRENT               {"version": ..., "previous": [...]}: the champion
    <root>/history.jsonl         every promotion and rollback, appended
    <root>/.lock                 flock held by whoever changes the registry, briefly
    <root>/.job.lock             flock held by a retraining job from start to end
    <root>/.work/                scratch space of running jobs (never read as a version);
                                 .work/resumable: a killed job's training checkpoint

A version appears by an atomic rename of a finished directory, and the pointer changes by
writing a temporary file, fsync, rename, fsync of the directory: a process killed at any
point leaves either the old state or the new one, never half of either (at most a hidden
``.CURRENT.*`` temporary file, which the next promote, rollback or ``clean_work`` removes).

Two locks: one retraining job at a time holds ``job_lock`` for its whole run (hours of
training), and anyone who changes the registry (a job adding or promoting its version, a
manual promote or rollback) holds ``lock`` only for that change, so an operator's rollback
never waits for a training to end. A job promotes only if the champion it was gated against
is still the current one.

A version is verified (``absa.model.artifact.load``: every file's sha256, paths confined,
parity) before ``promote`` or ``rollback`` points at it. A pointer that is not a JSON
object naming a valid version is a RegistryError, never a crash. ``Registry.open`` is for
commands that need an existing registry (a mistyped path is an error, not a new registry);
``init`` (a retraining job) and ``add`` create one on purpose. Nothing else does: the locks,
``promote``, ``rollback`` and ``prune`` refuse a directory that is not a registry, naming
it, and create nothing there.
"""

from __future__ import annotations

import contextlib
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
from typing import IO, TYPE_CHECKING

from absa.errors import RegistryError, first_few
from absa.model.atomic import atomic_write_json, atomic_write_text, fsync_dir, synced_after_rename

if TYPE_CHECKING:
    from absa.model.artifact import Artifact

__all__ = ["Registry", "RegistryError", "atomic_write_json", "atomic_write_text"]

log = logging.getLogger(__name__)

POINTER = "CURRENT"
#: a folder where the pointer goes: someone's files, never removed here
_FOLDER = (
    "{} is a folder, not the pointer file: move it away, then `absa models promote VERSION` "
    "writes the pointer"
)
RESUMABLE = "resumable"  # .work/resumable: a killed retraining's checkpoint, kept for the next
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")  # \Z: "$" allows a final newline


def _fsync_tree(path: Path) -> None:
    """Every file below ``path``, and every directory, on disk (before a rename makes them
    visible: a power cut must not leave a pointer at files that never reached the disk)."""
    for d, _, files in os.walk(path):
        for name in files:
            fd = os.open(Path(d) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(d))


#: what is said of a symbolic link in versions/ (``Registry.links``)
LINK_SAID = (
    "a symbolic link, not a version: a version is a folder the registry holds, unchanged while "
    "kept; copy the folder in its place"
)


def _folder(path: Path) -> bool:
    """A directory of its own, not a symbolic link to one (``Registry.links``)."""
    return path.is_dir() and not path.is_symlink()


def held(metadata: dict) -> bool:
    """Whether a version's metadata says its retraining job held it (``promote = false``,
    its gate passed): a challenger to watch (ABSA_SHADOW_MODEL), never promoted by a job."""
    gate = metadata.get("gate")
    return metadata.get("held") is True and isinstance(gate, dict) and gate.get("passed") is True


def volume_entry(name: str) -> bool:
    """What an empty folder may hold and still be made a registry, or served as an empty one:
    a mounted volume's own (ext4's lost+found, hidden entries such as a NAS's .snapshot)."""
    return name.startswith(".") or name == "lost+found"


def readable(path: Path, tree: bool = True) -> None:
    """``path`` and, for a folder, everything under it readable by all (folders 0755-ish,
    files 0644-ish; the owner's bits kept): a job run under a strict umask (077) made a
    version that a service under another uid could not load, where CURRENT and the reports
    are 0644 (``atomic_write_text``)."""
    paths = [path, *path.rglob("*")] if tree and path.is_dir() else [path]
    for p in paths:
        if p.is_symlink():
            continue
        mode = p.stat().st_mode & 0o7777
        want = mode | (0o755 if p.is_dir() else 0o644)
        if want != mode:
            os.chmod(p, want)


def readable_by_all(f: IO) -> None:
    """A registry file made now under a strict umask (077) opened to every reader (0644,
    the owner's bits kept), as ``readable`` does for a version's files: the service, the
    job and the operator may run as other uids."""
    mode = os.fstat(f.fileno()).st_mode & 0o7777
    if mode | 0o644 != mode:
        with contextlib.suppress(PermissionError):  # another uid's file: its owner's to open
            os.fchmod(f.fileno(), mode | 0o644)


class Registry:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @classmethod
    def open(cls, root: Path | str) -> Registry:
        """An existing registry; RegistryError if ``root`` is not one (nothing is created)."""
        return cls(root).require()

    def require(self) -> Registry:
        """This registry, if ``root`` is one; RegistryError naming it if not (a mistyped
        path), and nothing created. Every change checks this first."""
        root = self.root
        if not self.looks_like(root):
            what = "does not exist" if not root.exists() else "is not a model registry"
            raise RegistryError(f"{root} {what} (no {POINTER} and no versions/)")
        if self.versions_dir.exists() and not self.versions_dir.is_dir():  # nothing would list
            raise RegistryError(
                f"{self.versions_dir} is not a directory: {root} is not a model registry"
            )
        return self

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
        """This registry, made where there is none: in a new folder or an empty one (a
        mounted volume's lost+found aside). RegistryError naming a folder that holds other
        files (a home directory, a mistyped path), where nothing is created."""
        root = self.root
        if root.exists() and not self.looks_like(root):
            if not root.is_dir():
                raise RegistryError(f"{root} is not a directory: it cannot be a model registry")
            other = sorted(p.name for p in root.iterdir() if not volume_entry(p.name))
            if other:
                raise RegistryError(
                    f"{root} is not a model registry and holds other files ({first_few(other)}): "
                    "a registry is made only in a new or empty folder"
                )
        made = not root.exists()
        self.versions_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(exist_ok=True)
        for folder in ([root] if made else []) + [self.versions_dir]:
            with contextlib.suppress(PermissionError):  # another user's: theirs to set
                readable(folder, tree=False)
        return self

    @contextmanager
    def lock(self, blocking: bool = True) -> Iterator[None]:
        """Exclusive lock for a change (add, promote, rollback, prune, repair), held only
        while it is made; released by the OS if the holder dies. ``blocking``: held by
        another process, it is waited for, said once in the log (INFO, naming the lock file).
        Only on a registry (``init`` makes one): RegistryError, and nothing created, on a
        directory that is not one."""
        with self._flock(".lock", blocking, "is being changed by another process"):
            yield

    @contextmanager
    def job_lock(self) -> Iterator[None]:
        """One retraining job at a time: RegistryError at once if another one runs. Held for
        the whole job; the job takes ``lock`` besides for each change it makes."""
        with self._flock(".job.lock", False, "has a retraining job running"):
            yield

    @contextmanager
    def _flock(self, name: str, blocking: bool, busy: str) -> Iterator[None]:
        # not init(): a lock taken on a mistyped path made an empty registry there
        self.require()
        path = self.root / name
        try:
            f = open(path, "a+")  # noqa: SIM115 - closed below, as the with block would
            readable_by_all(f)  # every uid that changes the registry takes this lock
        except PermissionError:
            if not path.is_file():
                raise
            # a lock file another user made (root's 0644): flock takes a read-only handle
            try:
                f = open(path)  # noqa: SIM115
            except PermissionError:
                raise RegistryError(
                    f"{path}: another user made it private (a strict umask): `chmod 644` it"
                ) from None
        with f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not blocking:
                    raise RegistryError(f"{self.root} {busy}") from None
                # said once (only ``lock`` waits): a promote that waited without a word
                # was taken for hung
                log.info(
                    "waiting for the lock held at %s (another process is changing the registry)",
                    path,
                )
                fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ reading

    def versions(self) -> list[str]:
        """Versions, oldest first (by creation time in their metadata, then name). Only
        names a version can have: a hidden one is never a version, even with a
        metadata.json (an export killed in versions/ leaves ``.export-*`` with one)."""
        if not self.versions_dir.is_dir():
            return []
        out = []
        for d in self.versions_dir.iterdir():
            meta = d / "metadata.json"
            if _VERSION_RE.match(d.name) and _folder(d) and meta.is_file():
                try:
                    created = str(json.loads(meta.read_text()).get("created", ""))
                except (OSError, ValueError, AttributeError):
                    created = ""  # listed; opening it will say what is wrong
                out.append((created, d.name))
        return [name for _, name in sorted(out)]

    def incomplete(self) -> list[str]:
        """The directories in versions/ named as a version but without metadata.json (a copy
        in progress, or one cut short), by name: no version (never listed as one, served,
        or pruned: it may still be being made), for an operator to finish or remove."""
        if not self.versions_dir.is_dir():
            return []
        return sorted(
            d.name
            for d in self.versions_dir.iterdir()
            if _VERSION_RE.match(d.name) and _folder(d) and not (d / "metadata.json").exists()
        )

    def links(self) -> list[str]:
        """The symbolic links in versions/ named as a version, by name: no version (never
        listed, served or pruned): a version is a folder the registry holds, unchanged
        while it is kept, and a link's target is anyone's to change or remove."""
        if not self.versions_dir.is_dir():
            return []
        return sorted(
            d.name
            for d in self.versions_dir.iterdir()
            if _VERSION_RE.match(d.name) and d.is_symlink()
        )

    def path(self, version: str) -> Path:
        p = self.versions_dir / version
        if _VERSION_RE.match(version) and p.is_symlink():
            raise RegistryError(f"{p} is {LINK_SAID}")
        if not _VERSION_RE.match(version) or not (p / "metadata.json").is_file():
            raise RegistryError(f"no version {version!r} in {self.root}")
        return p

    def metadata(self, version: str) -> dict:
        path = self.path(version) / "metadata.json"
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RegistryError(f"{path}: {e}") from e
        if not isinstance(meta, dict):
            raise RegistryError(f"{path}: not a JSON object")
        return meta

    def check_servable(self, version: str) -> Path:
        """``verify``, and what the service's load would refuse beyond the checksums: a model
        of another task (an aspect-category model: a registry serves term models) and a
        graph onnxruntime cannot open. What promote and rollback point at: a version the
        running workers refuse still brings down every worker or pod started after it."""
        from absa.errors import ArtifactError
        from absa.model.artifact import check_serves
        from absa.model.categories import TERMS

        art = self._load(version)
        try:
            check_serves(art, TERMS)
        except ArtifactError as e:
            raise RegistryError(f"version {version!r} cannot be served: {e}") from None
        return self.path(version)

    def verify(self, version: str) -> Path:
        """The version's directory, verified as the service would load it (every file's
        sha256, paths inside the version, a passed parity record); RegistryError if not."""
        self._load(version)
        return self.path(version)

    def _load(self, version: str) -> Artifact:
        from absa.errors import ArtifactError
        from absa.model.artifact import load

        try:
            return load(self.path(version))
        except ArtifactError as e:
            raise RegistryError(f"version {version!r} fails verification: {e}") from None

    def pointer(self) -> dict:
        """CURRENT, checked: {"version": str | None, "previous": [str]}; RegistryError with
        the reason if it is not valid JSON, not an object, or names a bad version, or if it
        is missing where history.jsonl records a version served (lost, not yet to be)."""
        p = self.root / POINTER
        if not p.is_file():
            if p.is_dir():  # not "none yet"; and a promote cannot write over it
                raise RegistryError(_FOLDER.format(p))
            if p.exists() or p.is_symlink():  # a dangling link: not "none yet"
                raise RegistryError(f"{p}: the pointer is not a file")
            served = self._last_served()
            if served is not None:  # read as "none yet", the shipped model served quietly
                raise RegistryError(
                    f"{p.name} is missing in {self.root}, but history.jsonl records {served} "
                    "as served: the pointer was lost; `absa models promote VERSION` writes it "
                    "again"
                )
            return {"version": None, "previous": []}
        try:
            ptr = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RegistryError(f"{p}: unreadable pointer: {e}") from e
        if not isinstance(ptr, dict):
            raise RegistryError(f"{p}: the pointer is not a JSON object")
        version = ptr.get("version")
        if version is not None and (not isinstance(version, str) or not _VERSION_RE.match(version)):
            raise RegistryError(f"{p}: bad version name {version!r}")
        previous = ptr.get("previous", [])
        if not isinstance(previous, list):
            raise RegistryError(f"{p}: 'previous' is not a list")
        ptr["previous"] = [v for v in previous if isinstance(v, str) and _VERSION_RE.match(v)]
        return ptr

    def current(self) -> str | None:
        return self.pointer().get("version")

    def _last_served(self) -> str | None:
        """The version history.jsonl last records as pointed at (promoted or rolled back to),
        None if it records none (or there is no history)."""
        last = None
        for row in self._history_rows():
            if row.get("action") in ("promote", "rollback") and isinstance(row.get("version"), str):
                last = row["version"]
        return last

    def _history_rows(self) -> list[dict]:
        """history.jsonl's rows; unreadable lines (torn by a crash, bytes that are not
        UTF-8) are passed over."""
        try:
            lines = (self.root / "history.jsonl").read_bytes().splitlines()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise RegistryError(f"{self.root / 'history.jsonl'}: cannot read: {e}") from e
        rows = []
        for line in lines:
            try:
                row = json.loads(line.decode("utf-8"))
            except ValueError:  # UnicodeDecodeError too
                continue  # a line torn by a crash
            if isinstance(row, dict):
                rows.append(row)
        return rows

    def ever_served(self, version: str) -> bool:
        """Whether history.jsonl records ``version`` as pointed at (promoted or rolled back
        to) or pointed away from: a rollback drops the version it leaves from the pointer,
        and only the history still says it served. Unreadable lines are passed over."""
        return version in self._history_versions()

    def _history_versions(self) -> set[str]:
        """Every version history.jsonl records as pointed at or away from (``ever_served``)."""
        return {
            v
            for row in self._history_rows()
            for v in (row.get("version"), row.get("from"))
            if isinstance(v, str)
        }

    def current_path(self) -> Path:
        v = self.current()
        if v is None:
            raise RegistryError(f"{self.root} has no current version yet")
        try:
            return self.path(v)
        except RegistryError as e:
            raise RegistryError(f"{self.root / POINTER} points at nothing: {e}") from None

    # ------------------------------------------------------------------ changing (hold the lock)

    def new_work_dir(self, prefix: str = "job-") -> Path:
        self.init()
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.work_dir))

    @property
    def resumable_dir(self) -> Path:
        """Scratch space a killed job's successor goes on from (its training checkpoint):
        the one part of .work that ``clean_work`` keeps."""
        return self.work_dir / RESUMABLE

    def clean_work(self) -> None:
        """Remove what killed jobs left: .work (but ``resumable_dir``) and pointer
        temporaries (hold ``job_lock`` and ``lock``); and what exports killed in versions/
        left (``remove_stale_staging``: a running export's is kept)."""
        from absa.model.artifact import remove_stale_staging

        remove_stale_staging(self.versions_dir)
        if self.work_dir.is_dir():
            for d in self.work_dir.iterdir():
                if d.name != RESUMABLE:
                    shutil.rmtree(d, ignore_errors=True)
        self._drop_pointer_temporaries()

    def _drop_pointer_temporaries(self) -> None:
        """The ``.CURRENT.*`` temporaries of pointer writes killed by SIGKILL (any other end
        removes its own): no writer is at work on one while ``lock`` is held."""
        for tmp in self.root.glob(f".{POINTER}.*"):
            try:
                tmp.unlink(missing_ok=True)
            except OSError as e:  # another user's, in a sticky folder: left, and the change made
                log.warning("could not remove %s, left by a killed pointer write: %s", tmp, e)

    def check_new(self, version: str) -> Path:
        """Where ``version`` would go; RegistryError for a bad name, one that exists, or one
        a pruned version had (a job's report or history.jsonl names it: taken again, the old
        report was read as the new version's, and the history spoke of two versions under
        one name). A job checks this before its work, ``add`` again at the end."""
        if not isinstance(version, str) or not _VERSION_RE.match(version):
            raise RegistryError(
                f"bad version name {version!r}: letters, digits, '.', '_' and '-', up to 100"
            )
        dest = self.versions_dir / version
        if dest.exists():
            raise RegistryError(f"version {version!r} exists already; versions are immutable")
        report = self.root / "reports" / f"{version}.json"
        if report.is_file() or self.ever_served(version):
            where = f"reports/{report.name}" if report.is_file() else "history.jsonl"
            raise RegistryError(
                f"version {version!r} was used before ({where} names it) and has been pruned; "
                "a name is not given to another version"
            )
        return dest

    def add(self, artifact_dir: Path, version: str) -> Path:
        """Move a finished artifact directory in as ``version`` (atomic rename). The models
        installed with absa are refused: moving one would take it out of the install (copy
        it first to register it)."""
        packaged = Path(__file__).resolve().parent / "artifacts"
        if Path(artifact_dir).resolve().is_relative_to(packaged):
            raise RegistryError(
                f"{artifact_dir} is a model installed with absa: add moves its directory, so "
                "copy it first (shutil.copytree) and add the copy"
            )
        dest = self.check_new(version)
        if not (Path(artifact_dir) / "metadata.json").is_file():
            raise RegistryError(f"{artifact_dir} is not an artifact directory")
        self.init()
        readable(Path(artifact_dir))  # a job's umask (077) is not the readers' business
        _fsync_tree(Path(artifact_dir))
        os.rename(artifact_dir, dest)
        synced_after_rename(self.versions_dir, dest)
        return dest

    def rehash(self, version: str) -> int:
        """Record the sha256 of each file of ``version``, a version exported before exports
        recorded them (absa 1.2 and older), which every load now refuses ("records no
        per-file checksums") and whose run a registry does not keep to export again. Its
        files are taken as they are, but its graph must still match the sha256 its export
        recorded. Returns how many files were recorded; RegistryError for a version that
        has them already, or whose graph changed."""
        from absa.model.artifact import ONNX, record_files, sha256_file, write_metadata

        meta, where = self.metadata(version), self.path(version)
        if "files" in meta:
            raise RegistryError(f"version {version!r} records its files' sha256 already")
        onnx = meta.get("onnx")
        recorded = onnx.get("sha256") if isinstance(onnx, dict) else None
        if not recorded or sha256_file(where / ONNX) != recorded:
            raise RegistryError(
                f"version {version!r}: its graph's sha256 is not the one its export recorded "
                f"({recorded or 'none'}): its files cannot be trusted as they are"
            )
        record_files(meta, where)
        write_metadata(where, meta)
        readable(where / "metadata.json", tree=False)
        return len(meta["files"])

    def promote(self, version: str, reason: str = "") -> None:
        """Point CURRENT at ``version`` after verifying it (RegistryError: nothing changes).
        A pointer that cannot be read is replaced (the way an operator mends it: the new
        one names a verified version); versions no longer there leave the history."""
        self.require()
        self.check_servable(version)
        if (self.root / POINTER).is_dir():  # the rename over it fails ("Is a directory")
            raise RegistryError(_FOLDER.format(self.root / POINTER))
        try:
            ptr = self.pointer()
        except RegistryError as e:
            log.warning("replacing a pointer that cannot be read: %s", e)
            ptr = {"version": None, "previous": []}
            reason = f"{reason}; replaced an unreadable pointer".lstrip("; ")
        old = ptr.get("version")
        if old == version:
            return
        there = [v for v in ([old] if old else []) + ptr.get("previous", []) if v != version]
        previous = [v for v in dict.fromkeys(there) if (self.versions_dir / v).is_dir()]
        self._drop_pointer_temporaries()  # a killed manual promote's: hold the lock
        atomic_write_json(self.root / POINTER, {"version": version, "previous": previous[:20]})
        self._history("promote", version, old, reason)
        log.info("promoted %s (was %s)", version, old)

    def record_unrecorded_promotion(self, version: str, reason: str) -> bool:
        """history.jsonl's line for ``version`` where CURRENT names it and the history never
        does (a job killed between the pointer's write and the history's): promoted from
        the version before it in the pointer. Whether a line was added (hold the lock)."""
        ptr = self.pointer()
        if ptr.get("version") != version or self.ever_served(version):
            return False
        old = next(iter(ptr.get("previous", [])), None)
        self._history("promote", version, old, reason)
        return True

    def rollback_target(self) -> str:
        """The version ``rollback`` would point at; RegistryError if there is none (it only
        reads: the CLI asks before it takes the lock, which would create the lock file)."""
        return self._rollback_plan()[1]

    def _rollback_plan(self) -> tuple[str | None, str, list[str]]:
        """(the current version, the one to go back to, the previous ones after it)."""
        self.require()
        ptr = self.pointer()
        previous = [v for v in ptr["previous"] if (self.versions_dir / v).is_dir()]
        if not previous:
            raise RegistryError(f"no previous version to roll back to in {self.root}")
        return ptr.get("version"), previous[0], previous[1:]

    def rollback(self) -> str:
        """Point back at the previous champion."""
        old, target, rest = self._rollback_plan()
        try:
            self.check_servable(target)  # a version that cannot serve is never pointed at
        except RegistryError as e:  # no way past it here: say the way by hand
            if not rest:
                raise
            raise RegistryError(
                f"{e}; the version before it is {rest[0]!r}: `absa models promote {rest[0]}` "
                "points there"
            ) from None
        self._drop_pointer_temporaries()
        atomic_write_json(self.root / POINTER, {"version": target, "previous": rest})
        self._history("rollback", target, old, "")
        return target

    def prune(self, keep: int) -> list[str]:
        """Delete old versions: of those that served (promoted, or rolled back to or from),
        all but the newest ``keep``; of those that never did (challengers the gate rejected),
        all but those among the newest ``keep`` versions, so that rejections never push out
        a rollback target, save the newest one held (``newest_held``): the challenger a
        service may be shadowing (ABSA_SHADOW_MODEL), whichever ``keep`` is, until a newer
        one is held or it, or one after it, serves. Never the current or the previous one,
        nor one whose metadata cannot be read: it has no creation time to be old by (it
        lists first), and the next job's repair leaves it to an operator, who would find it
        gone. Nor a directory
        without metadata.json (``incomplete``): it may be a copy still being made. Nor one
        whose files do not all match its metadata's checksums (``verify_files``): a version
        gets into versions/ whole by this project's own ways (``add``'s rename, an export's
        or a recalibration's temporary directory renamed), but an operator's ``cp -r`` may
        have copied metadata.json (with the old creation time: the oldest version) and not
        yet the graph; a damaged or pre-checksum version is left to an operator too. A
        version's files are read for it, once, where it is to go; no clock is asked (``cp
        -a`` keeps old mtimes, and a version added a moment ago is rightly pruned at once).
        The temporary directories of exports killed in versions/ are removed (those no
        process holds, each logged)."""
        from absa.errors import ArtifactError
        from absa.model.artifact import remove_stale_staging, verify_files

        self.require()
        remove_stale_staging(self.versions_dir)
        for name in self.incomplete():
            log.warning(
                "not pruned, for an operator to look at: %s has no metadata.json (a copy in "
                "progress, or one cut short): finish it, or remove it",
                self.versions_dir / name,
            )
        for name in self.links():
            log.warning("not pruned: %s is %s", self.versions_dir / name, LINK_SAID)
        ptr = self.pointer()
        protected = {ptr.get("version"), *ptr.get("previous", [])[:1]}
        versions = self.versions()
        served = self._served(versions, ptr)
        kept = protected | set(versions[max(0, len(versions) - keep) :])
        kept |= set(served[max(0, len(served) - keep) :])
        kept.add(self.newest_held(versions, served))
        removed = []
        for v in versions:
            if v in kept:
                continue
            try:
                verify_files(self.metadata(v), self.versions_dir / v)
            except RegistryError as e:
                log.warning("not pruned, for an operator to look at: %s", e)
                continue
            except ArtifactError as e:  # a copy being made is never deleted under it
                log.warning(
                    "not pruned, for an operator to look at: version %r does not match its "
                    "metadata.json (a copy in progress, or a damaged one): %s",
                    v,
                    e,
                )
                continue
            # rename first so a half-deleted version is never listed
            trash = self.new_work_dir("trash-")
            os.rename(self.versions_dir / v, trash / v)
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(v)
        return removed

    def _served(self, versions: list[str], ptr: dict) -> list[str]:
        """Those of ``versions`` that served: the current one, those the pointer keeps to
        roll back to, and those the history records as promoted, rolled back to or from."""
        pointed = {ptr.get("version"), *ptr["previous"], *self._history_versions()}
        return [v for v in versions if v in pointed]

    def newest_held(
        self, versions: list[str] | None = None, served: list[str] | None = None
    ) -> str | None:
        """The newest version a job held (``held``), while neither it nor a version after it
        has served: the challenger to watch (ABSA_SHADOW_MODEL=held); None where there is
        none (it was promoted, or a newer one served since: it is no challenger then).
        ``versions`` and ``served``: the registry's, where the caller has them. A version whose
        metadata cannot be read is passed over."""
        versions = self.versions() if versions is None else versions
        served = self._served(versions, self.pointer()) if served is None else served
        for v in reversed(versions):
            if v in served:
                return None
            try:
                if held(self.metadata(v)):
                    return v
            except RegistryError:
                continue
        return None

    def _history(self, action: str, version: str, old: str | None, reason: str) -> None:
        """One line in history.jsonl for a change CURRENT already holds. A line that cannot be
        written (a full disk) is an error in the log, not a failed command: the change took
        effect, and an exit status saying otherwise would send an operator after the wrong
        thing (and a job's repair would take the version for one never promoted)."""
        row = {
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "action": action,
            "version": version,
            "from": old,
            "reason": reason,
        }
        path = self.root / "history.jsonl"
        line = (json.dumps(row) + "\n").encode("utf-8")
        try:
            with open(path, "a+b") as f:
                readable_by_all(f)
                # a line an earlier append left torn (a full disk): this one starts on a new
                # line, else the two would be one unreadable line and the change forgotten
                if f.seek(0, os.SEEK_END) and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
                    line = b"\n" + line
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            log.error("%s %s took effect, but %s could not record it: %s", action, version, path, e)
