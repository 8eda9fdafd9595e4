"""The training loop: seed, split, encode, train with early stopping on dev, write the run."""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from model.config import ModelConfig
from model.network import ABSANet
from model.text import Encoded, TextError, WordPiecePipeline, WordPipeline, collate
from training.augment import augment
from training.checkpoint import (
    RUN_KIND,
    code_version,
    environment,
    resolve_transformer,
    save_weights,
)
from training.distill import teacher_info, teacher_targets
from training.embeddings import build_vocab, embedding_matrix, load_glove
from training.metrics import classification_report
from training.presets import Preset, TrainConfig
from training.records import DataError, Example

log = logging.getLogger(__name__)


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA when torch sees a GPU, else the CPU; ``cuda`` without one is an error."""
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no CUDA GPU")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def split_dev(examples: Sequence[Example], fraction: float, seed: int) -> tuple[list, list]:
    """Hold out about ``fraction`` of train as dev, by whole sentences, fixed by ``seed``:
    examples of one sentence stay on one side, so dev never shares text with train."""
    by_text: dict[str, list[Example]] = {}
    for e in examples:
        by_text.setdefault(e.text, []).append(e)
    groups = list(by_text.values())
    rng = random.Random(seed)
    rng.shuffle(groups)
    target = max(1, round(len(examples) * fraction))
    dev: list[Example] = []
    train: list[Example] = []
    for g in groups:
        (dev if len(dev) < target else train).extend(g)
    if not train:
        raise DataError("too few examples to hold out a dev split")
    return train, dev


def encode_all(
    pipeline: WordPipeline | WordPiecePipeline, examples: Sequence[Example]
) -> list[Encoded]:
    out = []
    for e in examples:
        try:
            out.append(pipeline.encode(e.text, e.start, e.end))
        except TextError as err:
            raise DataError(f"{e.source}: {err}") from None
    return out


def batches(lengths: Sequence[int], batch_size: int, rng: random.Random | None) -> list[list[int]]:
    """Index batches of similar length. Shuffled (chunks sorted by length) when ``rng`` is given."""
    idx = list(range(len(lengths)))
    if rng is None:
        idx.sort(key=lambda i: lengths[i])
        return [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]
    rng.shuffle(idx)
    chunk = batch_size * 50
    out: list[list[int]] = []
    for c in range(0, len(idx), chunk):
        part = sorted(idx[c : c + chunk], key=lambda i: lengths[i])
        out.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(out)
    return out


def to_tensors(
    items: Sequence[Encoded],
    pad_id: int,
    cache: Sequence[torch.Tensor] | None = None,
    device: torch.device | None = None,
) -> dict[str, torch.Tensor]:
    """Model inputs for a batch (on ``device``); with ``cache`` (one (T_i, E) tensor per
    item, in the order of ``items``) also the padded ``features`` of a frozen encoder."""
    out = {k: torch.from_numpy(v) for k, v in collate(items, pad_id).items()}
    if cache is not None:
        out["features"] = torch.nn.utils.rnn.pad_sequence(list(cache), batch_first=True).float()
    if device is not None:
        out = {k: v.to(device) for k, v in out.items()}
    return out


def _device_of(net: ABSANet) -> torch.device:
    return next(net.parameters()).device


@torch.no_grad()
def cache_features(net: ABSANet, encoded: Sequence[Encoded], pad_id: int) -> list[torch.Tensor]:
    """Run a frozen encoder once over the data: one (T_i, E) half-precision tensor per item."""
    net.encoder.eval()
    out: list[torch.Tensor] = [torch.empty(0)] * len(encoded)
    for b in batches([len(e.ids) for e in encoded], 64, None):
        inputs = to_tensors([encoded[i] for i in b], pad_id, device=_device_of(net))
        x = net.encoder(inputs["input_ids"], inputs["attention_mask"])
        for j, i in enumerate(b):
            out[i] = x[j, : len(encoded[i].ids)].half()
    return out


@torch.no_grad()
def predict_probs(
    net: ABSANet,
    encoded: Sequence[Encoded],
    pad_id: int,
    batch_size: int = 256,
    cache: Sequence[torch.Tensor] | None = None,
) -> np.ndarray:
    """Class probabilities (N, C) in the input order."""
    net.eval()
    out = np.zeros((len(encoded), len(net.cfg.labels)), dtype=np.float32)
    for b in batches([len(e.ids) for e in encoded], batch_size, None):
        feats = [cache[i] for i in b] if cache is not None else None
        inputs = to_tensors([encoded[i] for i in b], pad_id, feats, _device_of(net))
        logits, _, _ = net(**inputs)
        out[b] = torch.softmax(logits, -1).float().cpu().numpy()
    return out


def build_pipeline(
    mcfg: ModelConfig, tcfg: TrainConfig, train: Sequence[Example], run_dir: Path
) -> tuple[ModelConfig, WordPipeline | WordPiecePipeline, torch.Tensor | None, Path | None]:
    if mcfg.encoder == "transformer":
        src = resolve_transformer(tcfg.transformer)
        pipe = WordPiecePipeline(src / "tokenizer.json", max_len=tcfg.max_len)
        (run_dir / "encoder").mkdir(exist_ok=True)
        shutil.copy(src / "config.json", run_dir / "encoder" / "config.json")
        return mcfg, pipe, None, src
    glove_words, glove = load_glove(tcfg.glove)
    vocab = build_vocab((e.text for e in train), glove_words, tcfg.glove_top_k)
    matrix, _ = embedding_matrix(vocab, glove_words, glove, tcfg.seed)
    mcfg = replace(mcfg, vocab_size=len(vocab), embed_dim=int(matrix.shape[1]))
    return mcfg, WordPipeline(vocab, max_len=tcfg.max_len), torch.from_numpy(matrix), None


def make_optimizer(net: ABSANet, tcfg: TrainConfig) -> torch.optim.Optimizer:
    enc = [p for p in net.encoder.parameters() if p.requires_grad]
    enc_ids = {id(p) for p in enc}
    head = [p for p in net.parameters() if p.requires_grad and id(p) not in enc_ids]
    enc_lr = tcfg.encoder_lr if net.cfg.encoder == "transformer" else tcfg.embed_lr
    groups = [{"params": head, "lr": tcfg.lr}]
    if enc:
        groups.append({"params": enc, "lr": enc_lr})
    return torch.optim.AdamW(groups, weight_decay=tcfg.weight_decay)


@dataclass
class RunResult:
    run_dir: Path
    dev: dict
    best_epoch: int
    history: list[dict]


def fit(
    train: Sequence[Example],
    dev: Sequence[Example] | None,
    preset: Preset,
    run_dir: Path,
    data_info: dict | None = None,
    progress: bool = True,
    preset_name: str | None = None,
) -> RunResult:
    """Train a network and write its run directory. Never reads test data."""
    tcfg = preset.train
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(tcfg.threads)
    version = code_version()  # of the code that starts: the tree may change while it runs
    device = resolve_device(tcfg.device)
    seed_everything(tcfg.seed)
    started = time.time()
    dev_source = "file"
    counts = {lab: 0 for lab in preset.model.labels}
    for e in train:
        counts[e.label] += 1
    if not dev:
        train, dev = split_dev(train, tcfg.dev_fraction, tcfg.seed)
        dev_source = f"{tcfg.dev_fraction:.0%} of train held out with seed {tcfg.seed}"
    augmented = 0
    if tcfg.augment > 0:  # train only, after the split: dev never sees synthetic examples
        extra = augment(train, seed=tcfg.seed, rate=tcfg.augment)
        train, augmented = [*train, *extra], len(extra)
        log.info("augmented train with %d rule-made example(s)", augmented)
    log.info("train %d examples, dev %d (%s)", len(train), len(dev), dev_source)
    soft = None  # the teacher's probabilities over train (never dev), when distilling
    if tcfg.teacher:
        soft = torch.from_numpy(teacher_targets(Path(tcfg.teacher), train, preset.model.labels))
        soft = soft.to(device)

    mcfg, pipe, vectors, encoder_src = build_pipeline(preset.model, tcfg, train, run_dir)
    net = ABSANet(mcfg, vectors=vectors, encoder_path=encoder_src, pretrained_encoder=True)
    net.to(device)
    log.info("training on %s", device)
    enc_train, enc_dev = encode_all(pipe, train), encode_all(pipe, dev)
    cache_train = cache_dev = None
    if mcfg.encoder == "transformer" and mcfg.freeze_embeddings:
        t0 = time.time()
        cache_train = cache_features(net, enc_train, pipe.pad_id)
        cache_dev = cache_features(net, enc_dev, pipe.pad_id)
        log.info("cached frozen encoder features in %.1fs", time.time() - t0)
    y_train = torch.tensor([e.label_id for e in train], device=device)
    y_dev = [e.label_id for e in dev]
    opt = make_optimizer(net, tcfg)
    rng = random.Random(tcfg.seed)
    steps_per_epoch = math.ceil(len(enc_train) / tcfg.batch_size)
    total = steps_per_epoch * tcfg.epochs
    warm = int(total * tcfg.warmup)

    def lr_factor(step: int) -> float:  # linear warm-up then linear decay when warmup > 0
        if tcfg.warmup <= 0:
            return 1.0
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    history: list[dict] = []
    best_score: tuple[float, float] = (-1.0, 0.0)
    best_epoch, bad_epochs = 0, 0
    lengths = [len(e.ids) for e in enc_train]
    for epoch in range(1, tcfg.epochs + 1):
        net.train()
        t0 = time.time()
        total_loss, seen = 0.0, 0
        bar = tqdm(
            batches(lengths, tcfg.batch_size, rng),
            desc=f"epoch {epoch}",
            disable=not progress,
            leave=False,
        )
        for b in bar:
            feats = [cache_train[i] for i in b] if cache_train is not None else None
            inputs = to_tensors([enc_train[i] for i in b], pipe.pad_id, feats, device)
            logits, _, _ = net(**inputs)
            loss = F.cross_entropy(logits, y_train[b], label_smoothing=tcfg.label_smoothing)
            if soft is not None:
                kd = F.cross_entropy(logits, soft[b])  # cross-entropy with soft targets
                loss = (1.0 - tcfg.distill) * loss + tcfg.distill * kd
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), tcfg.clip)
            opt.step()
            sched.step()
            total_loss += loss.item() * len(b)
            seen += len(b)
            bar.set_postfix(loss=f"{total_loss / seen:.4f}")
        seconds = time.time() - t0
        probs = predict_probs(net, enc_dev, pipe.pad_id, cache=cache_dev)
        rep = classification_report(y_dev, probs.argmax(1), mcfg.labels)
        dev_loss = float(-np.log(probs[np.arange(len(y_dev)), y_dev] + 1e-12).mean())
        row = {
            "epoch": epoch,
            "train_loss": total_loss / max(1, seen),
            "dev_loss": dev_loss,
            "dev_accuracy": rep["accuracy"],
            "dev_macro_f1": rep["macro_f1"],
            "seconds": seconds,
        }
        history.append(row)
        log.info(
            "epoch %d loss %.4f dev loss %.4f acc %.4f f1 %.4f (%.1fs)",
            epoch,
            row["train_loss"],
            dev_loss,
            rep["accuracy"],
            rep["macro_f1"],
            seconds,
        )
        score = (rep[tcfg.select_on], -dev_loss)  # ties (common on small dev sets): lower loss
        if score > best_score:
            best_score, best_epoch, bad_epochs, best_dev = score, epoch, 0, rep
            save_weights(net, run_dir)
        else:
            bad_epochs += 1
            if bad_epochs >= tcfg.patience:
                log.info("early stop: no dev gain for %d epochs", bad_epochs)
                break

    mcfg.save(run_dir / "model_config.json")
    (run_dir / "train_config.json").write_text(json.dumps(tcfg.to_dict(), indent=1))
    pipe.save(run_dir)
    write_examples(run_dir / "dev.jsonl", dev)  # export checks ONNX parity on it
    (run_dir / "history.json").write_text(json.dumps(history, indent=1))
    plot_history(history, run_dir / "history.png")
    metrics = {"dev": best_dev, "best_epoch": best_epoch, "select_on": tcfg.select_on}
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    info = {
        "kind": RUN_KIND,
        "preset": preset_name,
        "about": preset.about,
        "seed": tcfg.seed,
        "data": data_info or {},
        "label_counts": counts,
        "n_train": len(train),
        "n_dev": len(dev),
        "dev_split": dev_source,
        "augmented": augmented,
        "teacher": teacher_info(Path(tcfg.teacher), dev) if tcfg.teacher else None,
        "code_version": version,
        "environment": {**environment(), "device": str(device)},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "train_seconds": round(time.time() - started, 1),
        "seconds_per_epoch": float(np.mean([h["seconds"] for h in history])),
    }
    (run_dir / "run.json").write_text(json.dumps(info, indent=1))
    return RunResult(run_dir, best_dev, best_epoch, history)


def write_examples(path: Path, examples: Sequence[Example]) -> None:
    with Path(path).open("w", encoding="utf-8") as f:
        for e in examples:
            row = {
                "text": e.text,
                "aspect": e.term,
                "start": e.start,
                "end": e.end,
                "label": e.label,
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


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
