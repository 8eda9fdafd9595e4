"""What a finished run writes beside its weights: run.json's record (configuration, data,
teachers, provenance, timing), the configs, pipeline, dev set and history
(training/rundir.py), and the history's plot."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from absa.model.artifact import sha256_file
from absa.model.config import ModelConfig
from absa.model.text import WordPiecePipeline, WordPipeline
from absa.training import rundir
from absa.training.distill import teacher_info, teachers_info
from absa.training.embeddings import MINILM, PACKAGED_GLOVE
from absa.training.presets import Preset, TrainConfig
from absa.training.provenance import environment, file_info, portable
from absa.training.records import Labelled, term_examples
from absa.training.train_data import Data, teacher_dirs

__all__ = ["encoder_info", "plot_history", "run_info", "save_run", "vectors_info"]


def run_info(
    preset: Preset,
    preset_name: str | None,
    data: Data,
    data_info: dict | None,
    version: str,
    device: torch.device,
    started: float,
    history: list[dict],
    vectors: dict | None = None,
    encoder: dict | None = None,
) -> dict:
    """What run.json says about the run: configuration, data, provenance, timing.
    ``vectors``, ``encoder``: ``vectors_info``, ``encoder_info``, taken as the run began (the
    files may change while it trains)."""
    tcfg = preset.train
    return {
        "preset": preset_name,
        "about": preset.about,
        "seed": tcfg.seed,
        # how sentences were matched (--exclude, --train-more: training/union.py) and kept
        # together by the dev split (train_data.split_dev); benchmarks/calibration.py rebuilds
        # the split of a run without it by normalise_text and the exact text
        "data": {**(data_info or {}), "sentence_key": "bracket_free"},
        "label_counts": data.label_counts,
        "n_train": len(data.train)
        - data.oversampled
        - (data.transfer["used"] if data.transfer else 0),
        "n_dev": len(data.dev),
        "dev_split": data.dev_source,
        "augmented": data.augmented,
        "oversampled": data.oversampled,
        "transfer": data.transfer,
        "teacher": teachers_info(teacher_dirs(tcfg), term_examples(data.dev))
        if tcfg.teacher
        else None,
        # out-of-fold targets (train.teacher_folds): each fold's teacher as ``teacher``'s
        "teacher_folds": [
            {**f, "teacher": teacher_info(Path(f["teacher"]), term_examples(data.dev))}
            for f in data.folds
        ]
        if data.folds
        else None,
        "vectors": vectors,
        "encoder": encoder,
        "code_version": version,
        "environment": {**environment(), "device": str(device)},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "train_seconds": round(time.time() - started, 1),
        "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
    }


def vectors_info(preset: Preset) -> dict | None:
    """A word-vector file given by path (e.g. `absa vectors`): which one, by its sha256;
    None for the packaged GloVe (its version is the environment's) or a transformer (and for
    a path that is no file, which ``load_glove`` then refuses with its own words)."""
    tcfg = preset.train
    if (
        preset.model.encoder == "embedding"
        and tcfg.glove != PACKAGED_GLOVE
        and Path(tcfg.glove).is_file()
    ):
        return file_info([tcfg.glove])[0]
    return None


def encoder_info(preset: Preset) -> dict | None:
    """A transformer encoder given by path (the mpnet recipe's, one fine-tuned elsewhere):
    the sha256 of each of its files, as ``vectors_info`` names a vectors file; None for the
    packaged MiniLM (its version is the environment's) or a word-vector encoder. Recorded,
    not in the checkpoint's fingerprint: runs begun before it resume as they were."""
    tcfg = preset.train
    path = Path(tcfg.transformer)
    if preset.model.encoder != "transformer" or tcfg.transformer == MINILM or not path.is_dir():
        return None
    files = sorted(f for f in path.rglob("*") if f.is_file())
    return {
        "path": portable(path),
        "files": {str(f.relative_to(path)): sha256_file(f) for f in files},
    }


def save_run(
    run_dir: Path,
    mcfg: ModelConfig,
    tcfg: TrainConfig,
    pipe: WordPipeline | WordPiecePipeline,
    dev: Sequence[Labelled],
    history: list[dict],
    best_dev: dict,
    best_epoch: int,
    info: dict,
) -> None:
    """Everything but the weights (saved at the best epoch): configs, pipeline, dev set,
    history and its plot, metrics (the best epoch's dev report), and run.json last."""
    plot_history(history, run_dir / rundir.HISTORY_PLOT)
    rundir.write_run(
        run_dir,
        model_config=mcfg,
        train_config=tcfg,
        pipeline=pipe,
        dev=dev,
        history=history,
        metrics={"dev": best_dev, "best_epoch": best_epoch, "select_on": tcfg.select_on},
        info=info,
    )


def plot_history(history: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ep = [h["epoch"] for h in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.plot(ep, [h["train_loss"] for h in history], label="train")
    a.plot(ep, [h["dev_loss"] for h in history], label="dev")
    a.set_xlabel("epoch")
    a.set_ylabel("loss")
    a.legend()
    b.plot(ep, [h["dev_accuracy"] for h in history], label="dev accuracy")
    b.plot(ep, [h["dev_macro_f1"] for h in history], label="dev macro-F1")
    b.set_xlabel("epoch")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
