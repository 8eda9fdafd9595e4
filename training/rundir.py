"""The run directory: its one owner. What a training run writes and how it is read back sit
side by side here; nothing else opens these files by name.

    weights.safetensors   the best epoch's weights (written whenever dev improves)
    encoder/config.json   a transformer encoder's config (its weights are in the file above)
    model_config.json     the network's shape (ModelConfig)
    train_config.json     the TrainConfig
    pipeline.json         the text pipeline, with vocab.json or tokenizer.json
    dev.jsonl             the dev examples (export checks ONNX parity on them)
    history.json          per-epoch losses and dev scores (history.png draws them)
    metrics.json          the best epoch's dev report; ``eval`` added by ``absa train --eval``
    run.json              kind, preset, seed, data (every file read, by sha256), split,
                          teacher, code version(s), environment, timing, and the command
                          that trains it again (``reproduce``: absa train's). Written last:
                          a directory with it is a complete run.

Importing this module does not import torch (``absa evaluate`` on an artifact needs none);
writing weights and loading a run do.
"""

from __future__ import annotations

import errno
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from absa.model.atomic import atomic_write_json
from absa.model.config import ModelConfig
from absa.model.jsonio import read_json
from absa.model.text import WordPiecePipeline, WordPipeline, load_pipeline
from absa.model.typed import typed_fields
from absa.training.presets import TrainConfig
from absa.training.records import CategoryExample, Example, Labelled
from absa.training.source_scores import portable_names

if TYPE_CHECKING:
    import torch

    from absa.model.network import ABSANet

RUN_KIND = "absa-run"
RUN_INFO = "run.json"
METRICS = "metrics.json"
DEV = "dev.jsonl"
HISTORY = "history.json"
HISTORY_PLOT = "history.png"
MODEL_CONFIG = "model_config.json"
TRAIN_CONFIG = "train_config.json"
WEIGHTS = "weights.safetensors"
ENCODER = "encoder"  # a transformer's config.json, to rebuild the network without downloads
#: every name a run directory may hold (its files, the text pipeline's, the checkpoint's and
#: its temporary): a folder holding another is not a run, and --resume does not write there
RUN_FILES = frozenset(
    {RUN_INFO, METRICS, DEV, HISTORY, HISTORY_PLOT, MODEL_CONFIG, TRAIN_CONFIG, WEIGHTS, ENCODER}
    | {"pipeline.json", "vocab.json", "tokenizer.json", "checkpoint.pt", "checkpoint.part"}
)


def foreign_files(run_dir: Path) -> list[str]:
    """The names in ``run_dir`` that no run writes (an atomic write's ``.NAME.xxx``
    temporary counts as NAME's), sorted."""

    def own(name: str) -> bool:
        return name in RUN_FILES or (
            name.startswith(".") and name[1:].rsplit(".", 1)[0] in RUN_FILES
        )

    return sorted(p.name for p in Path(run_dir).iterdir() if not own(p.name))


# --------------------------------------------------------------------------- writing


def save_encoder_config(run_dir: Path, source: Path) -> None:
    """Keep a transformer encoder's config.json (from its source directory) with the run."""
    (run_dir / ENCODER).mkdir(exist_ok=True)
    shutil.copy(source / "config.json", run_dir / ENCODER / "config.json")


def save_weights(net: ABSANet, run_dir: Path) -> None:
    """The network's weights, replacing the previous best epoch's."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    path = run_dir / WEIGHTS
    try:
        save_file(state, str(path))
    except SafetensorError as e:  # e.g. a full disk: report it as the OS error it is
        code = _os_error(str(e))
        raise OSError(code, f"cannot write {path}: {e}") from e


def _os_error(message: str) -> int:
    """The errno a safetensors error names ("... Read-only file system (os error 30) ..."):
    a read-only disk is no I/O error that running again may get past (exit 75)."""
    found = re.search(r"\(os error (\d+)\)", message)
    if found:
        return int(found.group(1))
    return errno.ENOSPC if "No space left" in message else errno.EIO


def write_run(
    run_dir: Path,
    *,
    model_config: ModelConfig,
    train_config: TrainConfig,
    pipeline: WordPipeline | WordPiecePipeline,
    dev: Sequence[Labelled],
    history: list[dict],
    metrics: dict,
    info: dict,
) -> None:
    """Everything but the weights (saved while training) and the history plot, once training
    has ended; run.json last."""
    model_config.save(run_dir / MODEL_CONFIG)
    (run_dir / TRAIN_CONFIG).write_text(json.dumps(train_config.to_dict(), indent=1))
    pipeline.save(run_dir)
    write_examples(run_dir / DEV, dev)
    (run_dir / HISTORY).write_text(json.dumps(history, indent=1))
    (run_dir / METRICS).write_text(json.dumps(metrics, indent=1))
    # whole or absent (a torn run.json would still mark the directory a finished run)
    atomic_write_json(run_dir / RUN_INFO, {"kind": RUN_KIND, **info})


def add_eval(run_dir: Path, reports: Mapping[str, dict]) -> dict:
    """Record evaluation reports (data path -> report) under ``eval`` in metrics.json;
    returns the metrics. The data never selected anything: the best epoch stays as it was."""
    metrics = read_metrics(run_dir)
    if reports:
        metrics.setdefault("eval", {}).update(reports)
        atomic_write_json(Path(run_dir) / METRICS, metrics)  # rewritten: never torn
    return metrics


def write_examples(path: Path, examples: Sequence[Labelled]) -> None:
    """One labelled example per line, as the JSONL reader (and ``read_dev_examples``) take it."""
    with Path(path).open("w", encoding="utf-8") as f:
        for e in examples:
            if isinstance(e, CategoryExample):
                row: dict = {"text": e.text, "category": e.category, "label": e.label}
            else:
                row = {"text": e.text, "aspect": e.term, "start": e.start, "end": e.end}
                row["label"] = e.label
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------- reading


def is_run(directory: Path) -> bool:
    return (Path(directory) / RUN_INFO).is_file()


def read_info(run_dir: Path) -> dict:
    """run.json, checked to be a run's: FileNotFoundError or ValueError otherwise."""
    path = Path(run_dir) / RUN_INFO
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: not a training run directory (no {RUN_INFO})")
    info = read_json(path)
    if not isinstance(info, dict) or info.get("kind") != RUN_KIND:
        kind = info.get("kind") if isinstance(info, dict) else None
        raise ValueError(f"{path}: kind is {kind!r}, expected {RUN_KIND!r}")
    return info


