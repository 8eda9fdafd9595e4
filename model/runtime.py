"""Run an exported artifact with onnxruntime. Never imports torch.

``Runtime.load`` opens the artifact through ``absa.model.artifact.load`` (kind, checksum,
recorded parity: the same checks wherever a model is loaded), picks the execution provider
from what onnxruntime offers (device auto|cpu|cuda), and runs batches bucketed by length.
The graph's probabilities carry the temperature; an artifact whose metadata records a
domain's temperature (``calibration.domain``, ``absa.model.domain``) and a top-label map
(``calibration.top_map``) has them applied here, in that order, to every batch.
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from absa.errors import ArtifactError, InputError
from absa.model import artifact
from absa.model.calibration import apply_top_map
from absa.model.categories import TERMS, category_words, check_task, encode_category, task_of
from absa.model.cpus import default_threads
from absa.model.domain import DomainTemperature
from absa.model.graph_labels import check_graph_labels
from absa.model.text import Encoded, Token, Tokenized, WordPiecePipeline, WordPipeline, collate

log = logging.getLogger(__name__)

INPUT_NAMES = ("input_ids", "attention_mask", "aspect_mask")  # a term model's (a category
# model's third input is category_ids: ABSANet.input_names)
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "artifacts" / "default"


def check_device(device: object) -> str:
    """``device`` in lower case if it is auto, cpu or cuda (any case), else an InputError."""
    if not isinstance(device, str) or device.lower() not in ("auto", "cpu", "cuda"):
        raise InputError(f"device must be auto, cpu or cuda, not {device!r}")
    return device.lower()


def choose_providers(device: str, available: Sequence[str]) -> list[str]:
    """Execution providers for ``device`` (auto|cpu|cuda, any case) given what onnxruntime
    offers; another device is the caller's InputError (a ValueError)."""
    device = check_device(device)
    has_cuda = "CUDAExecutionProvider" in available
    if device == "cuda" and not has_cuda:
        raise ArtifactError(
            f"device cuda asked for, but onnxruntime offers only {list(available)}; "
            "install onnxruntime-gpu on a machine with CUDA"
        )
    if device == "cuda" or (device == "auto" and has_cuda):
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def open_session(onnx_path: Path, device: str, threads: int):  # -> ort.InferenceSession
    """An onnxruntime session on ``device`` (auto|cpu|cuda), ``threads`` intra-op threads
    (0: the CPUs a cgroup quota allows where one binds, else onnxruntime's default:
    ``cpus.default_threads``); a CUDA request that cannot run on CUDA is an error."""
    import onnxruntime as ort

    device = check_device(device)  # "CUDA" must meet the fallback check below as "cuda" does
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 0:
        raise InputError(
            f"threads must be a whole number >= 0 (0: chosen from the CPUs), not {threads!r}"
        )
    threads = int(threads) or default_threads()
    providers = choose_providers(device, ort.get_available_providers())
    opts = ort.SessionOptions()
    if threads > 0:
        opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=providers)
    except Exception as e:  # onnxruntime's own classes (InvalidProtobuf, Fail, InvalidGraph...)
        raise ArtifactError(f"{onnx_path}: onnxruntime cannot open the graph: {e}") from e
    if device == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider":
        # onnxruntime-gpu lists CUDA even where it cannot start it, then falls back silently
        raise ArtifactError(
            f"device cuda asked for, but the session runs on {session.get_providers()}: "
            "no usable GPU (driver, CUDA or cuDNN missing?)"
        )
    return session


