"""Run an exported artifact with onnxruntime. Never imports torch.

An artifact directory holds ``model.onnx``, ``metadata.json`` (config, labels, metrics,
the sha256 of ``model.onnx``, ...) and the text pipeline files. ``Runtime.load`` verifies
the checksum before it opens a session, picks the execution provider from what
onnxruntime offers (``ABSA_DEVICE=auto|cpu|cuda``), and runs batches bucketed by length.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from model.text import Encoded, Token, WordPiecePipeline, WordPipeline, collate, load_pipeline

log = logging.getLogger(__name__)

ARTIFACT_KIND = "absa-artifact"
INPUT_NAMES = ("input_ids", "attention_mask", "aspect_mask")
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "artifacts" / "default"


class ArtifactError(RuntimeError):
    """The artifact is missing, incomplete, or fails verification."""


def default_model_dir() -> Path:
    """``ABSA_MODEL_DIR`` if set, else the model shipped in the package."""
    return Path(os.environ.get("ABSA_MODEL_DIR") or DEFAULT_MODEL_DIR)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def choose_providers(device: str, available: Sequence[str]) -> list[str]:
    """Execution providers for ``device`` (auto|cpu|cuda) given what onnxruntime offers."""
    device = device.lower()
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"ABSA_DEVICE must be auto, cpu or cuda, not {device!r}")
    has_cuda = "CUDAExecutionProvider" in available
    if device == "cuda" and not has_cuda:
        raise ArtifactError(
            f"ABSA_DEVICE=cuda but onnxruntime offers only {list(available)}; "
            "install onnxruntime-gpu on a machine with CUDA"
        )
    if device == "cuda" or (device == "auto" and has_cuda):
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


@dataclass(frozen=True)
class Output:
    """The runtime's answer for one (text, aspect span)."""

    probs: np.ndarray  # (C,)
    attention: np.ndarray  # (T,) over the item's tokens
    tokens: list[Token]
    self_attention: np.ndarray | None = None  # (heads, T, T)
    aspect_mask: tuple[int, ...] = ()  # 1 on the aspect's tokens


class Runtime:
    def __init__(
        self,
        model_dir: Path,
        metadata: dict,
        pipeline: WordPipeline | WordPiecePipeline,
        session,  # onnxruntime.InferenceSession
        max_batch: int = 64,
    ) -> None:
        self.model_dir = model_dir
        self.metadata = metadata
        self.pipeline = pipeline
        self.session = session
        self.labels: list[str] = list(metadata["labels"])
        self.max_batch = max_batch
        self.output_names = [o.name for o in session.get_outputs()]
        self.providers = session.get_providers()

    @classmethod
    def load(
        cls,
        model_dir: Path | str,
        device: str | None = None,
        threads: int | None = None,
        max_batch: int = 64,
    ) -> Runtime:
        import onnxruntime as ort

        model_dir = Path(model_dir)
        meta_path = model_dir / "metadata.json"
        if not meta_path.is_file():
            raise ArtifactError(f"{model_dir}: not a model artifact (no metadata.json)")
        try:
            metadata = json.loads(meta_path.read_text())
        except json.JSONDecodeError as e:
            raise ArtifactError(f"{meta_path}: {e}") from None
        if metadata.get("kind") != ARTIFACT_KIND:
            raise ArtifactError(
                f"{meta_path}: kind {metadata.get('kind')!r} is not {ARTIFACT_KIND!r}"
            )
        onnx_path = model_dir / metadata["onnx"]["file"]
        if not onnx_path.is_file():
            raise ArtifactError(f"{onnx_path}: missing")
        digest = sha256_file(onnx_path)
        if digest != metadata["onnx"]["sha256"]:
            raise ArtifactError(
                f"{onnx_path}: sha256 {digest[:12]}... does not match the metadata's "
                f"{metadata['onnx']['sha256'][:12]}...; refusing to load"
            )
        device = device or os.environ.get("ABSA_DEVICE", "auto")
        providers = choose_providers(device, ort.get_available_providers())
        opts = ort.SessionOptions()
        n = threads if threads is not None else int(os.environ.get("ABSA_THREADS", "0") or 0)
        if n > 0:
            opts.intra_op_num_threads = n
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=providers)
        if device == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider":
            # onnxruntime-gpu lists CUDA even where it cannot start it, then falls back silently
            raise ArtifactError(
                f"ABSA_DEVICE=cuda but the session runs on {session.get_providers()}: "
                "no usable GPU (driver, CUDA or cuDNN missing?)"
            )
        log.info(
            "loaded %s (%s) on %s (device=%s, threads=%s)",
            metadata.get("name"),
            metadata.get("version"),
            session.get_providers()[0],
            device,
            n or "default",
        )
        return cls(model_dir, metadata, load_pipeline(model_dir), session, max_batch)

    # ------------------------------------------------------------------ inference

    def encode(self, text: str, start: int, end: int) -> Encoded:
        return self.pipeline.encode(text, start, end)

    def run_batch(self, items: Sequence[Encoded]) -> list[Output]:
        """One session call on one padded batch."""
        feeds = collate(items, self.pipeline.pad_id)
        outs = self.session.run(None, feeds)
        named = dict(zip(self.output_names, outs, strict=True))
        probs, attn, selfw = named["probs"], named["attention"], named.get("self_attention")
        result = []
        for i, e in enumerate(items):
            n = len(e.ids)
            sw = None if selfw is None else selfw[i, :, :n, :n]
            result.append(Output(probs[i], attn[i, :n], e.tokens, sw, tuple(e.aspect_mask)))
        return result

    def run(self, items: Sequence[Encoded]) -> list[Output]:
        """Any number of items: bucketed by length into batches of at most ``max_batch``."""
        order = sorted(range(len(items)), key=lambda i: len(items[i].ids))
        out: list[Output | None] = [None] * len(items)
        for s in range(0, len(order), self.max_batch):
            idx = order[s : s + self.max_batch]
            for i, o in zip(idx, self.run_batch([items[i] for i in idx]), strict=True):
                out[i] = o
        return out  # type: ignore[return-value]

    def predict_proba(self, spans: Sequence[tuple[str, int, int]]) -> np.ndarray:
        outs = self.run([self.encode(t, s, e) for t, s, e in spans])
        return np.stack([o.probs for o in outs]) if outs else np.zeros((0, len(self.labels)))

    def warmup(self) -> None:
        self.run([self.encode("The food was great .", 4, 8)] * 2)


def word_weights(output: Output) -> list[tuple[Token, float]]:
    """Attention per word: special tokens dropped, word pieces ("##x") merged into their word."""
    merged: list[tuple[Token, float]] = []
    for tok, w in zip(output.tokens, output.attention.tolist(), strict=True):
        if tok.start == tok.end:  # [CLS], [SEP]
            continue
        if merged and tok.text.startswith("##") and merged[-1][0].end == tok.start:
            prev, pw = merged[-1]
            merged[-1] = (Token(prev.text + tok.text[2:], prev.start, tok.end), pw + w)
        else:
            merged.append((tok, float(w)))
    return merged
