"""Torch batch helpers shared by training, evaluation and distillation: encode examples,
batch them by length, build model inputs, and run a network over a data set."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

import numpy as np
import torch

from absa.model.categories import encode_example
from absa.model.network import ABSANet
from absa.model.text import Encoded, TextError, WordPiecePipeline, WordPipeline, collate
from absa.training.records import CategoryExample, DataError, Example


def encode_all(
    pipeline: WordPipeline | WordPiecePipeline,
    examples: Sequence[Example | CategoryExample],
    categories: Sequence[str] = (),
    pair: bool = False,
) -> list[Encoded]:
    """Every example encoded (a category example by its id in ``categories``, and with
    ``pair`` its words after the text); one the pipeline cannot encode is a DataError
    naming its source."""
    out = []
    for e in examples:
        try:
            out.append(encode_example(pipeline, e, categories, pair))
        except TextError as err:
            raise DataError(f"{e.source}: {err}") from None
    return out


def batches(lengths: Sequence[int], batch_size: int, rng: random.Random | None) -> list[list[int]]:
    """Index batches of similar length. Shuffled (chunks sorted by length) when ``rng`` is given."""
    idx = list(range(len(lengths)))
    if rng is None:
        idx.sort(key=lambda i: lengths[i])
        return [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]
    rng.shuffle(idx)
    chunk = batch_size * 50
    out: list[list[int]] = []
    for c in range(0, len(idx), chunk):
        part = sorted(idx[c : c + chunk], key=lambda i: lengths[i])
        out.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(out)
    return out


def to_tensors(
    items: Sequence[Encoded],
    pad_id: int,
    cache: Sequence[torch.Tensor] | None = None,
    device: torch.device | None = None,
) -> dict[str, torch.Tensor]:
    """Model inputs for a batch (on ``device``); with ``cache`` (one (T_i, E) tensor per
    item, in the order of ``items``) also the padded ``features`` of a frozen encoder."""
    out = {k: torch.from_numpy(v) for k, v in collate(items, pad_id).items()}
    if cache is not None:
        out["features"] = torch.nn.utils.rnn.pad_sequence(list(cache), batch_first=True).float()
    if device is not None:
        out = {k: v.to(device) for k, v in out.items()}
    return out


def device_of(net: ABSANet) -> torch.device:
    return next(net.parameters()).device


@torch.no_grad()
def cache_features(net: ABSANet, encoded: Sequence[Encoded], pad_id: int) -> list[torch.Tensor]:
    """Run a frozen encoder once over the data: one (T_i, E) half-precision tensor per item."""
    net.encoder.eval()
    out: list[torch.Tensor] = [torch.empty(0)] * len(encoded)
    for b in batches([len(e.ids) for e in encoded], 64, None):
        inputs = to_tensors([encoded[i] for i in b], pad_id, device=device_of(net))
        x = net.encoder(inputs["input_ids"], inputs["attention_mask"], inputs.get("token_type_ids"))
        for j, i in enumerate(b):
            out[i] = x[j, : len(encoded[i].ids)].half()
    return out


def seed_everything(seed: int, device: torch.device | None = None) -> None:
    """Every generator a run draws from, seeded; on a GPU also torch's deterministic
    kernels (cuDNN's RNNs, scatter-adds: warned where an op has none), so the same command
    gives the same weights there too, as it does on the CPU."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if device is not None and device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True, warn_only=True)


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA when torch sees a GPU, else the CPU; ``cuda`` without one is an error."""
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no CUDA GPU")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


@torch.no_grad()
def predict_probs(
    net: ABSANet,
    encoded: Sequence[Encoded],
    pad_id: int,
    batch_size: int = 256,
    cache: Sequence[torch.Tensor] | None = None,
) -> np.ndarray:
    """Class probabilities (N, C) in the input order."""
    net.eval()
    out = np.zeros((len(encoded), len(net.cfg.labels)), dtype=np.float32)
    for b in batches([len(e.ids) for e in encoded], batch_size, None):
        feats = [cache[i] for i in b] if cache is not None else None
        inputs = to_tensors([encoded[i] for i in b], pad_id, feats, device_of(net))
        logits, _, _ = net(**inputs)
        out[b] = torch.softmax(logits, -1).float().cpu().numpy()
    return out
