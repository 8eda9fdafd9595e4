"""The CPUs a session may use: onnxruntime sized its pool from the host's cores, blind to a
container's CPU quota (``docker run --cpus 2`` on a 64-core host: 64 throttled threads)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from absa.model import cpus
from absa.model.cpus import cpu_quota, default_threads, usable_cpus
from absa.model.extractor import DEFAULT_EXTRACTOR_DIR, Extractor
from absa.model.runtime import DEFAULT_MODEL_DIR, Runtime

AFFINITY = len(os.sched_getaffinity(0))


def v2(root: Path, own: str = "/", **cpu_max: str) -> tuple[Path, Path]:
    """A cgroup v2 mount at ``root`` with ``cpu.max`` files by directory ("" the mount), and
    a /proc/self/cgroup placing the process at ``own``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    for where, value in cpu_max.items():
        d = root / where.replace("__", "/")
        d.mkdir(parents=True, exist_ok=True)
        (d / "cpu.max").write_text(value + "\n")
    self_cgroup = root.parent / "self-cgroup"
    self_cgroup.write_text(f"0::{own}\n")
    return root, self_cgroup


def test_a_cgroup_v2_quota_is_read_in_cpus(tmp_path: Path) -> None:
    assert cpu_quota(*v2(tmp_path / "a", _="150000 100000")) is None  # not the mount's own
    assert cpu_quota(*v2(tmp_path / "b", **{"": "150000 100000"})) == 1.5
    assert cpu_quota(*v2(tmp_path / "c", **{"": "max 100000"})) is None
    assert cpu_quota(*v2(tmp_path / "d", **{"": "lots 100000"})) is None  # unreadable: none
    assert cpu_quota(*v2(tmp_path / "e")) is None


def test_the_tightest_quota_on_the_cgroups_path_binds(tmp_path: Path) -> None:
    """A process in a sub-cgroup (a systemd service in a slice) is bound by every cgroup
    above it: the slice's 2 CPUs, though its own says max."""
    root, self_cgroup = v2(
        tmp_path / "v2", "/slice/svc", slice="200000 100000", slice__svc="max 100000"
    )
    assert cpu_quota(root, self_cgroup) == 2.0
    (root / "slice" / "svc" / "cpu.max").write_text("50000 100000\n")
    assert cpu_quota(root, self_cgroup) == 0.5


def test_a_cgroup_v1_quota_is_read_in_cpus(tmp_path: Path) -> None:
    mount = tmp_path / "v1" / "cpu,cpuacct"
    mount.mkdir(parents=True)
    (mount / "cpu.cfs_period_us").write_text("100000\n")
    (mount / "cpu.cfs_quota_us").write_text("-1\n")
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("4:memory:/\n2:cpu,cpuacct:/\n0::/\n")
    assert cpu_quota(tmp_path / "v1", self_cgroup) is None
    (mount / "cpu.cfs_quota_us").write_text("300000\n")
    assert cpu_quota(tmp_path / "v1", self_cgroup) == 3.0
    assert cpu_quota(tmp_path / "none", self_cgroup) is None  # no cgroup file system


def test_usable_cpus_are_the_affinity_under_the_quota() -> None:
    assert usable_cpus(None) == AFFINITY
    assert usable_cpus(0.5) == 1  # at least one
    assert usable_cpus(1.9) == 1  # rounded down: a second thread would be throttled
    assert usable_cpus(10_000.0) == AFFINITY


@pytest.fixture
def quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Sets this process's (pretend) cgroup v2 quota: ``quota("100000 100000")``."""

    def set_quota(cpu_max: str | None) -> None:
        root, self_cgroup = v2(tmp_path / "cg", **({"": cpu_max} if cpu_max else {}))
        if cpu_max is None:
            (root / "cpu.max").unlink(missing_ok=True)
        monkeypatch.setattr(cpus, "CGROUP", root)
        monkeypatch.setattr(cpus, "SELF_CGROUP", self_cgroup)

    return set_quota


def test_a_session_without_a_thread_count_takes_the_quotas_cpus(quota) -> None:  # type: ignore[no-untyped-def]
    quota("100000 100000")
    rt = Runtime.load(DEFAULT_MODEL_DIR, device="cpu")
    assert rt.session.get_session_options().intra_op_num_threads == 1
    ext = Extractor.load(DEFAULT_EXTRACTOR_DIR, device="cpu")
    assert ext.session.get_session_options().intra_op_num_threads == 1
    rt = Runtime.load(DEFAULT_MODEL_DIR, device="cpu", threads=3)  # a count given stands
    assert rt.session.get_session_options().intra_op_num_threads == 3
    quota(None)  # no quota: onnxruntime's own choice (it follows the affinity)
    rt = Runtime.load(DEFAULT_MODEL_DIR, device="cpu")
    assert rt.session.get_session_options().intra_op_num_threads == 0


def test_workers_share_the_cpus(quota) -> None:  # type: ignore[no-untyped-def]
    quota(None)
    assert default_threads(1) == 0
    assert default_threads(2) == max(1, AFFINITY // 2)
    quota("400000 100000")
    assert default_threads(1) == min(4, AFFINITY)
    assert default_threads(2) == max(1, min(4, AFFINITY) // 2)
    assert default_threads(64) == 1
