"""Which files of a PROMETHEUS_MULTIPROC_DIR are prometheus_client's own. No import of
prometheus_client here: ``absa serve`` checks and empties the directory before any worker
starts, and prometheus_client's metrics made in that process would write files of its own
there."""

from __future__ import annotations

import re
from pathlib import Path

#: the files prometheus_client's multiprocess mode writes (values.MultiProcessValue):
#: counter_PID.db, histogram_PID.db, gauge_livesum_PID.db, ...
PROMETHEUS_FILE = re.compile(r"(counter|gauge_[a-z]+|histogram|summary)_[0-9]+\.db")


def own_files(directory: Path) -> list[Path]:
    """prometheus_client's files in ``directory``."""
    return sorted(f for f in Path(directory).glob("*.db") if PROMETHEUS_FILE.fullmatch(f.name))


def foreign_files(directory: Path) -> list[Path]:
    """What else ends in ``.db`` there: prometheus_client's MultiProcessCollector reads every
    ``*.db`` of the directory as one of its files, and fails on any other (a scrape's 500)."""
    return sorted(f for f in Path(directory).glob("*.db") if not PROMETHEUS_FILE.fullmatch(f.name))
