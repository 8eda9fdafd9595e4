"""A benchmark's result file: what it measured, with the command that made it, the code
version and the machine, as every result under benchmarks/results records them."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from absa.training.provenance import code_version, environment

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]


def write_record(dest: Path, **measured: Any) -> None:
    """``measured`` as JSON in ``dest``, after the command line this process was started
    with (``python benchmarks/<script> ARGS``), the code version and the environment."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    record = {
        "command": " ".join(["python", str(shown), *sys.argv[1:]]),
        "code_version": code_version(),
        "environment": environment(),
        **measured,
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    log.info("wrote %s", dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest)
