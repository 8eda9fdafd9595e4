"""benchmarks/gpu_check.py and latency.py --device: what can be checked without a GPU (the
numbers themselves come from benchmarks/gpu_serving.sh on a borrowed one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest

from benchmarks.gpu_check import placement

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "model" / "artifacts" / "default"
CUDA = "CUDAExecutionProvider" in ort.get_available_providers()


def test_placement_reads_where_onnxruntime_put_the_nodes() -> None:
    got = placement(SHIPPED / "model.onnx")
    nodes = len(onnx.load(SHIPPED / "model.onnx").graph.node)  # before graph optimisation
    if CUDA:
        assert set(got) <= {"CUDAExecutionProvider", "CPUExecutionProvider"}
    else:  # asked for CUDA, onnxruntime runs every node on the CPU and says so
        assert list(got) == ["CPUExecutionProvider"]
    assert 0 < sum(got.values()) <= nodes


@pytest.mark.skipif(CUDA, reason="this machine has onnxruntime's CUDA provider")
def test_latency_on_cuda_without_it_is_a_one_line_refusal(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "benchmarks/latency.py", "--artifact", str(SHIPPED), "--data",
         str(tmp_path / "unread.jsonl"), "--name", "x", "--device", "cuda"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "--device cuda: onnxruntime" in proc.stderr and "Traceback" not in proc.stderr
    assert not (ROOT / "benchmarks" / "results" / "latency" / "x.json").exists()
