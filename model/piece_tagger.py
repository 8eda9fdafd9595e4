"""The accurate aspect term tagger: a pretrained transformer encoder fine-tuned for BIO tags.

Word pieces -> the encoder (``absa.model.network.TransformerEncoder``, e.g. the packaged
all-MiniLM-L6-v2) -> each word's first piece (``word_starts``) -> dropout -> linear -> tag
logits per word (B, T, K). Same outputs and decoding as ``absa.model.tagger.Tagger``, so the
export, the artifact and the ``Extractor`` serve either; the inputs are those of
``absa.model.piecetext.PieceTagText``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from absa.model.config import ModelConfig
from absa.model.crf import CRF, tag_loss
from absa.model.network import TransformerEncoder
from absa.model.spans import Transitions
from absa.model.tagger_config import TaggerConfig


class PieceTagger(nn.Module):
    def __init__(self, cfg: TaggerConfig, encoder_path: Path, pretrained: bool = False) -> None:
        super().__init__()
        if cfg.encoder != "transformer":
            raise ValueError("a PieceTagger needs encoder='transformer'")
        self.cfg = cfg
        enc_cfg = ModelConfig(encoder="transformer", embed_dim=cfg.embed_dim,
                              freeze_embeddings=cfg.freeze_embeddings)  # fmt: skip
        self.encoder = TransformerEncoder(enc_cfg, encoder_path, pretrained)
        self.drop = nn.Dropout(cfg.dropout)
        self.crf = CRF() if cfg.crf else None
        self.out = nn.Linear(cfg.embed_dim, len(cfg.tags))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        word_starts: torch.Tensor,
        word_mask: torch.Tensor,
        tags: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = self.encoder(input_ids, attention_mask)  # (B, P, E)
        idx = word_starts.unsqueeze(-1).expand(-1, -1, h.shape[-1])  # (B, T, E)
        x = self.drop(torch.gather(h, 1, idx))  # (B, T, E): each word's first piece
        logits = self.out(x)  # (B, T, K)
        loss = tag_loss(self.crf, logits, tags, word_mask) if tags is not None else None
        return logits, loss

    def transitions(self) -> Transitions | None:
        return self.crf.transitions() if self.crf is not None else None  # for decoding