def read_train_config(path: Path) -> TrainConfig:
    """train_config.json; ValueError naming the file for a key this code does not know (a
    run of other code) or a value its checks refuse."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a train config is a JSON object")
    unknown = sorted(set(data) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise ValueError(f"{path}: unknown train config keys {unknown}")
    try:
        return TrainConfig(**typed_fields(TrainConfig, data, ""))
    except ValueError as e:  # a value of the wrong type, or one its checks refuse
        raise ValueError(f"{path}: {e}") from None


def read_metrics(run_dir: Path) -> dict:
    """metrics.json, or {} where the run has none; ValueError naming the file where it is
    not a JSON object."""
    path = Path(run_dir) / METRICS
    metrics = read_json(path) if path.is_file() else {}
    if not isinstance(metrics, dict):
        raise ValueError(f"{path}: metrics are a JSON object")
    dev = metrics.get("dev", {})
    if not isinstance(dev, dict):  # the card reads its fields
        raise ValueError(f"{path}: 'dev' is a JSON object of the dev scores, not {dev!r}")
    if "by_source" in dev:
        dev["by_source"] = portable_names(dev["by_source"])
    return metrics


def read_dev_examples(run_dir: Path) -> list[Labelled]:
    """The run's dev examples (aspect terms or categories), in the order training saw them;
    ValueError naming the file and line of one that is not as ``write_examples`` writes it
    (a torn or edited file)."""
    path = Path(run_dir) / DEV
    out: list[Labelled] = []
    try:
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    out.append(_dev_example(line, f"{path}:{lineno}"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 ({e.reason})") from None
    return out


#: the fields of a dev.jsonl line, and their JSON types, by kind
_DEV_FIELDS: dict[str, dict[str, type]] = {
    "category": {"text": str, "category": str, "label": str},
    "terms": {"text": str, "start": int, "end": int, "label": str},
}


def _dev_example(line: str, src: str) -> Labelled:
    """One dev.jsonl line; ValueError naming ``src`` (file:line) where it is not JSON, not
    an object, or lacks a field (or has one of another type)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{src}: not JSON ({e.msg}, column {e.colno})") from None
    except RecursionError:
        raise ValueError(f"{src}: not JSON (nested too deeply to read)") from None
    if not isinstance(row, dict):
        raise ValueError(f"{src}: a dev example is a JSON object")
    for key, kind in _DEV_FIELDS["category" if "category" in row else "terms"].items():
        if key not in row:
            raise ValueError(f"{src}: no {key!r}")
        value = row[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{src}: {key!r} is {value!r}, not a {kind.__name__}")
    if "category" in row:
        return CategoryExample(row["text"], row["category"], row["label"], src)
    return Example(row["text"], row["start"], row["end"], row["label"], src)


@dataclass
class LoadedRun:
    net: ABSANet
    pipeline: WordPipeline | WordPiecePipeline
    model_config: ModelConfig
    train_config: TrainConfig
    info: dict
    metrics: dict


def load_weights(net: torch.nn.Module, weights: Path, config: str) -> None:
    """``weights`` (safetensors) into ``net``, built from the run's ``config`` file: a file
    cut short (a copy that stopped), torn or not safetensors, and weights of another
    network, each as one line naming the file (a traceback and exit 1 before)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = load_file(str(weights))
    except SafetensorError as e:  # truncated, torn or not safetensors at all
        raise ValueError(f"{weights}: cannot be read as safetensors ({e})") from None
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as e:  # torch's message runs over many lines: one for the CLI
        why = " ".join(str(e).split())
        raise RuntimeError(f"{weights}: does not fit {config}: {why}") from None


def load_run(run_dir: Path) -> LoadedRun:
    """Rebuild the exact network of a run and load its weights strictly; ValueError (or
    RuntimeError, for weights that do not fit the config) naming the file that is damaged."""

    from absa.model.network import ABSANet

    run_dir = Path(run_dir)
    info = read_info(run_dir)
    cfg = ModelConfig.load(run_dir / MODEL_CONFIG)
    tcfg = read_train_config(run_dir / TRAIN_CONFIG)
    encoder_dir = run_dir / ENCODER if cfg.encoder == "transformer" else None
    net = ABSANet(cfg, encoder_path=encoder_dir, pretrained_encoder=False)
    load_weights(net, run_dir / WEIGHTS, MODEL_CONFIG)
    net.eval()
    return LoadedRun(net, load_pipeline(run_dir), cfg, tcfg, info, read_metrics(run_dir))
