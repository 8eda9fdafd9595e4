"""The training loop: seed, split, encode, train with early stopping on dev, write the run.

``fit`` reads top to bottom as its steps:

    prepare_data     count labels, hold out dev, augment train, the teacher's soft targets
                     (and its labels for a transfer set's unlabelled aspects)
    build_network    the text pipeline (GloVe vocabulary or WordPiece) and the network
    encode_inputs    both splits encoded (and a frozen encoder's features cached)
    train_epoch      one shuffled pass over train
    evaluate_dev     dev loss and report after each epoch
    EarlyStopping    keeps the best epoch (its weights are saved) and stops after patience
    save_run         the run directory (training/run_record.py, through training/rundir.py)

The order of everything that draws random numbers is fixed: the same seed and data give
the same run, bit for bit.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TypeAlias

import numpy as np
import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel
from tqdm import tqdm

from absa.model.categories import category_words
from absa.model.config import ModelConfig
from absa.model.network import ABSANet
from absa.model.text import Encoded, WordPiecePipeline, WordPipeline
from absa.training import checkpoint, rundir
from absa.training.attention_reg import (
    attention_entropy,
    coverage_penalty,
    grouped_batches,
    sentence_groups,
)
from absa.training.categories import init_from_words
from absa.training.distill import (
    kd_loss,
    mixed_loss,
)
from absa.training.embeddings import (
    build_vocab,
    embedding_matrix,
    encoder_width,
    load_glove,
    resolve_transformer,
)
from absa.training.inference import (
    batches,
    cache_features,
    encode_all,
    predict_probs,
    resolve_device,
    seed_everything,
    to_tensors,
)
from absa.training.metrics import classification_report
from absa.training.optim import balanced_weights, make_ema, make_optimizer, make_schedule
from absa.training.presets import Preset, TrainConfig
from absa.training.provenance import code_version
from absa.training.records import Labelled
from absa.training.run_record import encoder_info, run_info, save_run, vectors_info
from absa.training.source_scores import by_source, source_mean, source_names
from absa.training.state_distill import StateHint
from absa.training.train_data import Data, prepare_data
from absa.training.transfer_set import Candidate
from absa.training.warm_start import start_from

log = logging.getLogger(__name__)

Pipeline: TypeAlias = WordPipeline | WordPiecePipeline


@dataclass
class RunResult:
    run_dir: Path
    dev: dict
    best_epoch: int
    history: list[dict]
    stopped: bool = False  # by ``stop_after`` or ``checkpoint.STOP``: resume to finish
    resumed_after: int = 0  # the epoch the checkpoint it went on from had reached (0: none)


def fit(
    train: Sequence[Labelled],
    dev: Sequence[Labelled] | None,
    preset: Preset,
    run_dir: Path,
    data_info: dict | None = None,
    progress: bool = True,
    preset_name: str | None = None,
    transfer: Sequence[Candidate] = (),
    dev_source: str = "file",
    resume: bool = False,
    stop_after: float | None = None,
    keep_checkpoint: bool = False,
    reproduce: str | None = None,
    resume_with: str = "the same command with --resume",
) -> RunResult:
    """Train a network and write its run directory. Never reads test data. ``transfer``:
    unlabelled aspects for the teacher to label (soft targets only; needs a teacher).
    ``dev_source``: where a given ``dev`` came from, for run.json. ``resume``: go on from
    the run directory's checkpoint (training/checkpoint.py) when it has one; ``stop_after``
    (seconds): end at the first epoch's end past it, the checkpoint kept (``stopped``).
    ``keep_checkpoint``: leave the last one (the epoch before the last) with the finished
    run, for a caller killed in what it does next to go on from (the retraining job).
    ``reproduce``: the command that trains this run again, for run.json (``absa train``'s).
    ``resume_with``: what goes on from the checkpoint, in the error of a run not written."""
    tcfg = preset.train
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(tcfg.threads)
    version = code_version()  # of the code that starts: the tree may change while it runs
    vectors = vectors_info(preset)  # of the file read now: it may change while the run trains
    encoder = encoder_info(preset)  # a transformer by path: its files, as they are now
    device = resolve_device(tcfg.device)
    seed_everything(tcfg.seed, device)
    started = time.time()

    data = prepare_data(train, dev, preset, device, transfer, dev_source)
    mcfg, pipe, net = build_network(preset, data.train, device)
    start = start_from(net, mcfg, pipe, Path(tcfg.init_from)) if tcfg.init_from else None
    inputs = encode_inputs(net, pipe, data, device)
    if tcfg.class_weights == "balanced":
        labelled = inputs.y_train if data.gold is None else inputs.y_train[data.gold]
        inputs = replace(inputs, class_weight=balanced_weights(labelled, len(mcfg.labels)))
    opt = make_optimizer(net, tcfg)
    ema = make_ema(net, tcfg)  # before the hint's hook, which the average must not copy
    hint = state_hint(net, preset, data, inputs)
    if hint is not None:  # trained beside the network, never saved with it
        opt.add_param_group({"params": list(hint.parameters()), "lr": tcfg.lr})
    steps_per_epoch = math.ceil(len(inputs.train) / tcfg.batch_size)
    sched = make_schedule(opt, tcfg, steps_per_epoch)
    rng = random.Random(tcfg.seed)  # the batch order
    history: list[dict] = []
    best = EarlyStopping(tcfg.patience)
    scored: ABSANet = ema.module if ema is not None else net  # type: ignore[assignment]
    parts = {"net": net, "opt": opt, "sched": sched, "ema": ema, "hint": hint}
    # how the pipeline reads a text (word tokenizer, a transformer's start and end tokens):
    # a checkpoint made by code with other defaults is not resumed by this one
    reading = {k: getattr(pipe, k, None) for k in ("tokenizer", "specials")}
    # and the word vectors a path gives, by their sha256: another file at the same path is
    # other starting rows (the packaged GloVe's version is the environment's)
    given = {"vectors": vectors["sha256"]} if vectors else {}
    key = checkpoint.fingerprint(
        tcfg.to_dict(), {**mcfg.to_dict(), "reading": reading, **given}, [*data.train, *data.dev]
    )
    # first: the first epoch this call trains; session: when it began (``stop_after`` counts
    # the reading, scoring and caching above: they spend the session's time too)
    first, session = 1, started
    # the teacher's probabilities (None without one): not in the fingerprint (a teacher scored
    # again through another engine differs in the last digits), compared with a tolerance
    soft = None if data.soft is None else data.soft.detach().cpu().numpy()
    state = checkpoint.load(run_dir, key) if resume else None
    if state is not None:
        checkpoint.check_targets(state, soft, run_dir)
    if mcfg.encoder == "transformer":  # once a checkpoint is known to be this run's
        rundir.save_encoder_config(run_dir, resolve_transformer(tcfg.transformer))
    within = None  # where the first epoch goes on from, when a checkpoint was written inside it
    # the code of every session this run trained in (a resumed run may span commits)
    versions = [*(state or {}).get("code_versions", [])]
    versions += [version] if version not in versions[-1:] else []
    if state is not None:
        first, history, best = restore(state, parts, rng)
        started -= state["seconds"]  # the run's seconds count every session's
        within = checkpoint.Within(**state["within"]) if state.get("within") else None
        log.info("resumed %s after epoch %d of %d%s", run_dir, first - 1, tcfg.epochs,
                 f" and {within.batches} batches of epoch {first}" if within else "")  # fmt: skip
    elif resume:
        log.info("no checkpoint in %s: training from epoch 1", run_dir)
    sessions = session_record(state, first, tcfg.threads, str(device), version, tcfg.precision)

    def save_within(epoch: int, at: checkpoint.Within) -> None:
        state = snapshot(key, epoch - 1, parts, rng, history, best, started)
        extra: dict[str, object] = {
            "within": asdict(at),
            "code_versions": versions,
            "sessions": sessions,
        }
        extra["soft"] = soft
        checkpoint.save(run_dir, {**state, **extra})
        log.info("checkpoint within epoch %d, after %d batches", epoch, at.batches)

    def stopped(where: str) -> RunResult:
        """A run ended before its last epoch, its checkpoint kept: ``--resume`` goes on."""
        log.info("stopped %s of %d: --resume goes on", where, tcfg.epochs)
        return RunResult(run_dir, best.dev, best.epoch, history, True, first - 1)

    try:
        for epoch in range(first, tcfg.epochs + 1):
            try:
                train_loss, seconds = train_epoch(
                    net,
                    opt,
                    sched,
                    inputs,
                    data.soft,
                    pipe.pad_id,
                    tcfg,
                    rng,
                    epoch,
                    progress,
                    ema,
                    gold=data.gold,
                    hint=hint,
                    within=within if epoch == first else None,
                    save=functools.partial(save_within, epoch),
                )
            except _Stopped:  # a checkpoint within the epoch was written
                return stopped(f"within epoch {epoch}")
            dev_report, dev_loss = evaluate_dev(scored, inputs, pipe.pad_id, mcfg.labels)
            history.append(epoch_row(epoch, train_loss, dev_loss, dev_report, seconds))
            if not math.isfinite(train_loss):  # NaN weights: no later epoch can rank
                log.warning("epoch %d: training loss %s: the network diverged, training stops "
                            "(best epoch so far: %d)", epoch, train_loss, best.epoch)  # fmt: skip
                break
            if best.update(epoch, epoch_score(dev_report, dev_loss, tcfg.select_on), dev_report):
                rundir.save_weights(scored, run_dir)
            elif best.exhausted:
                log.info("early stop: no dev gain for %d epochs", best.bad_epochs)
                break
            if epoch < tcfg.epochs:
                state = snapshot(key, epoch, parts, rng, history, best, started)
                kept = {"code_versions": versions, "sessions": sessions, "soft": soft}
                checkpoint.save(run_dir, {**state, **kept})
                late = stop_after is not None and time.time() - session > stop_after
                if late or checkpoint.STOP.is_set():
                    return stopped(f"after epoch {epoch}")
    finally:  # the hint's hook comes off however the loop ends
        if hint is not None:
            hint.close()
    if best.epoch == 0:  # every dev score NaN: no weights were kept, nothing to write
        raise ValueError(
            f"{run_dir}: no epoch had a dev {tcfg.select_on} to rank (NaN): training diverged; "
            "try a lower lr"
        )
    info = run_info(
        preset, preset_name, data, data_info, version, device, started, history, vectors, encoder
    )
    info["code_versions"] = versions
    info["sessions"] = sessions
    info["teacher_states"] = hint.record if hint is not None else None
    info["init_from"] = start
    info["reproduce"] = _reproduce(reproduce, sessions)
    try:
        save_run(run_dir, mcfg, tcfg, pipe, data.dev, history, best.dev, best.epoch, info)
    except OSError as e:  # a full disk: "[Errno 28] No space left on device", no file named
        from absa.errors import cannot_write

        err = cannot_write(run_dir, e)
        err.args = (
            f"{err}; the last epoch's checkpoint is kept: once there is room, {resume_with} "
            "writes the run",
        )
        raise err from e
    if not keep_checkpoint:
        checkpoint.remove(run_dir)  # only once the run is written: a failed write can resume
    return RunResult(run_dir, best.dev, best.epoch, history, resumed_after=first - 1)


# --------------------------------------------------------------------------- the network


def build_network(
    preset: Preset, train: Sequence[Labelled], device: torch.device
) -> tuple[ModelConfig, Pipeline, ABSANet]:
    """The model config completed from the data, the text pipeline and the network."""
    mcfg, pipe, vectors, encoder_src = build_pipeline(preset.model, preset.train, train)
    net = ABSANet(mcfg, vectors=vectors, encoder_path=encoder_src, pretrained_encoder=True)
    if mcfg.is_category and preset.train.category_init == "words":
        init_from_words(net, pipe)
    net.to(device)
    log.info("training on %s", device)
    return mcfg, pipe, net


def build_pipeline(
    mcfg: ModelConfig, tcfg: TrainConfig, train: Sequence[Labelled]
) -> tuple[ModelConfig, Pipeline, torch.Tensor | None, Path | None]:
    """A transformer's WordPiece pipeline (fit keeps its config with the run), or a vocabulary of
    the training words plus GloVe's most frequent, with its embedding matrix."""
    if mcfg.encoder == "transformer":
        src = resolve_transformer(tcfg.transformer)
        pipe = WordPiecePipeline(src / "tokenizer.json", max_len=tcfg.max_len)
        # E is the encoder's width (384 for MiniLM, 768 for MPNet), whatever the preset says
        return replace(mcfg, embed_dim=encoder_width(src)), pipe, None, src
    glove_words, glove = load_glove(tcfg.glove)
    texts = [e.text for e in train]
    if mcfg.is_category and tcfg.category_init == "words":  # their vectors start v_a
        texts += [category_words(c) for c in mcfg.categories]
    vocab = build_vocab(texts, glove_words, tcfg.glove_top_k)
    matrix, _ = embedding_matrix(vocab, glove_words, glove, tcfg.seed)
    if mcfg.embed_dim != matrix.shape[1]:  # the vectors decide; said, not done silently
        log.info(
            "embed_dim is the word vectors' width, %d (the config says %d)",
            matrix.shape[1],
            mcfg.embed_dim,
        )
    mcfg = replace(mcfg, vocab_size=len(vocab), embed_dim=int(matrix.shape[1]))
    return mcfg, WordPipeline(vocab, max_len=tcfg.max_len), torch.from_numpy(matrix), None


@dataclass
class Inputs:
    """Both splits encoded, with their gold labels (and a frozen encoder's features)."""

    train: list[Encoded]
    dev: list[Encoded]
    y_train: torch.Tensor  # on the training device
    y_dev: list[int]
    device: torch.device
    dev_sources: list[str] = field(default_factory=list)  # each dev item's training file
    cache_train: list[torch.Tensor] | None = None
    cache_dev: list[torch.Tensor] | None = None
    class_weight: torch.Tensor | None = None  # per class, for the training loss

    @property
    def lengths(self) -> list[int]:
        """Token counts of the training items: batches group similar lengths."""
        return [len(e.ids) for e in self.train]


def encode_inputs(net: ABSANet, pipe: Pipeline, data: Data, device: torch.device) -> Inputs:
    cats, pair = net.cfg.categories, net.cfg.pair
    enc_train = encode_all(pipe, data.train, cats, pair)
    enc_dev = encode_all(pipe, data.dev, cats, pair)
    cache_train = cache_dev = None
    if net.cfg.encoder == "transformer" and net.cfg.freeze_embeddings:
        t0 = time.time()
        cache_train = cache_features(net, enc_train, pipe.pad_id)
        cache_dev = cache_features(net, enc_dev, pipe.pad_id)
        log.info("cached frozen encoder features in %.1fs", time.time() - t0)
    # the network's outputs are ``model.labels`` in its order (a config may order them, or
    # leave neutral out): a gold label's index is its place there, as the artifact says
    labels = list(net.cfg.labels)
    y_train = torch.tensor([labels.index(e.label) for e in data.train], device=device)
    y_dev = [labels.index(e.label) for e in data.dev]
    return Inputs(
        enc_train,
        enc_dev,
        y_train,
        y_dev,
        device,
        source_names(data.dev),
        cache_train,
        cache_dev,
    )


def state_hint(net: ABSANet, preset: Preset, data: Data, inputs: Inputs) -> StateHint | None:
    """The hint term's map and targets when ``distill_states`` is on (word-vector term
    models only: the teacher's states are per word)."""
    tcfg = preset.train
    if not tcfg.distill_states:
        return None
    if net.cfg.encoder != "embedding" or net.cfg.is_category:
        raise ValueError("distill_states is for word-vector aspect-term models")
    return StateHint(
        net,
        Path(tcfg.teacher_states),
        data.train,
        inputs.train,
        tcfg.distill_states_skip,
        tcfg.distill_states_apart,
    )


def snapshot(
    key: str,
    epoch: int,
    parts: dict,
    rng: random.Random,
    history: list[dict],
    best: EarlyStopping,
    started: float,
) -> dict:
    """What ``checkpoint.save`` keeps after ``epoch``: every part's state (the ones in use),
    the random generators', the history, the early-stopping record, the seconds so far."""
    return {
        "fingerprint": key,
        "epoch": epoch,
        "parts": {k: v.state_dict() for k, v in parts.items() if v is not None},
        "rng": checkpoint.rng_state(rng),
        "history": history,
        "best": asdict(best),
        "seconds": time.time() - started,
    }


def restore(state: dict, parts: dict, rng: random.Random) -> tuple[int, list[dict], EarlyStopping]:
    """Load a ``snapshot`` into the parts and generators: the next epoch, history, record."""
    for k, v in parts.items():
        if v is not None:
            v.load_state_dict(state["parts"][k])
    checkpoint.set_rng_state(state["rng"], rng)
    best = state["best"]
    return (
        state["epoch"] + 1,
        state["history"],
        EarlyStopping(**{**best, "score": tuple(best["score"])}),
    )


# --------------------------------------------------------------------------- one epoch


def _reproduce(command: str | None, sessions: list[dict]) -> str | None:
    """The command that trains the run again, said not to be bit for bit where its sessions
    ran on other threads, devices or precisions (the command names the last session's)."""
    ran = sorted({_ran(s) for s in sessions})
    if command is None or len(ran) < 2:
        return command
    return (
        f"{command}\n# not bit for bit: the run's sessions ran on {' and '.join(ran)} "
        "(run.json's sessions); its weights differ from this command's in the last digits"
    )


def session_record(
    state: dict | None,
    first: int,
    threads: int,
    device: str,
    version: str,
    precision: str = "fp32",
) -> list[dict]:
    """Every session a run trained in (``state``: the checkpoint resumed, None: none), this
    one last: the epoch it began with, its threads, device, precision and code. The thread
    count, the device and the precision change a run's digits, and ``train_config`` names only
    the last session's: a change is warned of (run.json's ``sessions`` then say which ran
    where; a session recorded before precisions were, in float32)."""
    sessions = [*(state or {}).get("sessions", [])]
    this = {
        "from_epoch": first,
        "threads": threads,
        "device": device,
        "precision": precision,
        "code_version": version,
    }
    if sessions and _ran(sessions[-1]) != _ran(this):
        log.warning(
            "resumed: the last session trained on %s, this session on %s: the weights are not "
            "those of a run on either alone (run.json's sessions say which)",
            _ran(sessions[-1]),
            _ran(this),
        )
    return [*sessions, this]


def _ran(session: dict) -> str:
    """What a session trained on: "2 thread(s) on cpu", "1 thread(s) on cuda in bf16"."""
    precision = session.get("precision", "fp32")  # none recorded: before there was a choice
    ran = f"{session['threads']} thread(s) on {session['device']}"
    return ran if precision == "fp32" else f"{ran} in {precision}"


def step_precision(precision: str, device: torch.device) -> torch.autocast:
    """The context the training step's forward and loss run in: ``bf16``, torch's autocast
    to bfloat16 on ``device`` (matrix products in bfloat16, reductions and the weights in
    float32); ``fp32``, a context that changes nothing."""
    bf16 = precision == "bf16"
    if bf16 and device.type == "cpu" and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        log.warning(
            "precision bf16 on a CPU without bfloat16 instructions (AVX512-BF16, AMX): "
            "emulated, slower than fp32"
        )
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)


