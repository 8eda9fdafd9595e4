"""The attention LSTM/GRU family (ATAE-LSTM, Wang et al. 2016, and refinements).

One configurable network; every piece is chosen by ``ModelConfig``:

- word vectors: an embedding table (GloVe) or a pretrained transformer encoder;
- aspect vector v_a: the mean of the aspect tokens' vectors, or (``aspect_source=
  "category"``, Wang et al.'s own task) a learned embedding of the aspect category, fed as
  ``category_ids`` instead of ``aspect_mask``; a sentence-pair category model
  (``category_pair``) feeds the encoder ``[CLS] text [SEP] category words [SEP]`` with
  ``token_type_ids``, adds the category words' mean state to v_a, and runs everything after
  the encoder over the text's segment only;
- AE: v_a concatenated to every word input of the LSTM/GRU. For the GRU this puts
  v_a in the reset gate, the update gate and the candidate (each sees
  [h_{t-1}; x_t; v_a]);
- aspect attention over the hidden states H (additive, scaled dot-product with
  sinusoidal positions, bilinear, dot);
- optional learned scales on the positional encodings (``positional_scale="learned"``);
- an optional multi-head self-attention layer over H (residual + LayerNorm, or pre-LN with a
  learned residual gate that starts closed), with optional dropout on its weights. It runs
  before the aspect attention: r pools the self-attended states (with positions, H + P),
  while h_N below is the RNN's own state. With two or more recurrent layers it may run
  between the first and the second instead (``self_attention_at="between"``);
- h* = tanh(W_p r + W_x h_N), then a linear layer to the label logits (h_N: the last
  state, or with ``summary="aspect"`` the mean state over the aspect span).

Padding is handled by masks, never by packing, so the exported graph keeps dynamic
batch and length axes and padding cannot change any output. The backward direction
of a bidirectional RNN runs on each sequence reversed within its own length; exported,
each layer is one ONNX LSTM/GRU node over the sequence lengths (``absa.model.onnx_rnn``).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from absa.model.config import ModelConfig
from absa.model.onnx_rnn import recurrence


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, with masked-out positions given zero weight (the dtype's
    lowest value: a fixed -1e9 overflows float16, which mixed precision would run in)."""
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)


