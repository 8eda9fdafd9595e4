"""Building a tagger for training: its text pipeline, network and optimiser.

- ``encoder="embedding"``: a vocabulary of the training words plus GloVe's most frequent
  ones (+ characters) and the BiLSTM ``Tagger``, trained with Adam at a constant rate.
- ``encoder="transformer"``: the encoder's word pieces (``PieceTagText``) and the
  ``PieceTagger`` starting from the pretrained encoder, trained with AdamW (the encoder at
  ``encoder_lr``, the head at ``lr``, a CRF's transitions at ``crf_lr``), a linear warm-up
  then a linear decay to zero.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn

from absa.model.piece_tagger import PieceTagger
from absa.model.piecetext import PieceTagText
from absa.model.tagger import Tagger, TaggerConfig
from absa.model.tagtext import TagText, build_chars
from absa.model.text import TOKENIZER, WordPiecePipeline, WordPipeline
from absa.training.embeddings import build_vocab, embedding_matrix, load_glove, resolve_transformer
from absa.training.optim import adamw
from absa.training.sentences import Sentence
from absa.training.tag_config import TagTrainConfig

# ``absa train --task extract --preset NAME``: (TaggerConfig, TagTrainConfig) overrides
PRESETS: dict[str, tuple[dict, dict]] = {
    "fast": ({}, {}),  # GloVe-50d + characters -> BiLSTM 100x2, softmax tags (shipped)
    "crf": ({"crf": True}, {}),
    "accurate": (  # all-MiniLM-L6-v2 fine-tuned, first piece per word -> linear -> CRF
        {"encoder": "transformer", "dropout": 0.1, "crf": True},
        {
            "epochs": 3,
            "patience": 3,
            "batch_size": 16,
            "lr": 1e-3,
            "encoder_lr": 1e-4,
            "crf_lr": 1e-2,
            "warmup": 0.1,
            "max_pieces": 128,
        },
    ),  # fmt: skip
}


@dataclass
class Built:
    net: Tagger | PieceTagger
    text: TagText | PieceTagText
    config: TaggerConfig
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR | None  # stepped after every batch


def build(
    train: Sequence[Sentence],
    cfg: TaggerConfig,
    tcfg: TagTrainConfig,
    steps_per_epoch: int,
    tokenizer: int = TOKENIZER,
) -> Built:
    """``tokenizer``: the word tokenizer version the pipeline reads words with (a distilled
    student's is its teacher's, so that the teacher's rows are its words)."""
    if cfg.encoder == "transformer":
        return _transformer(cfg, tcfg, steps_per_epoch, tokenizer)
    glove_words, glove = load_glove(tcfg.glove)
    vocab = build_vocab([s.text for s in train], glove_words, tcfg.glove_top_k, tokenizer)
    vectors, _ = embedding_matrix(vocab, glove_words, glove, tcfg.seed)
    chars = build_chars(s.text for s in train) if tcfg.chars else None
    text = TagText(WordPipeline(vocab, max_len=tcfg.max_len, tokenizer=tokenizer), chars)
    cfg = replace(
        cfg, vocab_size=len(vocab), embed_dim=vectors.shape[1], char_vocab_size=len(chars or [])
    )
    net = Tagger(cfg, torch.from_numpy(vectors))
    opt = adamw([{"params": [p for p in net.parameters() if p.requires_grad], "lr": tcfg.lr}], 0.0)
    return Built(net, text, cfg, opt, None)


def _transformer(
    cfg: TaggerConfig, tcfg: TagTrainConfig, steps_per_epoch: int, tokenizer: int
) -> Built:
    src = resolve_transformer(tcfg.transformer)
    pieces = WordPiecePipeline(src / "tokenizer.json", max_len=tcfg.max_pieces)
    text = PieceTagText(pieces, max_words=tcfg.max_len, tokenizer=tokenizer)
    hidden = int(json.loads((src / "config.json").read_text(encoding="utf-8"))["hidden_size"])
    cfg = replace(cfg, vocab_size=len(pieces), embed_dim=hidden, char_vocab_size=0)
    net = PieceTagger(cfg, src, pretrained=True)
    opt = adamw(_groups(net, net.encoder, tcfg), weight_decay=tcfg.weight_decay)
    total = max(1, steps_per_epoch * tcfg.epochs)
    warm = max(1, int(total * tcfg.warmup))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    return Built(net, text, cfg, opt, torch.optim.lr_scheduler.LambdaLR(opt, factor))


def _groups(net: PieceTagger, encoder: nn.Module, tcfg: TagTrainConfig) -> list[dict]:
    """The encoder at ``encoder_lr``, the CRF's transitions at ``crf_lr`` (else ``lr``), the
    rest of the head at ``lr``."""
    enc = [p for p in encoder.parameters() if p.requires_grad]
    crf = list(net.crf.parameters()) if net.crf is not None else []
    taken = {id(p) for p in enc + crf}
    head = [p for p in net.parameters() if p.requires_grad and id(p) not in taken]
    groups = [{"params": head, "lr": tcfg.lr}, {"params": enc, "lr": tcfg.encoder_lr}]
    return groups + ([{"params": crf, "lr": tcfg.crf_lr or tcfg.lr}] if crf else [])
