"""Files written whole: a reader sees the old file or the new one, never a torn one, and a
power cut after the rename keeps the new one (the file and its directory are fsynced; a file
system that does not sync directories, as some FUSE and network mounts answer EINVAL, is
left at that). The registry's pointer, the retraining reports, the reload signal and every
artifact's metadata.json are written this way. No torch.

A directory's sync comes after the rename, which every reader already sees and nothing can
take back: its failure (a disk's I/O error) is logged as an error, not raised
(``synced_after_rename``). Raised, a rollback that had taken effect was reported failed, "may
succeed if run again", and a retried one went back two versions.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import tempfile
from pathlib import Path

from absa.errors import raise_if_full

__all__ = ["atomic_write_json", "atomic_write_text", "fsync_dir", "synced_after_rename"]

log = logging.getLogger(__name__)

#: fsync's answer on a directory where the file system does not sync directories: nothing to
#: do there. It came after the rename, so raised, a write already done was reported failed
NO_DIR_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def fsync_dir(path: Path) -> None:
    """Sync ``path``, a directory: the renames into it reach the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in NO_DIR_SYNC:
            raise
        log.debug("%s: the file system does not sync directories (%s)", path, e.strerror)
    finally:
        os.close(fd)


def synced_after_rename(path: Path, what: Path) -> None:
    """Sync ``path``, the directory ``what`` was just renamed into: a failure is logged, not
    raised (the rename is done and seen; only its survival of a power cut is in doubt)."""
    try:
        fsync_dir(path)
    except OSError as e:
        log.error(
            "%s is in place, but %s could not be synced (%s): a power cut may lose it",
            what,
            path,
            e.strerror or e,
        )


def atomic_write_json(path: Path, obj: object) -> None:
    """Write JSON so that readers see the old file or the new one, never a torn one."""
    atomic_write_text(path, json.dumps(obj, indent=1))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) so that readers see the old file or the new one, never a torn
    one; mode 0644 as the versions' files (mkstemp's 0600 hid CURRENT from readers under
    another uid)."""
    path = Path(path)
    # a full disk named: "[Errno 28] No space left on device" named no file (CURRENT, a report)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as e:
        raise_if_full(path, e)
        raise
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            os.fchmod(f.fileno(), 0o644)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise_if_full(path, e)
        raise
    synced_after_rename(path.parent, path)