def sinusoid(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal encodings (Vaswani et al.) of float positions: (...,) -> (..., dim)."""
    half = (dim + 1) // 2
    freq = torch.exp(
        torch.arange(half, dtype=torch.float32, device=positions.device)
        * (-math.log(10000.0) / half)
    )
    if torch.onnx.is_in_onnx_export():
        # the same values in three graph nodes instead of a dozen (cos x = sin(x + pi/2), to
        # float32 rounding; the frequencies a constant): at batch 1 a served graph's time goes
        # mostly to its node count
        freq2 = torch.tensor(freq.repeat_interleave(2)[:dim].tolist(), dtype=torch.float32)
        phase = torch.tensor([0.0, math.pi / 2] * half, dtype=torch.float32)[:dim]
        return torch.sin(positions.float().unsqueeze(-1) * freq2 + phase)
    angles = positions.float().unsqueeze(-1) * freq  # (..., half)
    enc = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)  # (..., 2*half)
    return enc[..., :dim]


def _span_ends(aspect: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(1, T) token indices and the (B, 1) first and last index of each item's aspect span."""
    b, t = aspect.shape
    steps = torch.arange(t, device=aspect.device, dtype=aspect.dtype).unsqueeze(0)  # (1, T)
    far = 1e4 * (1.0 - aspect)
    first = (steps + far).min(1, keepdim=True).values  # (B, 1)
    last = (steps - far).max(1, keepdim=True).values
    return steps, first, last


def relative_positions(aspect: torch.Tensor) -> torch.Tensor:
    """(B, T) signed distance of token t from the aspect span: negative before it, 0 inside,
    positive after."""
    steps, first, last = _span_ends(aspect)
    return (steps - first).clamp(max=0) + (steps - last).clamp(min=0)


def proximity(aspect: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T) weights 1 - d_t / n: d_t the distance of token t from the aspect span (0
    inside it), n the item's length; 0 on padding. An item with no aspect token, or of no
    token at all, is not guarded here (its weights are meaningless, NaN for n = 0): the text
    pipeline refuses both before a graph sees them (model/text.py)."""
    steps, first, last = _span_ends(aspect)
    dist = (first - steps).clamp(min=0) + (steps - last).clamp(min=0)
    n = mask.to(aspect.dtype).sum(1, keepdim=True)
    return (1.0 - dist / n) * mask.to(aspect.dtype)


class WordEncoder(nn.Module):
    """Word vectors from an embedding table (row 0 = padding)."""

    def __init__(self, cfg: ModelConfig, vectors: torch.Tensor | None = None) -> None:
        super().__init__()
        self.table = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=0)
        if vectors is not None:
            if tuple(vectors.shape) != (cfg.vocab_size, cfg.embed_dim):
                raise ValueError(f"vectors {tuple(vectors.shape)} do not fit the config")
            with torch.no_grad():
                self.table.weight.copy_(vectors)
        self.table.weight.requires_grad_(not cfg.freeze_embeddings)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.table(input_ids)  # (B, T, E)


class TransformerEncoder(nn.Module):
    """A pretrained Hugging Face encoder (e.g. all-MiniLM-L6-v2) as the word layer."""

    def __init__(self, cfg: ModelConfig, path: Path, pretrained: bool) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel

        if pretrained:
            self.model = AutoModel.from_pretrained(str(path), local_files_only=True)
        else:  # weights come from the run's state dict
            self.model = AutoModel.from_config(AutoConfig.from_pretrained(str(path)))
        self.model.float()  # whatever the files say (float16 shards: encoder_shards.py)
        self.frozen = cfg.freeze_embeddings
        if self.frozen:
            self.model.requires_grad_(False)
        elif not cfg.tune_word_pieces:
            # the 30k x 384 word-piece table is half the encoder's weights: tuning it on a few
            # thousand examples costs most of the optimiser's time and tends to overfit
            self.model.get_input_embeddings().requires_grad_(False)

    def train(self, mode: bool = True) -> TransformerEncoder:
        super().train(mode)
        if self.frozen:
            self.model.eval()  # a frozen encoder never uses dropout
        return self

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        # MPNet takes no token types: passed only when there are some (sentence pairs)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **extra)
        return out.last_hidden_state  # (B, T, E)


class _Directions(nn.Module):
    """One LSTM/GRU layer's weights, forward and (``cfg.bidirectional``) backward, and its
    run over right-padded batches (``layer``): H (B, T, D), zero at padding, and h_N (B, D)."""

    def __init__(self, cfg: ModelConfig, input_dim: int) -> None:
        super().__init__()
        rnn_cls = nn.LSTM if cfg.cell == "lstm" else nn.GRU
        self.cell = cfg.cell
        self.hidden = cfg.hidden_size
        self.fwd = rnn_cls(input_dim, cfg.hidden_size, batch_first=True)
        self.bwd = (
            rnn_cls(input_dim, cfg.hidden_size, batch_first=True) if cfg.bidirectional else None
        )
        for rnn in (self.fwd, self.bwd):
            if rnn is not None:
                self._init(rnn)

    def _init(self, rnn: nn.RNNBase) -> None:
        gates = 4 if self.cell == "lstm" else 3
        h = self.hidden
        for name, p in rnn.named_parameters():
            if name.startswith("weight_hh"):
                for g in range(gates):  # orthogonal recurrent weights, one block per gate
                    nn.init.orthogonal_(p.data[g * h : (g + 1) * h])
            elif name.startswith("weight_ih"):  # over the stacked gates' matrix, not per
                nn.init.xavier_uniform_(p.data)  # gate (a smaller bound: the runs' init)
            elif name.startswith("bias"):
                nn.init.zeros_(p.data)
                if self.cell == "lstm" and name.startswith("bias_ih"):
                    p.data[h : 2 * h] = 1.0  # forget-gate bias 1 (gate order i, f, g, o)

    def _run(self, rnn: nn.RNNBase, x: torch.Tensor) -> torch.Tensor:
        h0 = x.new_zeros(1, x.size(0), self.hidden)
        out, _ = rnn(x, (h0, h0) if self.cell == "lstm" else h0)
        return out

    def layer(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, _ = x.shape
        lengths = mask.long().sum(1)  # (B,)
        steps = torch.arange(t, device=x.device).unsqueeze(0).expand(b, t)  # (B, T)
        last = (lengths - 1).clamp(min=0)
        out = self._run(self.fwd, x)  # (B, T, h): padding comes after, so valid steps are exact
        h_n = out.gather(1, last.view(b, 1, 1).expand(b, 1, self.hidden)).squeeze(1)
        if self.bwd is not None:
            # reverse each sequence within its own length: t -> len-1-t, padding stays put
            rev = torch.where(steps < lengths.unsqueeze(1), last.unsqueeze(1) - steps, steps)
            rev_x = rev.unsqueeze(-1).expand(b, t, x.size(-1))
            out_b = self._run(self.bwd, x.gather(1, rev_x))
            out_b = out_b.gather(1, rev.unsqueeze(-1).expand(b, t, self.hidden))
            out = torch.cat([out, out_b], dim=-1)
            h_n = torch.cat([h_n, out_b[:, 0]], dim=-1)
        if torch.onnx.is_in_onnx_export():  # one LSTM/GRU node with the lengths, not ~20
            cells = [self.fwd] + ([self.bwd] if self.bwd is not None else [])
            out, h_n = recurrence(out, h_n, x, lengths, cells, self.cell, self.hidden)
        return out * mask.unsqueeze(-1).to(out.dtype), h_n


class RecurrentLayer(_Directions):
    """One LSTM/GRU layer: ``forward`` returns H (B, T, D), zero at padding, and h_N (B, D)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.layer(x, mask)


class MaskedRNN(_Directions):
    """``cfg.layers`` stacked recurrent layers; H and h_N are the top one's. The first layer's
    weights are this module's own (``fwd``, ``bwd``: a one-layer run's names, so older runs
    load), those above it in ``upper``, each reading both directions of the one below through
    ``cfg.layer_dropout``."""

    def __init__(self, cfg: ModelConfig, input_dim: int) -> None:
        super().__init__(cfg, input_dim)
        self.upper = nn.ModuleList(RecurrentLayer(cfg, cfg.rnn_dim) for _ in range(cfg.layers - 1))
        self.between = nn.Dropout(cfg.layer_dropout)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, mid: SelfAttention | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """H and h_N of the top layer, with ``mid`` (if any) over the first layer's states
        before the second reads them; its weights third (None without it). A hook on this
        module sees H first (the state hint's)."""
        out, h_n = self.layer(x, mask)
        weights = None
        if mid is not None:
            out, weights = mid(out, mask)
        for layer in self.upper:
            out, h_n = layer(self.between(out), mask)
        return out, h_n, weights


class AspectAttention(nn.Module):
    """alpha = softmax(score(H, v_a)) over the valid tokens; r = H alpha^T."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.kind = cfg.attention
        d, e, da = cfg.rnn_dim, cfg.embed_dim, cfg.attention_dim
        if self.kind == "additive":
            # Wang et al. write M = tanh([W_h H; W_v v_a (x) e_N]), alpha = softmax(w^T M). Taken
            # literally, w's v_a half adds the same number at every step and cancels in the
            # softmax, so the aspect would never move the attention. We use the joint form that
            # public ATAE code uses: M = tanh(W_h H + W_v v_a (x) e_N), i.e. tanh(W [h_t; v_a]).
            self.w_h = nn.Linear(d, d + e, bias=False)
            self.w_v = nn.Linear(e, d + e, bias=False)
            self.w = nn.Linear(d + e, 1, bias=False)
        elif self.kind in ("scaled_dot", "dot"):
            self.w_h = nn.Linear(d, da, bias=False)
            self.w_v = nn.Linear(e, da, bias=cfg.attention_query_bias)
            self.scale = 1.0 / math.sqrt(da) if self.kind == "scaled_dot" else 1.0
        elif self.kind == "bilinear":
            self.w_b = nn.Linear(e, d, bias=False)
        else:
            raise ValueError(f"no attention module for {self.kind!r}")

    def forward(
        self, h: torch.Tensor, v_a: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.kind == "additive":
            m = torch.tanh(self.w_h(h) + self.w_v(v_a).unsqueeze(1))  # (B, T, d+e)
            scores = self.w(m).squeeze(-1)  # (B, T)
        elif self.kind == "bilinear":
            scores = torch.bmm(h, self.w_b(v_a).unsqueeze(-1)).squeeze(-1)  # h_t^T W v_a
        else:
            q = self.w_v(v_a).unsqueeze(-1)  # (B, da, 1)
            scores = torch.bmm(self.w_h(h), q).squeeze(-1) * self.scale  # (B, T)
        alpha = masked_softmax(scores, mask)  # (B, T)
        r = torch.bmm(alpha.unsqueeze(1), h).squeeze(1)  # (B, D)
        return r, alpha


class PositionalEncoding(nn.Module):
    """H' = H + s_h P and v_a' = v_a + s_a p_a (eq. 4): s fixed at 1, or learned scalars
    starting at ``positional_init`` (``positional_scale="learned"``)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.scale_h: nn.Parameter | None = None
        self.scale_a: nn.Parameter | None = None
        if cfg.positional_scale == "learned":
            self.scale_h = nn.Parameter(torch.tensor(cfg.positional_init))
            self.scale_a = nn.Parameter(torch.tensor(cfg.positional_init))

    def forward(
        self,
        h: torch.Tensor,
        mask: torch.Tensor,
        v_a: torch.Tensor,
        p_a: torch.Tensor | None,
        steps: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``steps``: (B, T) positions of the tokens (default: 0..T-1 for every item)."""
        if steps is None:
            steps = torch.arange(h.size(1), device=h.device, dtype=h.dtype).unsqueeze(0)
        p = sinusoid(steps, h.size(-1)) * mask.unsqueeze(-1).to(h.dtype)  # (B, T, D)
        h = h + (p if self.scale_h is None else self.scale_h * p)
        if p_a is not None:  # a category has no position in the text
            pa = sinusoid(p_a, v_a.size(-1))  # (B, E)
            v_a = v_a + (pa if self.scale_a is None else self.scale_a * pa)
        return h, v_a


class SelfAttention(nn.Module):
    """Multi-head softmax(QK^T/sqrt(d_k))V over the hidden states: LayerNorm(H + SA(H)), or
    (``self_attention_residual="gated"``) H + g * SA(LayerNorm(H)) with g starting at 0.
    Q and K have ``self_attention_dim`` channels (D when 0); V is W_v x with an output
    projection, or (``self_attention_value="states"``) the states x themselves."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.rnn_dim
        self.heads = cfg.self_attention_heads
        self.dk = cfg.self_attention_dim or d
        self.project_v = cfg.self_attention_value == "projected"
        self.qkv = nn.Linear(d, 2 * self.dk + (d if self.project_v else 0))
        self.out = nn.Linear(d, d) if self.project_v else None
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(cfg.dropout)
        self.attn_drop = nn.Dropout(cfg.self_attention_dropout)
        self.gate = nn.Parameter(torch.zeros(d)) if cfg.self_attention_residual == "gated" else None
        self.window = cfg.self_attention_window

    def keys(self, mask: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1 | T, T): the keys each query may attend to: the words, within the window
        of the query's position when there is one."""
        b, t = mask.shape
        keys = mask.view(b, 1, 1, t)
        if not self.window:
            return keys
        steps = torch.arange(t, device=mask.device)
        band = (steps.view(1, t) - steps.view(t, 1)).abs() <= self.window  # (T, T)
        return keys & band.view(1, 1, t, t)

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, d = h.shape
        x = h if self.gate is None else self.norm(h)  # pre-LN when gated
        proj = self.qkv(x)
        q, k = proj[..., : self.dk], proj[..., self.dk : 2 * self.dk]
        v = proj[..., 2 * self.dk :] if self.project_v else x
        if self.heads == 1:  # the same product without the heads' reshapes (fewer graph nodes)
            scores = (q @ k.transpose(-1, -2) / math.sqrt(self.dk)).unsqueeze(1)  # (B, 1, T, T)
            weights = masked_softmax(scores, self.keys(mask))
            ctx = self.attn_drop(weights).squeeze(1) @ v  # (B, T, D)
        else:
            q, k = (z.view(b, t, self.heads, self.dk // self.heads).transpose(1, 2) for z in (q, k))
            v = v.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.dk // self.heads)  # (B, h, T, T)
            weights = masked_softmax(scores, self.keys(mask))
            ctx = (self.attn_drop(weights) @ v).transpose(1, 2).reshape(b, t, d)
        if self.out is not None:
            ctx = self.out(ctx)
        if self.gate is None:
            out = self.norm(h + self.drop(ctx))
        else:
            out = h + self.gate * self.drop(ctx)
        return out * mask.unsqueeze(-1).to(out.dtype), weights


class ABSANet(nn.Module):
    """forward(input_ids, attention_mask, aspect_mask | category_ids [, token_type_ids]) ->
    (logits, attention, self_attention). ``input_names`` are the graph inputs in the order
    the export uses."""

    def __init__(
        self,
        cfg: ModelConfig,
        vectors: torch.Tensor | None = None,
        encoder_path: Path | None = None,
        pretrained_encoder: bool = False,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        if cfg.encoder == "embedding":
            self.encoder: WordEncoder | TransformerEncoder = WordEncoder(cfg, vectors)
        else:
            if encoder_path is None:
                raise ValueError("a transformer encoder needs encoder_path")
            self.encoder = TransformerEncoder(cfg, encoder_path, pretrained_encoder)
        # v_a of an aspect category: a learned vector per category, in the word vectors' space
        self.category = (
            nn.Embedding(len(cfg.categories), cfg.embed_dim) if cfg.is_category else None
        )
        in_dim = cfg.embed_dim * (2 if cfg.aspect_in_input else 1) + 2 * cfg.aspect_features
        self.drop = nn.Dropout(cfg.dropout)
        self.rnn = MaskedRNN(cfg, in_dim)
        self.positions = PositionalEncoding(cfg) if cfg.positional else None
        self.self_attn = SelfAttention(cfg) if cfg.self_attention_heads else None
        self.attn = AspectAttention(cfg) if cfg.attention != "none" else None
        d = cfg.rnn_dim
        if self.attn is not None:
            self.w_p = nn.Linear(d, d, bias=False)
            self.w_x = nn.Linear(d, d, bias=False)
        self.classifier = nn.Linear(d, len(cfg.labels))

    @property
    def input_names(self) -> tuple[str, ...]:
        aspect = "category_ids" if self.category is not None else "aspect_mask"
        pair = ("token_type_ids",) if self.cfg.pair else ()
        return ("input_ids", "attention_mask", aspect, *pair)

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T) int64
        attention_mask: torch.Tensor,  # (B, T) 1 = token, 0 = padding
        aspect_mask: torch.Tensor | None = None,  # (B, T) 1 = aspect token (term models)
        features: torch.Tensor | None = None,  # (B, T, E) cached encoder output (frozen encoder)
        category_ids: torch.Tensor | None = None,  # (B,) int64 (category models)
        token_type_ids: torch.Tensor | None = None,  # (B, T) 0 text, 1 category words (pairs)
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        cfg = self.cfg
        mask = attention_mask > 0
        b, t = input_ids.shape
        if cfg.pair and token_type_ids is None:
            raise ValueError("a sentence-pair category model needs token_type_ids")
        if features is None:
            x = self.encoder(input_ids, attention_mask, token_type_ids)  # (B, T, E)
        else:
            x = features
        if self.category is not None:
            if category_ids is None:
                raise ValueError("a category model needs category_ids")
            am = torch.zeros_like(attention_mask, dtype=x.dtype)  # no span in the text
            n_asp = torch.ones(b, 1, dtype=x.dtype, device=x.device)
            v_a = self.category(category_ids).to(x.dtype)  # (B, E)
            if cfg.pair and token_type_ids is not None:
                words = (mask & (token_type_ids > 0)).to(x.dtype)  # (B, T) category words [SEP]
                n_words = words.sum(1, keepdim=True).clamp(min=1.0)
                v_a = v_a + (x * words.unsqueeze(-1)).sum(1) / n_words
                mask = mask & (token_type_ids == 0)  # from here on: [CLS] text [SEP] only
        else:
            if aspect_mask is None:
                raise ValueError("an aspect-term model needs aspect_mask")
            am = (aspect_mask * attention_mask).to(x.dtype)  # (B, T)
            n_asp = am.sum(1, keepdim=True).clamp(min=1.0)  # (B, 1)
            v_a = (x * am.unsqueeze(-1)).sum(1) / n_asp  # (B, E) mean of the aspect's vectors
        inp = torch.cat([x, v_a.unsqueeze(1).expand(b, t, -1)], -1) if cfg.aspect_in_input else x
        inp = self.drop(inp)
        if cfg.aspect_features:  # where the aspect is, after the dropout: never dropped
            inp = torch.cat([inp, am.unsqueeze(-1), proximity(am, mask).unsqueeze(-1)], -1)
        between = cfg.self_attention_at == "between"
        h, h_n, self_w = self.rnn(inp, mask, self.self_attn if between else None)
        if cfg.summary != "last":  # the states over the aspect span (alone, or with the end)
            h_asp = (h * am.unsqueeze(-1)).sum(1) / n_asp
            h_n = h_asp if cfg.summary == "aspect" else 0.5 * (h_n + h_asp)
        if cfg.position_weighting:
            h = h * proximity(am, mask).unsqueeze(-1)
        if self.positions is not None:
            p_a, steps = None, None  # the aspect's position; a category has none
            if self.category is not None:
                pass
            elif cfg.positional_origin == "aspect":
                steps = relative_positions(am)  # (B, T), 0 on the aspect
                p_a = torch.zeros(b, device=x.device, dtype=x.dtype)
            else:
                index = torch.arange(t, device=x.device, dtype=x.dtype)
                p_a = (am * index.unsqueeze(0)).sum(1) / n_asp.squeeze(1)  # (B,)
            h, v_a = self.positions(h, mask, v_a, p_a, steps)
        if self.self_attn is not None and not between:
            h, self_w = self.self_attn(h, mask)
        if self.attn is not None:
            r, alpha = self.attn(h, v_a, mask)
            feat = torch.tanh(self.w_p(r) + self.w_x(h_n))  # h* = tanh(W_p r + W_x h_N)
        else:  # no attention: the last state decides; show that as all weight on h_N
            feat = h_n
            alpha = F.one_hot((mask.long().sum(1) - 1).clamp(min=0), t).to(x.dtype)
        logits = self.classifier(self.drop(feat))  # (B, C)
        return logits, alpha, self_w


class ExportWrapper(nn.Module):
    """What goes into ONNX: probabilities and attention, named and in a fixed order. The
    inputs are positional here and keyed by ``net.input_names`` (a term model's third input
    is ``aspect_mask``, a category model's ``category_ids``; a sentence-pair model's fourth
    ``token_type_ids``). The probabilities are
    ``softmax(logits / temperature)`` (temperature scaling; 1: none)."""

    def __init__(self, net: ABSANet, temperature: float = 1.0) -> None:
        super().__init__()
        self.net = net
        self.temperature = float(temperature)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        named = dict(zip(self.net.input_names, inputs, strict=True))
        logits, alpha, self_w = self.net(**named)
        probs = torch.softmax(logits / self.temperature, dim=-1)  # (B, C)
        return (probs, alpha) if self_w is None else (probs, alpha, self_w)
