"""The tagger's configuration: one frozen dataclass, stored with every run and artifact.
No torch (``absa evaluate`` and the service read it without)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from absa.model.config import ModelConfig
from absa.model.spans import TAGS


@dataclass(frozen=True)
class TaggerConfig:
    encoder: str = "embedding"  # word table + BiLSTM, or "transformer" (word pieces, linear head)
    vocab_size: int = 2  # embedding rows (set from the vocabulary at training time)
    embed_dim: int = 50  # E
    freeze_embeddings: bool = False
    char_vocab_size: int = 0  # characters known (0 = no character CNN)
    char_dim: int = 30  # C, a character's vector
    char_filters: int = 50  # F, the character CNN's output per word (width-3 filters)
    hidden_size: int = 100  # H per direction
    layers: int = 1  # stacked BiLSTM layers
    dropout: float = 0.5  # on the word vectors and on the BiLSTM output
    crf: bool = False  # a linear-chain CRF loss; its learned transitions decode at serve time
    tags: tuple[str, ...] = TAGS

    def __post_init__(self) -> None:
        if self.encoder not in ("embedding", "transformer"):
            raise ValueError(f"encoder must be embedding or transformer, not {self.encoder!r}")
        if tuple(self.tags) != TAGS:
            raise ValueError(f"tags must be {TAGS}, not {self.tags}")
        for name in ("embed_dim", "char_dim", "char_filters", "hidden_size", "layers"):
            if getattr(self, name) < 1:  # torch found them after the data was read
                raise ValueError(f"{name} must be >= 1, not {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")

    def rnn_config(self, input_dim: int) -> ModelConfig:
        """The sentiment network's config for one shared building block (table or BiLSTM)."""
        return ModelConfig(
            vocab_size=self.vocab_size,
            embed_dim=input_dim,
            freeze_embeddings=self.freeze_embeddings,
            cell="lstm",
            bidirectional=True,
            hidden_size=self.hidden_size,
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tags"] = list(self.tags)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TaggerConfig:
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown tagger config keys: {sorted(unknown)}")
        d = dict(d)
        if "tags" in d:
            d["tags"] = tuple(d["tags"])
        return cls(**d)

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: Path) -> TaggerConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))
