"""/metrics with several workers (prometheus_client's multiprocess mode): a worker that dies
without stopping (killed, out of memory) leaves its live gauges behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from absa.service.metrics import Metrics

WORKER = """
import os, sys
from pathlib import Path
os.environ["PROMETHEUS_MULTIPROC_DIR"] = sys.argv[1]  # before prometheus_client is imported
from absa.service.metrics import Metrics
m = Metrics(Path(sys.argv[1]))
m.queue_depth.set(7)
m.model_info.labels("dead-model", "9", "0123456789ab").set(1)
m.requests.labels("/v1/predict", "POST", "200").inc()
os._exit(0)  # killed: no lifespan shutdown, no Metrics.close()
"""


def test_a_dead_workers_live_gauges_leave_the_sums(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], check=True)
    assert list(tmp_path.glob("gauge_live*_*.db"))  # what the dead worker left
    text = Metrics(tmp_path).expose().decode()
    assert "dead-model" not in text
    assert "absa_queue_depth 7.0" not in text
    # its counts stay: requests it answered were answered
    assert 'absa_requests_total{method="POST",route="/v1/predict",status="200"} 1.0' in text
    assert not list(tmp_path.glob("gauge_live*_*.db"))


EARLIER_RUN = """
import os, sys
os.environ["PROMETHEUS_MULTIPROC_DIR"] = sys.argv[1]
from pathlib import Path
from absa.service.metrics import Metrics
m = Metrics(Path(sys.argv[1]))
m.reloads.labels("swapped").inc(2)
os._exit(0)
"""


def test_a_multiprocess_directory_set_by_the_operator_starts_empty(
    artifact: Path, tmp_path: Path
) -> None:
    """A PROMETHEUS_MULTIPROC_DIR the operator sets was never emptied: an earlier run's
    counts were a fresh server's (absa_reloads_total{result="swapped"} 2 before any reload),
    and its files grew with every worker ever started. absa serve empties it of
    prometheus_client's files before a worker starts, says so, and leaves anything else."""
    import httpx

    from tests.service.conftest import absa_serve

    shared = tmp_path / "metrics"
    shared.mkdir()
    subprocess.run([sys.executable, "-c", EARLIER_RUN, str(shared)], check=True)
    left = sorted(p.name for p in shared.glob("*.db"))
    assert left, "the earlier run's files"
    (shared / "notes.db.txt").write_text("the operator's")
    with absa_serve(artifact, tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared)) as url:
        text = httpx.get(f"{url}/metrics").text
    assert 'absa_reloads_total{result="swapped"} 0.0' in text, text
    assert (shared / "notes.db.txt").read_text() == "the operator's"
    said = (tmp_path / "serve.log").read_text()
    assert f"emptied PROMETHEUS_MULTIPROC_DIR {shared}" in said, said


def test_a_foreign_db_file_does_not_fail_the_scrape(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """/metrics read every *.db in PROMETHEUS_MULTIPROC_DIR: a file of someone else's there
    (a database, an empty file) made every scrape a 500 ("unpack_from requires a buffer of
    at least 1634562704 bytes"), and Prometheus lost every series. Only prometheus_client's
    own files are read; the other is named in a warning."""
    from fastapi.testclient import TestClient

    from absa.service.app import create_app
    from tests.service.conftest import make_settings

    subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], check=True)
    (tmp_path / "cache.db").write_bytes(b"SQLite format 3\0" + b"\1" * 100)
    settings = make_settings(artifact, prometheus_multiproc_dir=tmp_path)
    with TestClient(create_app(settings)) as client, caplog.at_level("WARNING"):
        r = client.get("/metrics")
    assert r.status_code == 200, r.text
    assert 'absa_requests_total{method="POST",route="/v1/predict",status="200"} 1.0' in r.text
    said = [rec.getMessage() for rec in caplog.records if "cache.db" in rec.getMessage()]
    assert said and "not prometheus_client's" in said[0], said


def test_a_workers_file_not_yet_sized_does_not_fail_the_scrape(tmp_path: Path) -> None:
    """prometheus_client creates a worker's file and sizes it after (MmapedDict): a scrape by
    the other worker while a replacement started read it at 0 bytes, and /metrics was a 500
    ("unpack_from requires a buffer of at least 4 bytes"; CI, a worker killed under load); a
    worker killed in that moment left it so for good (client_python issue 1199). It holds no
    values yet: the scrape reads the others."""
    subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], check=True)
    (tmp_path / "counter_4194301.db").touch()  # created, not yet sized
    (tmp_path / "histogram_4194302.db").symlink_to(tmp_path / "gone")  # a file gone
    text = Metrics(tmp_path).expose().decode()
    assert 'absa_requests_total{method="POST",route="/v1/predict",status="200"} 1.0' in text
