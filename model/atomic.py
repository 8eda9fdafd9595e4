"""Files written whole: a reader sees the old file or the new one, never a torn one, and a
power cut after the rename keeps the new one (the file and its directory are fsynced). The
registry's pointer, the retraining reports, the reload signal and every artifact's
metadata.json are written this way. No torch.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_json", "atomic_write_text", "fsync_dir"]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, obj: object) -> None:
    """Write JSON so that readers see the old file or the new one, never a torn one."""
    atomic_write_text(path, json.dumps(obj, indent=1))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) so that readers see the old file or the new one, never a torn
    one; mode 0644 as the versions' files (mkstemp's 0600 hid CURRENT from readers under
    another uid)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            os.fchmod(f.fileno(), 0o644)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