# with no progress bar (--quiet, or a log file): a line this often within an epoch, so that
# an epoch of hours (an mpnet teacher on two CPU threads) shows how far it has come
HEARTBEAT_SECONDS = 600.0
# a checkpoint within an epoch this often (training/checkpoint.py): a session that ends
# inside an epoch of hours loses at most this much of it
CHECKPOINT_SECONDS = 1800.0


class _Stopped(Exception):
    """``checkpoint.STOP`` was set: a checkpoint within the epoch is written."""


def train_epoch(
    net: ABSANet,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LambdaLR,
    inputs: Inputs,
    soft: torch.Tensor | None,
    pad_id: int,
    tcfg: TrainConfig,
    rng: random.Random,
    epoch: int,
    progress: bool,
    ema: AveragedModel | None = None,
    gold: torch.Tensor | None = None,
    hint: StateHint | None = None,
    within: checkpoint.Within | None = None,
    save: Callable[[checkpoint.Within], None] | None = None,
) -> tuple[float, float]:
    """One pass over train in shuffled batches of similar length: mean loss, seconds.
    ``gold`` (with a transfer set): the items whose label is trained on (``mixed_loss``);
    ``hint``: the teacher-states term (``distill_states``). ``within``: go on from a
    checkpoint written inside this epoch; ``save``: called every ``CHECKPOINT_SECONDS``
    with how far the epoch has come."""
    net.train()
    start = within or checkpoint.Within()
    if start.order_rng is not None:  # the epoch's order is drawn again, as it was
        rng.setstate(start.order_rng)
    order_rng = rng.getstate()
    t0 = time.time() - start.seconds
    total_loss, seen = start.loss, start.seen
    sentences = None  # each item's sentence, for the coverage term
    if tcfg.attention_coverage > 0:  # the aspects of one sentence in one batch
        sentences = sentence_groups(inputs.train)
        order = grouped_batches(inputs.lengths, sentences, tcfg.batch_size, rng)
    else:
        order = batches(inputs.lengths, tcfg.batch_size, rng)
    bar = tqdm(
        order[start.batches :],
        desc=f"epoch {epoch}",
        disable=None if progress else True,  # None: no bar where stderr is not a terminal (logs)
        leave=False,
        initial=start.batches,
        total=len(order),
    )
    items, beat, saved = sum(len(b) for b in order), time.time(), time.time()
    precision = step_precision(tcfg.precision, inputs.device)
    for done, b in enumerate(bar, start.batches + 1):
        feats = [inputs.cache_train[i] for i in b] if inputs.cache_train is not None else None
        batch = to_tensors([inputs.train[i] for i in b], pad_id, feats, inputs.device)
        with precision:
            loss, alpha = step_loss(net, batch, b, inputs, soft, gold, hint, sentences, tcfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        # the network's gradients (the hint's map, trained beside it, is not clipped: it is
        # no part of the model, and its pull on the network is clipped here)
        torch.nn.utils.clip_grad_norm_(net.parameters(), tcfg.clip)
        opt.step()
        sched.step()
        if ema is not None:
            ema.update_parameters(net)
        total_loss += loss.item() * len(b)
        seen += len(b)
        bar.set_postfix(loss=f"{total_loss / seen:.4f}")
        if bar.disable and time.time() - beat >= HEARTBEAT_SECONDS and seen < items:
            beat = time.time()
            left = (beat - t0) * (items - seen) / seen
            msg = "epoch %d: %d of %d items, %.0f s, loss %.4f, about %.0f s left"
            log.info(msg, epoch, seen, items, beat - t0, total_loss / seen, left)
        stop = checkpoint.STOP.is_set()  # the epoch's last batch: its end's checkpoint
        if (
            save is not None
            and done < len(order)
            and (stop or time.time() - saved >= CHECKPOINT_SECONDS)
        ):
            save(checkpoint.Within(done, total_loss, seen, time.time() - t0, order_rng))
            saved = time.time()
            if stop:
                raise _Stopped
    return total_loss / max(1, seen), time.time() - t0


def step_loss(
    net: ABSANet,
    batch: dict[str, torch.Tensor],
    b: list[int],
    inputs: Inputs,
    soft: torch.Tensor | None,
    gold: torch.Tensor | None,
    hint: StateHint | None,
    sentences: list[int] | None,
    tcfg: TrainConfig,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch's training loss (and the aspect attention it came with): the labels' and
    the teacher's terms and whichever attention and hint terms the config adds. The terms
    are taken in float32 whatever precision the forward ran in."""
    logits, alpha, _ = net(**batch)
    logits, alpha = logits.float(), alpha.float()
    if gold is not None:  # a transfer set (which needs a teacher, so soft targets)
        loss = mixed_loss(
            logits,
            inputs.y_train[b],
            soft[b],  # type: ignore[index]
            gold[b],
            tcfg.distill,
            inputs.class_weight,
            tcfg.label_smoothing,
            tcfg.distill_temperature,
        )
    else:
        loss = F.cross_entropy(
            logits,
            inputs.y_train[b],
            weight=inputs.class_weight,
            label_smoothing=tcfg.label_smoothing,
        )
        if soft is not None:
            kd = kd_loss(logits, soft[b], tcfg.distill_temperature)
            loss = (1.0 - tcfg.distill) * loss + tcfg.distill * kd
    mask = batch["attention_mask"]
    if sentences is not None:
        group = torch.tensor([sentences[i] for i in b])
        loss = loss + tcfg.attention_coverage * coverage_penalty(alpha, mask, group)
    if tcfg.attention_entropy != 0:
        loss = loss + tcfg.attention_entropy * attention_entropy(alpha, mask)
    if hint is not None:
        loss = loss + tcfg.distill_states * hint.loss(b).float()
    return loss, alpha


def evaluate_dev(
    net: ABSANet, inputs: Inputs, pad_id: int, labels: Sequence[str]
) -> tuple[dict, float]:
    """The dev report (accuracy, macro-F1, ..., the accuracy per source file and their mean)
    and the mean dev cross-entropy."""
    probs = predict_probs(net, inputs.dev, pad_id, cache=inputs.cache_dev)
    y = inputs.y_dev
    report = classification_report(y, probs.argmax(1), labels)
    report["by_source"] = by_source(y, probs.argmax(1), inputs.dev_sources)
    report["source_mean"] = source_mean(report["by_source"])
    dev_loss = float(-np.log(probs[np.arange(len(y)), y] + 1e-12).mean())
    return report, dev_loss


def epoch_row(epoch: int, train_loss: float, dev_loss: float, dev: dict, seconds: float) -> dict:
    """One line of history.json (and of the log)."""
    log.info(
        "epoch %d loss %.4f dev loss %.4f acc %.4f f1 %.4f source mean %.4f (%.1fs)",
        epoch,
        train_loss,
        dev_loss,
        dev["accuracy"],
        dev["macro_f1"],
        dev["source_mean"],
        seconds,
    )
    return {
        "epoch": epoch,
        "train_loss": train_loss,
        "dev_loss": dev_loss,
        "dev_accuracy": dev["accuracy"],
        "dev_macro_f1": dev["macro_f1"],
        "dev_source_mean": dev["source_mean"],
        "dev_by_source": dev["by_source"],
        "seconds": seconds,
    }


def epoch_score(dev: dict, dev_loss: float, select_on: str) -> tuple[float, float]:
    """What ranks the epochs (the higher, the better): the ``select_on`` metric of the dev
    report; ties on it (common on small dev sets) go to the lower dev loss. A dev loss that
    is no number is a network whose outputs are none: it ranks nowhere, whatever
    ``select_on`` (its accuracy is one label's share, NaN's argmax: the run was written with
    every weight NaN)."""
    if math.isnan(dev_loss):
        return math.nan, math.nan
    if select_on == "loss":
        return -dev_loss, dev["accuracy"]
    return dev[select_on], -dev_loss


@dataclass
class EarlyStopping:
    """The best epoch so far by its score, and how many epochs have passed without a gain."""

    patience: int
    score: tuple[float, float] = (-math.inf, -math.inf)  # below any real score
    epoch: int = 0
    dev: dict = field(default_factory=dict)  # the best epoch's dev report
    bad_epochs: int = 0

    def update(self, epoch: int, score: tuple[float, float], dev: dict) -> bool:
        """Whether this epoch is the new best (then its weights are the ones to keep)."""
        if score > self.score:
            self.score, self.epoch, self.dev, self.bad_epochs = score, epoch, dev, 0
            return True
        self.bad_epochs += 1
        return False

    @property
    def exhausted(self) -> bool:
        return self.bad_epochs >= self.patience
