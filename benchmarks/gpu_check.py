"""The CUDA provider against the CPU one, for artifacts: where onnxruntime places each
graph's nodes, and whether the GPU answers as the CPU does (max |dp| and labels over a data
set's aspects). Run on a machine with onnxruntime-gpu and a GPU (benchmarks/gpu_serving.sh).

    python benchmarks/gpu_check.py --artifact model/artifacts/default runs/accurate-onnx \\
        --data ../shared/data/semeval14/Restaurants_Test_Gold.xml.seg --out gpu-check.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PLACED = re.compile(r"placed on \[(\w+)\]\. Number of nodes: (\d+)")
# a session opened with verbose logging: onnxruntime says where the nodes went, on stderr
PLACEMENT = """
import sys, onnxruntime as ort
o = ort.SessionOptions()
o.log_severity_level = 0
ort.InferenceSession(sys.argv[1], o, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
"""


def placement(onnx: Path) -> dict[str, int]:
    """Nodes per execution provider, as onnxruntime's verbose log gives them."""
    log = subprocess.run(
        [sys.executable, "-c", PLACEMENT, str(onnx)], capture_output=True, text=True, check=True
    ).stderr
    return {ep: int(n) for ep, n in PLACED.findall(log)}


def compare(artifact: Path, spans: list[tuple[str, int, int]]) -> dict:
    """The CUDA provider's probabilities against the CPU provider's, on the same spans."""
    from absa.model.runtime import Runtime

    got = {}
    for device in ("cpu", "cuda"):
        rt = Runtime.load(artifact, device=device, threads=2)
        got[device] = (rt.providers, rt.predict_proba(spans))
    cpu, cuda = got["cpu"][1], got["cuda"][1]
    return {
        "providers": {d: p for d, (p, _) in got.items()},
        "aspects": len(spans),
        "max_abs_dp": float(np.abs(cpu - cuda).max()),
        "same_labels": int((cpu.argmax(1) == cuda.argmax(1)).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, nargs="+", required=True)
    ap.add_argument("--data", type=Path, required=True, help="aspects to score (any reader format)")
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = ap.parse_args()
    from absa.training.readers import read_examples

    spans = [(e.text, e.start, e.end) for e in read_examples(args.data).examples]
    result = {}
    for art in args.artifact:
        result[art.name] = {"nodes": placement(art / "model.onnx"), **compare(art, spans)}
        print(art.name, json.dumps(result[art.name]), flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
