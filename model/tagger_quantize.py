"""Int8 quantisation of an extractor's graph (``absa export --quantize int8`` on a tagger
run; ``int8-embeddings``: the lookup tables alone, as for sentiment models): the parity
gate checks the fp32 graph against torch first, then onnxruntime's ``quantize_dynamic``
replaces ``model.onnx``. ``int8``: weights with a scale per output channel (on the MiniLM
tagger's dev set that lost 0.3 of the mean per-source F1 where one scale per tensor lost
1.2), MatMul / Gemm activations quantised per call. What that changes against the fp32
graph on the same dev windows is recorded in the metadata's ``quantization``: windows
decoded to other spans, spans found by only one of the two, the largest tag probability
change, the sizes; and, since dynamic activation scales are taken over a whole batch, how
far a window's tag probabilities served alone are from the same window's served in its dev
batch (``max_abs_batch_dependence``, the first ``BATCH_CHECK`` windows; a warning above
1e-4).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from absa.model.artifact import ONNX, quantize_graph
from absa.model.extractor import Extractor
from absa.model.spans import Transitions, decode
from absa.model.tagtext import Window

log = logging.getLogger(__name__)

BATCH_CHECK = 200  # dev windows served one at a time to measure how answers depend on the batch


def quantize_tagger(
    tmp: Path,
    metadata: dict,
    windows: Sequence[Window],
    fp32_probs: Sequence[np.ndarray],
    learned: Transitions | None,
    batch: int,
    kind: str = "int8",
) -> dict:
    """Replace ``tmp``'s model.onnx by its int8 quantisation (``kind``: "int8", every
    weight, dynamic, a scale per output channel; "int8-embeddings", the word-vector and
    character tables alone, so no activation is quantised); the change on dev."""
    tables = kind == "int8-embeddings"
    size_fp32 = quantize_graph(
        tmp, metadata, per_channel=not tables, op_types=["Gather"] if tables else None
    )
    ext = Extractor.load(tmp, device="cpu", require_parity=False)
    got = [p for s in range(0, len(windows), batch) for p in ext.probs(windows[s : s + batch])]
    changed = only_fp32 = only_int8 = 0
    diff = 0.0
    for a, b, w in zip(fp32_probs, got, windows, strict=True):
        diff = max(diff, float(np.abs(a - b).max()))
        sa = {(f.start, f.end) for f in decode(a, w.tokens, learned)}
        sb = {(f.start, f.end) for f in decode(b, w.tokens, learned)}
        changed += sa != sb
        only_fp32 += len(sa - sb)
        only_int8 += len(sb - sa)
    info: dict[str, Any] = {  # a JSON record: numbers and names
        "type": "int8-embeddings" if tables else "int8-dynamic",
        "per_channel": not tables,
        "dev_windows": len(windows),
        "windows_decoded_differently": changed,
        "spans_only_fp32": only_fp32,
        "spans_only_int8": only_int8,
        "max_abs_prob_diff": diff,
        "bytes_fp32": size_fp32,
        "bytes_int8": (tmp / ONNX).stat().st_size,
        "max_abs_batch_dependence": batch_dependence(ext, windows[:BATCH_CHECK], got[:BATCH_CHECK]),
    }
    if info["max_abs_batch_dependence"] > 1e-4:
        log.warning(
            "int8: a window's tag probabilities change by up to %.3f with the batch it is "
            "served in (dynamic activation scales)",
            info["max_abs_batch_dependence"],
        )
    log.info("int8: %d of %d dev windows decode differently", changed, len(windows))
    return info


def batch_dependence(
    ext: Extractor, windows: Sequence[Window], batched: Sequence[np.ndarray]
) -> float:
    """The largest tag probability change between ``windows`` served one at a time and the
    same windows' probabilities ``batched`` (in order)."""
    diffs = [
        float(np.abs(ext.probs([w])[0] - b).max()) for w, b in zip(windows, batched, strict=True)
    ]
    return max(diffs, default=0.0)
