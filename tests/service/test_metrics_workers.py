"""/metrics with several workers (prometheus_client's multiprocess mode): a worker that dies
without stopping (killed, out of memory) leaves its live gauges behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from absa.service.metrics import Metrics

WORKER = """
import os, sys
from pathlib import Path
os.environ["PROMETHEUS_MULTIPROC_DIR"] = sys.argv[1]  # before prometheus_client is imported
from absa.service.metrics import Metrics
m = Metrics(Path(sys.argv[1]))
m.queue_depth.set(7)
m.model_info.labels("dead-model", "9").set(1)
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
