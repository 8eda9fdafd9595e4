"""Export a trained tagger to an extractor artifact: ONNX + JSON, checked against torch.

The same contract as ``absa.model.export`` for sentiment models: named inputs, dynamic
batch and length, opset 17, then onnxruntime against torch on the dev sentences in padded
batches. It fails (and writes nothing at ``out_dir``) when any tag probability differs by
more than ``PARITY_ATOL`` or any dev sentence decodes to other spans. An int8 artifact is
the checked fp32 graph quantised afterwards (its change on dev is recorded, not gated).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

import numpy as np
import torch

from absa.errors import ParityError
from absa.model.artifact import (
    EXTRACTOR_KIND,
    ONNX,
    PARITY_ATOL,
    new_metadata,
    record_checksums,
    staged,
    write_metadata,
)
from absa.model.export import OPSET, QUANTIZATIONS, export_versions, onnx_export
from absa.model.extractor import Extractor
from absa.model.extractor_card import write_extractor_card
from absa.model.piece_tagger import PieceTagger
from absa.model.piecetext import PieceTagText
from absa.model.spans import Transitions, decode
from absa.model.tagger import Tagger, TaggerConfig, TaggerExport
from absa.model.tagtext import TagText, Window

log = logging.getLogger(__name__)

Net: TypeAlias = Tagger | PieceTagger
Text: TypeAlias = TagText | PieceTagText


def export_tagger(
    net: Net,
    text: Text,
    cfg: TaggerConfig,
    dev_texts: Sequence[str],
    out_dir: Path,
    provenance: Mapping[str, object],
    name: str = "absa-extractor",
    version: str | None = None,
    batch: int = 32,
    quantize: str | None = None,
) -> dict:
    """Write the extractor artifact directory and return its metadata; ``quantize`` ("int8"
    or "int8-embeddings"): the parity-checked graph quantised
    (``absa.model.tagger_quantize``)."""
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be int8, int8-embeddings or absent, not {quantize!r}")
    out_dir = Path(out_dir)
    net = net.eval()
    windows = [w for t in dev_texts for w in text.encode(t)]
    if not windows:
        raise ValueError("the parity check needs dev sentences")
    learned = net.transitions()
    with staged(out_dir) as tmp:
        text.save(tmp)
        if learned is not None:
            learned.save(tmp)
        onnx = {
            "opset": OPSET,
            "inputs": _export_onnx(net, text, tmp / ONNX, cfg.tags),
            "exported_with": export_versions(),
        }
        kind, tags = EXTRACTOR_KIND, list(cfg.tags)
        metadata = new_metadata(kind, name, version, tags, cfg.to_dict(), provenance, onnx)
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
        ref = _torch_probs(net, text, windows, batch)
        ext = Extractor.load(tmp, device="cpu", require_parity=False)
        got = [p for s in range(0, len(windows), batch) for p in ext.probs(windows[s : s + batch])]
        metadata["parity"] = _check_parity(ref, got, windows, learned)
        if quantize is not None:
            from absa.model.tagger_quantize import quantize_tagger

            metadata["quantization"] = quantize_tagger(
                tmp, metadata, windows, got, learned, batch, quantize
            )
        write_extractor_card(tmp, metadata)
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
    return metadata


def _export_onnx(net: Net, text: Text, path: Path, tags: Sequence[str]) -> list[str]:
    dummy = [w for s in ("x y x y x", "x y x") for w in text.encode(s)]
    feeds = text.feeds(dummy)
    names = list(feeds)
    wrapper = TaggerExport(net, names).eval()
    pieces = isinstance(text, PieceTagText)
    axes = {
        k: {
            0: "batch",
            1: "pieces" if pieces and k in ("input_ids", "attention_mask") else "tokens",
        }
        for k in names
    }
    if "char_ids" in axes:
        axes["char_ids"][2] = "chars"
    axes["probs"] = {0: "batch", 1: "tokens"}
    args = tuple(torch.from_numpy(feeds[k]) for k in names)
    onnx_export(wrapper, args, path, names, ["probs"], axes, tags)
    net.eval()
    return names


def _torch_probs(net: Net, text: Text, windows: Sequence[Window], batch: int) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    with torch.no_grad():
        for s in range(0, len(windows), batch):
            part = windows[s : s + batch]
            feeds = {k: torch.from_numpy(v) for k, v in text.feeds(part).items()}
            probs = torch.softmax(net(**feeds)[0], -1).numpy()
            out.extend(probs[i, : len(w.tokens)] for i, w in enumerate(part))
    return out


def _spans(probs: np.ndarray, window: Window, learned: Transitions | None) -> list[tuple[int, int]]:
    return [(f.start, f.end) for f in decode(probs, window.tokens, learned)]


def _check_parity(
    ref: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    windows: Sequence[Window],
    learned: Transitions | None = None,
) -> dict:
    # np.max, not max(): Python's max keeps a number seen before a NaN
    diff = float(np.max([np.abs(r - g).max() for r, g in zip(ref, got, strict=True)]))
    mismatches = sum(
        _spans(r, w, learned) != _spans(g, w, learned)
        for r, g, w in zip(ref, got, windows, strict=True)
    )
    log.info("parity on %d dev windows: max |diff| %.2e, %d differ", len(ref), diff, mismatches)
    if not diff <= PARITY_ATOL or mismatches:  # "not <=": a NaN fails too
        raise ParityError(
            f"onnxruntime and torch disagree on the dev set: max |diff| {diff:.2e} "
            f"(limit {PARITY_ATOL:.0e}), {mismatches} sentences decode differently; "
            "nothing exported"
        )
    return {"n": len(ref), "max_abs_diff": diff, "prediction_mismatches": mismatches,
            "atol": PARITY_ATOL}  # fmt: skip
