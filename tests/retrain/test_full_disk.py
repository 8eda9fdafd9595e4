"""A retraining job that runs out of disk leaves the champion and the registry intact.

The registry lives on a real, small tmpfs that is filled almost to the brim before the
job starts; the job must fail with ENOSPC, and nothing the service reads may change.
Needs root (mount); skipped where mounting is not permitted.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from absa.training.retrain import RetrainConfig, retrain
from tests.retrain.conftest import ConfigWriter
from tests.retrain.test_retrain import state, work_entries


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path, leave: int) -> None:
    free = shutil.disk_usage(disk).free
    with (disk / "filler").open("wb") as f:
        f.write(b"\0" * max(0, free - leave))


def test_full_disk_leaves_champion_and_registry_intact(
    champion_registry: Path, small_disk: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    registry = small_disk / "registry"
    shutil.copytree(champion_registry, registry)
    _fill(small_disk, leave=32 * 1024)  # far less than a run directory needs
    before = state(registry)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    with pytest.raises(OSError) as err:
        retrain(cfg, version="v2")
    assert err.value.errno == errno.ENOSPC
    assert state(registry) == before  # same CURRENT, same versions, same bytes
    # scratch space cleaned; what training wrote is kept for the next job, once there is room
    assert set(work_entries(registry)) <= {"resumable"}
    assert not (registry / "versions" / "v2").exists()
    # with room again, the next job succeeds on the same registry
    (small_disk / "filler").unlink()
    report = retrain(cfg, version="v3")
    assert (registry / "versions" / "v3" / "model.onnx").is_file()
    assert report["version"] == "v3"


def test_a_pointer_or_record_written_on_a_full_disk_names_the_file(small_disk: Path) -> None:
    """absa models promote / rollback and a job's last records on a full disk said only
    "[Errno 28] No space left on device": which file, and that the disk was full, unsaid."""
    from absa.model.atomic import atomic_write_text

    (small_disk / "CURRENT").write_text('{"version": "v1"}')
    _fill(small_disk, leave=0)
    with pytest.raises(OSError) as err:
        atomic_write_text(small_disk / "CURRENT", '{"version": "v2"}' + " " * 65536)
    assert err.value.errno == errno.ENOSPC
    assert str(err.value).startswith(f"cannot write {small_disk / 'CURRENT'}: the disk is full")
    assert (small_disk / "CURRENT").read_text() == '{"version": "v1"}'
    assert sorted(p.name for p in small_disk.iterdir()) == ["CURRENT", "filler"]


OVER_LIMIT = """
import resource, signal, sys
from pathlib import Path
from absa.model.atomic import atomic_write_text

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit: EFBIG, not a killed process
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.RLIM_INFINITY))
try:
    atomic_write_text(Path(sys.argv[1]), "x" * 4096)
except OSError as e:
    print(e.errno, e)
"""


def test_a_file_over_the_size_limit_is_named(tmp_path: Path) -> None:
    """A write past ``ulimit -f`` (EFBIG) said "[Errno 27] File too large", no file named,
    where a full disk at the same step named it; the old file stays."""
    import sys

    dst = tmp_path / "metadata.json"
    dst.write_text("old")
    done = subprocess.run(
        [sys.executable, "-c", OVER_LIMIT, str(dst)], capture_output=True, text=True, check=True
    )
    said = f"{errno.EFBIG} cannot write {dst}: the file is over a size limit (File too large"
    assert done.stdout.startswith(said), done.stdout + done.stderr
    assert dst.read_text() == "old"
