"""The aspect term tagger: BIO tags per word from a BiLSTM over word vectors.

Same family and text pipeline as the sentiment network (``absa.model.network``): the same
word table (GloVe rows, row 0 = padding) and the same masked BiLSTM, which runs the backward
direction on each sequence reversed within its own length, so a right-padded batch gives each
sentence exactly the tags it gets alone and the ONNX graph keeps dynamic batch and length.

``forward`` returns the tag logits (B, T, K); with ``tags`` it also returns the token-level
cross-entropy over the real (unpadded) tokens, or with ``crf`` the CRF's negative
log-likelihood (``absa.model.crf``). Decoding (BIO-constrained Viterbi over the
tag log-probabilities) lives in ``absa.model.spans``, shared with serving.
"""

from __future__ import annotations

import torch
from torch import nn

from absa.model.crf import CRF, tag_loss
from absa.model.network import MaskedRNN, WordEncoder
from absa.model.spans import Transitions
from absa.model.tagger_config import TaggerConfig

__all__ = ["CharCNN", "Tagger", "TaggerConfig", "TaggerExport"]


class CharCNN(nn.Module):
    """A word from its characters (as written, case kept): embed, width-3 convolution, max
    over the characters. Character id 0 is padding."""

    def __init__(self, cfg: TaggerConfig) -> None:
        super().__init__()
        self.table = nn.Embedding(cfg.char_vocab_size, cfg.char_dim, padding_idx=0)
        self.conv = nn.Conv1d(cfg.char_dim, cfg.char_filters, kernel_size=3, padding=1)

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        b, t, c = char_ids.shape
        x = self.table(char_ids.reshape(b * t, c)).transpose(1, 2)  # (B*T, C_dim, chars)
        h = torch.relu(self.conv(x))  # (B*T, F, chars)
        pad = (char_ids.reshape(b * t, 1, c) == 0).to(h.dtype)
        h = (h - pad * 1e4).amax(dim=2).clamp(min=0.0)  # padding never wins the max
        return h.reshape(b, t, -1)  # (B, T, F)


class Tagger(nn.Module):
    """Word vectors (+ a character CNN) -> stacked masked BiLSTM -> linear -> tag logits."""

    def __init__(self, cfg: TaggerConfig, vectors: torch.Tensor | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.words = WordEncoder(cfg.rnn_config(cfg.embed_dim), vectors)
        self.chars = CharCNN(cfg) if cfg.char_vocab_size else None
        d_in = cfg.embed_dim + (cfg.char_filters if self.chars is not None else 0)
        dims = [d_in] + [2 * cfg.hidden_size] * (cfg.layers - 1)
        self.rnns = nn.ModuleList(MaskedRNN(cfg.rnn_config(d), d) for d in dims)
        self.drop = nn.Dropout(cfg.dropout)
        self.crf = CRF() if cfg.crf else None
        self.out = nn.Linear(2 * cfg.hidden_size, len(cfg.tags))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        char_ids: torch.Tensor | None = None,
        tags: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = self.words(input_ids, attention_mask)  # (B, T, E)
        if self.chars is not None:
            if char_ids is None:
                raise ValueError("this tagger reads characters: pass char_ids")
            x = torch.cat([x, self.chars(char_ids)], dim=-1)  # (B, T, E + F)
        x = self.drop(x)
        for rnn in self.rnns:
            x, _, _ = rnn(x, attention_mask)  # (B, T, 2H), zero on padding
            x = self.drop(x)
        logits = self.out(x)  # (B, T, K)
        loss = tag_loss(self.crf, logits, tags, attention_mask) if tags is not None else None
        return logits, loss

    def transitions(self) -> Transitions | None:
        return self.crf.transitions() if self.crf is not None else None  # for decoding


class TaggerExport(nn.Module):
    """What the ONNX graph computes: the tag probabilities (B, T, K), from the inputs
    ``names`` (in this order) of a word tagger or a transformer tagger."""

    def __init__(self, net: nn.Module, names: list[str]) -> None:
        super().__init__()
        self.net = net
        self.names = list(names)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        logits, _ = self.net(**dict(zip(self.names, inputs, strict=True)))
        return torch.softmax(logits, dim=-1)
