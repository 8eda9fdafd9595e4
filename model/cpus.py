"""How many CPUs this process may use, for onnxruntime's thread pool.

onnxruntime sizes its intra-op pool from the machine's cores (it follows the process's CPU
affinity, not a cgroup CPU quota): a container given 2 CPUs (``docker run --cpus 2``, a
Kubernetes CPU limit) on a 64-core host got a pool of 64 threads, throttled by the quota
and slow in the tail. ``default_threads`` is what a session takes when no thread count is
set: the quota's CPUs where one binds, shared out among the server's workers.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP = Path("/sys/fs/cgroup")  # where cgroup file systems are mounted
SELF_CGROUP = Path("/proc/self/cgroup")  # this process's cgroup, by hierarchy


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _v2_quota(directory: Path) -> float | None:
    """``cpu.max`` ("QUOTA PERIOD" or "max PERIOD") of one cgroup v2 directory, in CPUs."""
    text = _read(directory / "cpu.max")
    parts = text.split() if text else []
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _v1_quota(directory: Path) -> float | None:
    """``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` of one cgroup v1 directory (-1: none)."""
    quota, period = (_read(directory / f"cpu.cfs_{n}_us") for n in ("quota", "period"))
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _own_paths(self_cgroup: Path) -> dict[str, str]:
    """The process's cgroup path per hierarchy: "" for v2's unified one, "cpu" for v1's."""
    paths: dict[str, str] = {}
    for line in (_read(self_cgroup) or "").splitlines():
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and controllers == "":
            paths[""] = path
        elif "cpu" in controllers.split(","):
            paths["cpu"] = path
    return paths


def _up_from(mount: Path, path: str) -> list[Path]:
    """``mount/path`` and every directory above it up to ``mount`` (a container sees its own
    cgroup as the mount itself: ``path`` is then "/" or names nothing there)."""
    here = mount / path.lstrip("/")
    if not here.is_dir():
        here = mount
    return [p for p in (here, *here.parents) if p.is_relative_to(mount)]


def cpu_quota(root: Path | None = None, self_cgroup: Path | None = None) -> float | None:
    """The CPUs a cgroup CPU quota allows this process (the tightest along its cgroup's
    path; 1.5 for ``--cpus 1.5``), or None where none is set or none can be read."""
    root = CGROUP if root is None else root
    paths = _own_paths(SELF_CGROUP if self_cgroup is None else self_cgroup)
    found: list[float] = []
    if (root / "cgroup.controllers").is_file():  # v2: one unified hierarchy
        found = [q for d in _up_from(root, paths.get("", "/")) if (q := _v2_quota(d))]
    else:  # v1: the cpu controller's own mount
        for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
            mount = root / name
            if mount.is_dir():
                found = [q for d in _up_from(mount, paths.get("cpu", "/")) if (q := _v1_quota(d))]
                break
    return min(found) if found else None


def usable_cpus(quota: float | None) -> int:
    """The CPUs this process may run on (its affinity), no more than ``quota`` allows
    (rounded down, at least 1)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpus = cpus or 1
    return max(1, min(cpus, math.floor(quota))) if quota is not None else cpus


def default_threads(workers: int = 1) -> int:
    """onnxruntime intra-op threads for a session whose count is not set: 0 (onnxruntime's
    own choice, which follows the affinity) for one process that no quota binds; else the
    usable CPUs shared out among ``workers`` processes, at least 1 each."""
    quota = cpu_quota()
    if quota is None and workers <= 1:
        return 0
    return max(1, usable_cpus(quota) // max(1, workers))