@dataclass(frozen=True)
class Output:
    """The runtime's answer for one (text, aspect span)."""

    probs: np.ndarray  # (C,)
    attention: np.ndarray  # (T,) over the item's tokens
    tokens: list[Token]
    self_attention: np.ndarray | None = None  # (heads, T, T)
    aspect_mask: tuple[int, ...] = ()  # 1 on the aspect's tokens
    oov: tuple[bool, ...] = ()  # True on tokens the vocabulary does not know (<unk>/[UNK])


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
        self.digest = artifact.metadata_digest(metadata)  # which artifact this is, whole
        self.task = task_of(metadata)
        self.categories: list[str] = list(metadata.get("categories") or [])
        # a sentence-pair category model: its items carry the category's words after the text
        self.category_pair = bool(metadata.get("model_config", {}).get("category_pair", False))
        self.max_batch = check_max_batch(max_batch)
        # fed by name from what the graph declares, never by position
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]
        self.providers = session.get_providers()
        self.top_map = top_map_of(metadata, model_dir)
        self.domain = DomainTemperature.of(metadata, model_dir)  # before the map, where any
        width = next((o.shape[-1] for o in session.get_outputs() if o.name == "probs"), None)
        if isinstance(width, int) and width != len(self.labels):  # else every request fails
            raise ArtifactError(
                f"{model_dir}: the metadata names {len(self.labels)} labels, the graph gives "
                f"{width} probabilities"
            )
        check_graph_labels(session, self.labels, model_dir)

    @classmethod
    def load(
        cls,
        model_dir: Path | str,
        device: str = "auto",
        threads: int = 0,
        max_batch: int = 64,
        require_parity: bool = True,
        task: str | None = TERMS,
    ) -> Runtime:
        """Verify the artifact, then open an onnxruntime session on it. ``threads`` 0: as
        ``open_session`` chooses; ``require_parity`` is off only for export's own check;
        ``task`` is the model kind the caller serves ("terms" or "category"; None: either),
        so a category model is never served as a term model nor the other way round."""
        art = artifact.load(model_dir, require_parity=require_parity)
        if task is not None:
            check_task(art.metadata, task, model_dir)
        session = open_session(art.onnx_path, device, threads)
        log.info(
            "loaded %s (%s) on %s (device=%s, threads=%s)",
            art.metadata.get("name"),
            art.metadata.get("version"),
            session.get_providers()[0],
            device,
            session.get_session_options().intra_op_num_threads or "onnxruntime's default",
        )
        return cls(art.directory, art.metadata, art.pipeline, session, max_batch)

    # ------------------------------------------------------------------ inference

    def encode(self, text: str, start: int, end: int) -> Encoded:
        return self.pipeline.encode(text, start, end)

    def tokenized(self, text: str) -> Tokenized:
        return self.pipeline.tokenized(text)

    def encode_span(self, tok: Tokenized, start: int, end: int) -> Encoded:
        return self.pipeline.encode_span(tok, start, end)

    def encode_category(self, text: str, category: int) -> Encoded:
        words = category_words(self.categories[category]) if self.category_pair else None
        return encode_category(self.pipeline, text, category, words)

    def run_batch(self, items: Sequence[Encoded], self_attention: bool = True) -> list[Output]:
        """One session call on one padded batch. ``self_attention=False``: the self-attention
        maps are not fetched (a model that has them answers a little faster without)."""
        batch = collate(items, self.pipeline.pad_id)
        missing = [k for k in self.input_names if k not in batch]
        if missing:
            raise ValueError(f"the {self.task} model needs {missing}; the items do not give it")
        names = [n for n in self.output_names if self_attention or n != "self_attention"]
        outs = self.session.run(names, {k: batch[k] for k in self.input_names})
        named = dict(zip(names, outs, strict=True))
        probs, attn, selfw = named["probs"], named["attention"], named.get("self_attention")
        if self.domain is not None:
            probs = self.domain.apply(probs, [e.tokens for e in items])
        if self.top_map is not None:
            probs = apply_top_map(probs, *self.top_map)
        unk = self.pipeline.unk_id
        result = []
        for i, e in enumerate(items):
            n = len(e.ids)
            sw = None if selfw is None else selfw[i, :, :n, :n]
            oov = tuple(t == unk for t in e.ids)
            result.append(Output(probs[i], attn[i, :n], e.tokens, sw, tuple(e.aspect_mask), oov))
        return result

    def run(
        self, items: Sequence[Encoded], self_attention: bool = True, max_batch: int | None = None
    ) -> list[Output]:
        """Any number of items: bucketed by length into batches of at most ``max_batch``
        (None: the runtime's own; a caller's batch size may be larger or smaller)."""
        size = self.max_batch if max_batch is None else check_max_batch(max_batch)
        out: list[Output | None] = [None] * len(items)
        for idx in batches_by_length(items, size):
            batch = self.run_batch([items[i] for i in idx], self_attention)
            for i, o in zip(idx, batch, strict=True):
                out[i] = o
        return out  # type: ignore[return-value]

    def predict_proba(self, spans: Sequence[tuple[str, int, int]]) -> np.ndarray:
        outs = self.run([self.encode(t, s, e) for t, s, e in spans])
        return np.stack([o.probs for o in outs]) if outs else np.zeros((0, len(self.labels)))

    def warmup(self) -> None:
        if self.task == TERMS:
            self.run([self.encode("The food was great .", 4, 8)] * 2)
        else:
            self.run([self.encode_category("The food was great .", 0)] * 2)


