"""The network's configuration: one frozen dataclass, stored with every run and artifact."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal

from absa.model.jsonio import read_json
from absa.model.text import LABELS
from absa.model.typed import typed_fields

Cell = Literal["lstm", "gru"]
Attention = Literal["none", "additive", "scaled_dot", "bilinear", "dot"]
Encoder = Literal["embedding", "transformer"]
Summary = Literal["last", "aspect", "both"]
AspectSource = Literal["terms", "category"]
PositionalScale = Literal["fixed", "learned"]
PositionalOrigin = Literal["start", "aspect"]
SelfAttentionResidual = Literal["postln", "gated"]
SelfAttentionValue = Literal["projected", "states"]
SelfAttentionAt = Literal["top", "between"]


@dataclass(frozen=True)
class ModelConfig:
    # word representation
    encoder: Encoder = "embedding"  # GloVe-style table, or a pretrained transformer
    vocab_size: int = 2  # embedding rows (set from the vocabulary at training time)
    embed_dim: int = 50  # E (the transformer's hidden size when encoder="transformer")
    freeze_embeddings: bool = False  # frozen table / frozen transformer
    tune_word_pieces: bool = False  # fine-tuning a transformer: also tune its word-piece table
    # recurrent layer
    cell: Cell = "lstm"
    bidirectional: bool = False
    hidden_size: int = 300  # per direction
    # stacked recurrent layers: each above the first reads the one below's states (both
    # directions), with ``layer_dropout`` between them; the attention and the classifier
    # read the top one's
    layers: int = 1
    layer_dropout: float = 0.2
    # v_a: the mean of the aspect term's word vectors ("terms"), or a learned embedding of
    # one of ``categories`` ("category": the model takes a category id instead of a span)
    aspect_source: AspectSource = "terms"
    categories: tuple[str, ...] = ()
    # category models with a transformer encoder: the encoder reads the sentence pair
    # "[CLS] text [SEP] category words [SEP]" (Sun et al. 2019; token_type_ids 0 / 1), the
    # LSTM and the attention run over the text's segment only, and v_a is the learned vector
    # plus the mean of the category words' encoder states. A term preset may carry it:
    # it takes effect once the preset is made a category one (``pair``)
    category_pair: bool = False
    # aspect: AE = aspect_in_input, AT = attention != "none", ATAE = both
    aspect_in_input: bool = True
    attention: Attention = "additive"
    attention_dim: int = 100  # d_a for the projected attention forms
    # scaled_dot / dot: the query W_v v_a + b (affine) instead of W_v v_a, so that
    # (W_h h_t)^T b scores a word whatever the aspect: the salience the additive form's
    # w^T tanh(W_h h_t + ...) has and a purely bilinear score lacks
    attention_query_bias: bool = False
    positional: bool = False  # sinusoidal encodings: H' = H + P, v_a' = v_a + p_a (eq. 4)
    # P has amplitude 1 while H is tanh-bounded: "learned" multiplies P (and p_a) by learned
    # scalars that start at ``positional_init``, so positions cannot drown the states at the start
    positional_scale: PositionalScale = "fixed"
    positional_init: float = 0.1
    # where position 0 is: the first token ("start": P_t of the absolute index t, p_a of the
    # aspect's mean index), or the aspect ("aspect": P of the signed distance to the aspect
    # span, 0 inside it, so p_a = P(0)): the same encoding wherever the aspect sits in the
    # sentence. Category models have no span and always count from the start
    positional_origin: PositionalOrigin = "start"
    self_attention_heads: int = 0  # 0 = no self-attention layer (eq. 5)
    # "postln": LayerNorm(H + SA(H)) (eq. 5); "gated": H + g * SA(LayerNorm(H)), pre-LN with a
    # learned per-channel gate g that starts at 0, so the layer starts as the identity and the
    # aspect's own states reach the aspect attention unmixed
    self_attention_residual: SelfAttentionResidual = "postln"
    self_attention_dropout: float = 0.0  # dropout on the self-attention weights
    # the size of the queries and keys (0: the recurrent output size D); a smaller one costs
    # less: Q and K cost 2 * D * dim per token instead of 2 * D * D
    self_attention_dim: int = 0
    # V: "projected" = W_v x followed by an output projection (eq. 5), or "states" = the
    # (layer-normed) states themselves, with neither projection: the layer then mixes the
    # states it attends to, and costs 2 * D * dim per token instead of 4 * D * D
    self_attention_value: SelfAttentionValue = "projected"
    # where the layer runs: over the top recurrent layer's states ("top", eq. 5), or
    # ("between", two or more layers) over the first layer's, so that the second layer reads
    # the mixed states in order and the aspect attention reads recurrent states again
    self_attention_at: SelfAttentionAt = "top"
    # 0: each word attends to every word; k > 0: only to the words within k positions of it
    # (a band), so a state mixes in its own phrase's words and not a distant aspect's (every
    # MAMS sentence holds aspects of different polarity). Local attention, Luong et al. 2015;
    # relative positions clipped at k, Shaw et al. 2018
    self_attention_window: int = 0
    position_weighting: bool = False  # scale h_t by 1 - distance-to-aspect / length
    # two channels appended to each word's input: 1 inside the aspect span (else 0), and
    # 1 - distance-to-aspect / length. Without them the recurrence does not know where the
    # aspect is (v_a says what it is, not where), which a sentence naming several needs
    aspect_features: bool = False
    # h_N in h* = tanh(W_p r + W_x h_N): the last state (Wang et al.), or the mean of the
    # states over the aspect's own span, which sees its left and right context but not
    # the sentence's overall mood (what a multi-aspect sentence needs); "both": their mean
    summary: Summary = "last"
    # classifier; also the dropout on the self-attention layer's branch before the residual
    # sum (self_attention_dropout is on its weights)
    dropout: float = 0.5
    labels: tuple[str, ...] = LABELS

    def __post_init__(self) -> None:
        for name in ("vocab_size", "embed_dim", "hidden_size", "attention_dim", "layers"):
            if getattr(self, name) < 1:  # torch found them later, naming no key
                raise ValueError(f"{name} must be >= 1, not {getattr(self, name)}")
        if self.self_attention_heads < 0:
            raise ValueError(f"self_attention_heads must be >= 0, not {self.self_attention_heads}")
        if not math.isfinite(self.positional_init):
            raise ValueError(f"positional_init must be a finite number, not {self.positional_init}")
        if self.cell not in ("lstm", "gru"):
            raise ValueError(f"cell must be lstm or gru, not {self.cell!r}")
        if self.attention not in ("none", "additive", "scaled_dot", "bilinear", "dot"):
            raise ValueError(f"unknown attention {self.attention!r}")
        if self.summary not in ("last", "aspect", "both"):
            raise ValueError(f"summary must be last, aspect or both, not {self.summary!r}")
        if self.encoder not in ("embedding", "transformer"):
            raise ValueError(f"unknown encoder {self.encoder!r}")
        if self.self_attention_heads and self.rnn_dim % self.self_attention_heads:
            raise ValueError("the recurrent output size must divide by self_attention_heads")
        if self.self_attention_dim < 0 or (
            self.self_attention_heads and self.self_attention_dim % self.self_attention_heads
        ):
            raise ValueError("self_attention_dim must be >= 0 and divide by self_attention_heads")
        if self.self_attention_value not in ("projected", "states"):
            raise ValueError(
                "self_attention_value must be projected or states, "
                f"not {self.self_attention_value!r}"
            )
        if not all(
            0.0 <= p < 1.0 for p in (self.dropout, self.self_attention_dropout, self.layer_dropout)
        ):
            raise ValueError("dropout must be in [0, 1)")
        if not self.labels or len(set(self.labels)) != len(self.labels):
            # none: nothing to classify into; one twice: a gold label's index is ambiguous
            raise ValueError(f"labels must be distinct, and at least one, not {list(self.labels)}")
        if self.positional_origin not in ("start", "aspect"):
            raise ValueError(
                f"positional_origin must be start or aspect, not {self.positional_origin!r}"
            )
        if self.positional_scale not in ("fixed", "learned"):
            raise ValueError(
                f"positional_scale must be fixed or learned, not {self.positional_scale!r}"
            )
        if self.self_attention_residual not in ("postln", "gated"):
            raise ValueError(
                "self_attention_residual must be postln or gated, "
                f"not {self.self_attention_residual!r}"
            )
        if self.self_attention_window < 0 or (
            self.self_attention_window and not self.self_attention_heads
        ):
            raise ValueError(
                "self_attention_window must be >= 0, and needs a self-attention layer "
                f"(self_attention_heads > 0), not {self.self_attention_window}"
            )
        if self.self_attention_at not in ("top", "between"):
            raise ValueError(
                f"self_attention_at must be top or between, not {self.self_attention_at!r}"
            )
        if self.self_attention_at == "between" and not (
            self.self_attention_heads and self.layers > 1
        ):
            raise ValueError(
                "self_attention_at='between' needs a self-attention layer "
                "(self_attention_heads >= 1) and layers >= 2"
            )
        if self.attention == "none":  # h* is h_N alone: these would train to nothing
            inert = [
                name
                for name in ("positional", "self_attention_heads", "position_weighting")
                if getattr(self, name)
            ]
            if inert:
                raise ValueError(f"{', '.join(inert)} need an attention (attention='none')")
        if self.category_pair and self.encoder != "transformer":
            raise ValueError("category_pair needs encoder='transformer' (a WordPiece pair)")
        self._check_aspect_source()

    def _check_aspect_source(self) -> None:
        if self.aspect_source == "terms":
            if self.categories:
                raise ValueError("categories are for aspect_source='category' only")
            return
        if self.aspect_source != "category":
            raise ValueError(f"aspect_source must be terms or category, not {self.aspect_source!r}")
        if not self.categories or len(set(self.categories)) != len(self.categories):
            raise ValueError("aspect_source='category' needs a list of distinct categories")
        if self.summary != "last" or self.position_weighting or self.aspect_features:
            # they need the aspect's span in the text, which a category does not have
            raise ValueError(
                "a category model needs summary='last', no position_weighting and no "
                "aspect_features"
            )

    @property
    def is_category(self) -> bool:
        return self.aspect_source == "category"

    @property
    def pair(self) -> bool:
        """A sentence-pair category model (its graph also takes ``token_type_ids``)."""
        return self.is_category and self.category_pair

    @property
    def rnn_dim(self) -> int:
        return self.hidden_size * (2 if self.bidirectional else 1)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["labels"] = list(self.labels)
        d["categories"] = list(self.categories)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        d = dict(d)
        for key in ("labels", "categories"):
            if key in d:
                names = d[key]
                if not isinstance(names, list | tuple) or not all(
                    isinstance(n, str) for n in names
                ):
                    raise ValueError(f"{key} must be a list of names, not {names!r}")
                d[key] = tuple(names)
        other = {k: v for k, v in d.items() if k not in ("labels", "categories")}
        return cls(**{**d, **typed_fields(cls, other, "")})

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: Path) -> ModelConfig:
        """A model_config.json; ValueError naming the file for one that is not JSON, not an
        object, of a key this code does not know (a run of other code) or a value its
        checks refuse."""
        data = read_json(path)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a model config is a JSON object")
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as e:  # TypeError: labels that are a number, say
            raise ValueError(f"{path}: {e}") from None
