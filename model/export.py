"""Export a training run to an artifact directory: ONNX + JSON, checked against torch.

The export fails (and writes nothing at ``out_dir``) when onnxruntime and torch disagree
on the run's dev set by more than ``PARITY_ATOL`` in any probability or in any prediction.
``quantize="int8"`` adds onnxruntime dynamic quantisation; its accuracy change against
the fp32 graph is measured on the same dev set and recorded in the metadata.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from model.export_check import PARITY_ATOL
from model.network import ABSANet, ExportWrapper
from model.runtime import ARTIFACT_KIND, INPUT_NAMES, Runtime, sha256_file
from model.text import Encoded, Pipeline, Token, collate

log = logging.getLogger(__name__)

OPSET = 17


class ParityError(RuntimeError):
    """onnxruntime and torch disagree on the exported model."""


def _export_onnx(net: torch.nn.Module, path: Path, self_attention: bool) -> None:
    wrapper = ExportWrapper(net).eval()
    net.eval()  # export what serves: no dropout
    dummy = collate([_dummy_item(5), _dummy_item(3)], pad_id=0)
    args = tuple(torch.from_numpy(dummy[k]) for k in INPUT_NAMES)
    outputs = ["probs", "attention"] + (["self_attention"] if self_attention else [])
    axes = {k: {0: "batch", 1: "tokens"} for k in INPUT_NAMES}
    axes.update({"probs": {0: "batch"}, "attention": {0: "batch", 1: "tokens"}})
    if self_attention:
        axes["self_attention"] = {0: "batch", 2: "tokens", 3: "tokens_k"}
    with torch.no_grad(), warnings.catch_warnings():
        # h0/c0 are built from the input's batch size inside the graph, and the parity check
        # runs batches of several sizes, so the exporter's batch-size warning does not apply
        warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size")
        torch.onnx.export(
            wrapper,
            args,
            str(path),
            input_names=list(INPUT_NAMES),
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    net.eval()


def _dummy_item(n: int) -> Encoded:
    return Encoded([2] * n, [0, 1] + [0] * (n - 2), [Token("x", 0, 1)] * n)


def _dev_items(run_dir: Path, pipeline: Pipeline) -> tuple[list[Encoded], list[str]]:
    items, labels = [], []
    for line in (run_dir / "dev.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        items.append(pipeline.encode(row["text"], row["start"], row["end"]))
        labels.append(row["label"])
    return items, labels


def _torch_probs(net: ABSANet, items: Sequence[Encoded], pad_id: int, batch: int) -> np.ndarray:
    out = []
    with torch.no_grad():
        for s in range(0, len(items), batch):
            feeds = {
                k: torch.from_numpy(v) for k, v in collate(items[s : s + batch], pad_id).items()
            }
            out.append(torch.softmax(net(**feeds)[0], -1).numpy())
    return np.concatenate(out)


def _ort_probs(rt: Runtime, items: Sequence[Encoded], batch: int) -> np.ndarray:
    return np.concatenate(
        [
            np.stack([o.probs for o in rt.run_batch(items[s : s + batch])])
            for s in range(0, len(items), batch)
        ]
    )


def export_run(
    run_dir: Path,
    out_dir: Path,
    quantize: str | None = None,
    name: str | None = None,
    version: str | None = None,
    batch: int = 32,
) -> dict:
    """Write the artifact directory and return its metadata."""
    from training.checkpoint import load_run

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    if quantize not in (None, "int8"):
        raise ValueError(f"quantize must be int8 or absent, not {quantize!r}")
    run = load_run(run_dir)
    net = run.net.eval()
    cfg = run.model_config
    items, gold = _dev_items(run_dir, run.pipeline)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; a served artifact must be readable
    try:
        run.pipeline.save(tmp)
        fp32 = tmp / "model.onnx"
        _export_onnx(net, fp32, bool(cfg.self_attention_heads))
        metadata = {
            "kind": ARTIFACT_KIND,
            "name": name or run.info.get("preset") or "absa",
            "version": version or datetime.now(UTC).strftime("%Y%m%d%H%M%S"),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "labels": list(cfg.labels),
            "model_config": cfg.to_dict(),
            "preset": run.info.get("preset"),
            "train": {
                k: run.info.get(k)
                for k in (
                    *("seed", "data", "label_counts", "n_train", "n_dev", "dev_split"),
                    "teacher",  # a distilled model's teacher: path, sha256, dev leak
                )
            },
            "train_config": run.train_config.to_dict(),
            "metrics": run.metrics,
            "code_version": run.info.get("code_version"),
            "source_run": str(run_dir),
            "onnx": {
                "file": "model.onnx",
                "sha256": sha256_file(fp32),
                "opset": OPSET,
                "inputs": list(INPUT_NAMES),
            },
        }
        (tmp / "metadata.json").write_text(json.dumps(metadata, indent=1))

        # parity: torch vs onnxruntime on the dev set, in padded batches
        ref = _torch_probs(net, items, run.pipeline.pad_id, batch)
        rt = Runtime.load(tmp, device="cpu")
        got = _ort_probs(rt, items, batch)
        diff = float(np.abs(ref - got).max())
        mismatches = int((ref.argmax(1) != got.argmax(1)).sum())
        labels = list(cfg.labels)
        y = np.array([labels.index(g) for g in gold])
        parity = {
            "n": len(items),
            "max_abs_diff": diff,
            "prediction_mismatches": mismatches,
            "atol": PARITY_ATOL,
            "dev_accuracy_torch": float((ref.argmax(1) == y).mean()),
            "dev_accuracy_onnx": float((got.argmax(1) == y).mean()),
        }
        log.info(
            "parity on %d dev items: max |diff| %.2e, %d prediction mismatches",
            len(items),
            diff,
            mismatches,
        )
        if diff > PARITY_ATOL or mismatches:
            raise ParityError(
                f"onnxruntime and torch disagree on the dev set: max |diff| {diff:.2e} "
                f"(limit {PARITY_ATOL:.0e}), {mismatches} predictions differ; nothing exported"
            )
        metadata["parity"] = parity
        if quantize == "int8":
            metadata["quantization"] = _quantize(tmp, items, y, got, batch)
        metadata["onnx"]["sha256"] = sha256_file(tmp / "model.onnx")
        (tmp / "metadata.json").write_text(json.dumps(metadata, indent=1))
        if out_dir.exists():
            raise FileExistsError(f"{out_dir} exists; export into a new directory")
        tmp.rename(out_dir)  # atomic on one file system: no half artifact is ever visible
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return metadata


def _quantize(
    tmp: Path, items: Sequence[Encoded], y: np.ndarray, fp32_probs: np.ndarray, batch: int
) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = tmp / "model.onnx"
    q = tmp / "model.int8.onnx"
    quantize_dynamic(str(fp32), str(q), weight_type=QuantType.QInt8)
    size_fp32 = fp32.stat().st_size
    q.replace(fp32)  # the artifact serves the quantised graph as model.onnx
    meta = json.loads((tmp / "metadata.json").read_text())
    meta["onnx"]["sha256"] = sha256_file(fp32)
    (tmp / "metadata.json").write_text(json.dumps(meta))
    got = _ort_probs(Runtime.load(tmp, device="cpu"), items, batch)
    acc32 = float((fp32_probs.argmax(1) == y).mean())
    acc8 = float((got.argmax(1) == y).mean())
    info = {
        "type": "int8-dynamic",
        "dev_accuracy_fp32": acc32,
        "dev_accuracy_int8": acc8,
        "accuracy_change": acc8 - acc32,
        "changed_predictions": int((got.argmax(1) != fp32_probs.argmax(1)).sum()),
        "max_abs_prob_diff": float(np.abs(got - fp32_probs).max()),
        "bytes_fp32": size_fp32,
        "bytes_int8": fp32.stat().st_size,
    }
    log.info(
        "int8: dev accuracy %.4f -> %.4f, %d predictions change",
        acc32,
        acc8,
        info["changed_predictions"],
    )
    return info