class Warms(Protocol):
    def warmup(self) -> None: ...


def first_prediction(model: Warms, model_dir: Path) -> None:
    """``model.warmup()`` (a runtime, a predictor with its extractor): a graph that opens
    but cannot run (inputs it does not take, an operator that fails) is refused as an
    ArtifactError naming ``model_dir``, before it is served or pointed at, not found by the
    first request."""
    try:
        model.warmup()
    except Exception as e:  # onnxruntime's own classes, or the runtime's checks of its output
        raise ArtifactError(f"{model_dir}: the model fails its first prediction: {e}") from e


def batches_by_length(items: Sequence[Encoded], size: int) -> list[list[int]]:
    """The indices of ``items`` in the batches ``Runtime.run`` serves them in: sorted by
    length (stable), ``size`` at a time. Whoever compares with the runtime's answers batches
    the same way: dynamic int8 scales activations over the batch, so another batching gives
    other numbers (``absa.model.recalibrate.logits``)."""
    order = sorted(range(len(items)), key=lambda i: len(items[i].ids))
    return [order[s : s + size] for s in range(0, len(order), size)]


def check_max_batch(max_batch: object) -> int:
    """``max_batch`` if it is a whole number >= 1, else an InputError (a zero step failed
    every request later, inside ``range``)."""
    if isinstance(max_batch, bool) or not isinstance(max_batch, numbers.Integral) or max_batch < 1:
        raise InputError(f"max_batch must be at least 1, not {max_batch!r}")
    return int(max_batch)


def top_map_of(metadata: dict, model_dir: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """The knots of the artifact's top-label map, checked; None when it has none."""
    cal = metadata.get("calibration")
    raw = cal.get("top_map") if isinstance(cal, dict) else None
    if raw is None:
        return None
    try:
        xs, ys = np.asarray(raw["x"], np.float64), np.asarray(raw["y"], np.float64)
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"{model_dir}: calibration.top_map is not x and y lists: {e}") from e
    ok = xs.ndim == 1 and xs.shape == ys.shape and len(xs) > 0
    ok = ok and bool(np.all(np.diff(xs) > 0) and np.all(np.diff(ys) >= 0))
    if not ok or not (np.all((ys >= 0) & (ys <= 1)) and np.all((xs >= 0) & (xs <= 1))):
        raise ArtifactError(
            f"{model_dir}: calibration.top_map must be knots in [0, 1], x strictly and y "
            "never decreasing, of one length"
        )
    return xs, ys


def words(output: Output, text: str | None = None) -> list[tuple[Token, float, bool]]:
    """(word, attention, out of vocabulary) per word: special tokens dropped, word pieces
    ("##x") merged into their word (its weight summed; unknown if any piece is), across any
    character the tokenizer dropped between them (a zero-width joiner). Where special tokens
    held some of the weight ([CLS], [SEP]), the words' weights are renormalised to sum to 1:
    the attention *over the words*. With ``text``, each word is ``text[start:end]`` as the
    caller wrote it, not the tokenizer's form (lower-cased, [UNK], normalised)."""
    merged: list[tuple[Token, float, bool]] = []
    oov = output.oov or (False,) * len(output.tokens)
    special = False
    for tok, w, unknown in zip(output.tokens, output.attention.tolist(), oov, strict=True):
        if tok.start == tok.end:  # [CLS], [SEP]
            special = True
            continue
        if merged and tok.text.startswith("##"):
            prev, pw, pu = merged[-1]
            merged[-1] = (
                Token(prev.text + tok.text[2:], prev.start, tok.end),
                pw + w,
                pu or unknown,
            )
        else:
            merged.append((tok, float(w), bool(unknown)))
    total = sum(w for _, w, _ in merged)
    if special and total > 0:
        merged = [(t, w / total, u) for t, w, u in merged]
    if text is not None:
        merged = [(Token(text[t.start : t.end], t.start, t.end), w, u) for t, w, u in merged]
    return merged


def word_weights(output: Output, text: str | None = None) -> list[tuple[Token, float]]:
    """Attention per word (see ``words``)."""
    return [(t, w) for t, w, _ in words(output, text)]
