"""benchmarks/encoder_shards.py: an encoder's shards readable as its other files are."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from benchmarks.encoder_shards import shard


def test_the_shards_are_readable_as_the_umask_allows(
    tiny_transformer: Path, tmp_path: Path
) -> None:
    """The weight shards came out 0600 (written through a temporary file) beside a 0644
    config and tokenizer: a container or another user could read all but the weights."""
    old = os.umask(0o022)
    try:
        files = shard(tiny_transformer, tmp_path / "out", max_mb=1)
    finally:
        os.umask(old)
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    assert any(name.endswith(".safetensors") for name in modes), modes
    assert set(modes.values()) == {0o644}, modes
