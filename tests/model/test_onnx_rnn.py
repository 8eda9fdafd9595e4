"""Tests for model.onnx_rnn: each recurrent layer exports as one ONNX LSTM/GRU node over the
sequence lengths, and onnxruntime answers padded batches as torch does."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from absa.model.config import ModelConfig
from absa.model.export import _export_onnx
from absa.model.network import ABSANet
from absa.training.presets import PRESETS
from tests.helpers import ONNX_EXPORT_WARNINGS

pytestmark = ONNX_EXPORT_WARNINGS
VOCAB = 40


LABELS = ("negative", "neutral", "positive")  # the graph's three probs columns


def net_of(**over: object) -> ABSANet:
    base = {"vocab_size": VOCAB, "embed_dim": 8, "hidden_size": 6, "attention_dim": 8}
    cfg: ModelConfig = replace(PRESETS["fast"].model, **{**base, "dropout": 0.0, **over})
    torch.manual_seed(0)
    net = ABSANet(cfg).eval()
    with torch.no_grad():  # biases away from their init, so the gate order matters
        for name, p in net.named_parameters():
            if "bias" in name:
                p.add_(torch.randn_like(p))
    return net


def padded(lengths: list[int]) -> dict[str, np.ndarray]:
    g = np.random.default_rng(1)
    t = max(lengths)
    ids = np.zeros((len(lengths), t), dtype=np.int64)
    attn = np.zeros_like(ids)
    asp = np.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, :n] = g.integers(2, VOCAB, n)
        attn[i, :n] = 1
        asp[i, n // 2] = 1
    return {"input_ids": ids, "attention_mask": attn, "aspect_mask": asp}


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
def test_each_recurrent_layer_is_one_node_and_answers_as_torch(
    tmp_path: Path, cell: str, bidirectional: bool, layers: int
) -> None:
    net = net_of(cell=cell, bidirectional=bidirectional, layers=layers)
    path = tmp_path / "m.onnx"
    _export_onnx(net, path, self_attention=False, labels=LABELS)
    ops = Counter(n.op_type for n in onnx.load(str(path)).graph.node)
    assert ops[cell.upper()] == layers, ops  # one node per layer, both directions in it
    assert ops["GatherElements"] == 0, ops  # no per-sequence reversal left
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for lengths in ([1, 7, 4, 7, 2], [5], [3, 3]):
        feeds = padded(lengths)
        probs, attn = session.run(["probs", "attention"], feeds)
        with torch.no_grad():
            logits, alpha, _ = net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
        np.testing.assert_allclose(probs, torch.softmax(logits, -1).numpy(), atol=1e-5, rtol=0)
        np.testing.assert_allclose(attn, alpha.numpy(), atol=1e-5, rtol=0)
        # each row as if alone: the lengths, not the padding, bound every direction
        for i, n in enumerate(lengths):
            alone = {k: v[i : i + 1, :n] for k, v in feeds.items()}
            p1, _ = session.run(["probs", "attention"], alone)
            np.testing.assert_allclose(p1[0], probs[i], atol=1e-5, rtol=0)


def test_the_state_summary_is_each_directions_own_end(tmp_path: Path) -> None:
    """h_N (forward at each sequence's last token, backward at its first) feeds the output
    through W_x: with W_x the only path from h_N, a wrong end would change the answers."""
    net = net_of(layers=2, summary="last")
    path = tmp_path / "m.onnx"
    _export_onnx(net, path, self_attention=False, labels=LABELS)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = padded([2, 9, 5])
    probs, _ = session.run(["probs", "attention"], feeds)
    with torch.no_grad():
        logits, _, _ = net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
        net.w_x.weight.zero_()  # the same network without h_N answers differently
        flat, _, _ = net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    np.testing.assert_allclose(probs, torch.softmax(logits, -1).numpy(), atol=1e-5, rtol=0)
    assert np.abs(torch.softmax(flat, -1).numpy() - probs).max() > 1e-3
