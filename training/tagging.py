"""Training the aspect term tagger: encode sentences as BIO word tags, train with early
stopping on dev exact-span F1, write the run (``absa.training.tagging_run``).

    encode          words -> ids (word or piece pipeline), char spans -> BIO tags, and a
                    teacher's tag probabilities (training/tag_distill.py) when distilling
    train_epoch     one shuffled pass, batches of similar lengths (batch_loss: gold loss,
                    cross-entropy or CRF, mixed with the teacher's KL term)
    predict_spans   decode dev sentences (torch) with the serving decoder
    fit_tagger      the loop; keeps the best epoch's weights (by training/tag_select.py)

The network, its text pipeline and optimiser come from ``absa.training.tagger_build``.

Same seed and data, same run.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from absa.model.crf import tag_loss
from absa.model.spans import bio_tags, span_scores, spans_of
from absa.model.tagger import TaggerConfig
from absa.model.tagtext import TagText, Window
from absa.model.text import TOKENIZER
from absa.training.inference import batches, seed_everything
from absa.training.sentences import Sentence
from absa.training.tag_config import TagTrainConfig
from absa.training.tag_distill import kd_loss, load_teacher, teacher_word_probs
from absa.training.tag_select import by_source, criterion
from absa.training.tagger_build import build

if TYPE_CHECKING:  # the export module (onnx, onnxruntime) loads only when a run exports
    from absa.model.extractor import Extractor
    from absa.model.tagger_export import Net, Text

log = logging.getLogger(__name__)

__all__ = ["TagRun", "TagTrainConfig", "encode", "fit_tagger", "predict_spans", "train_epoch"]


@dataclass
class Encoded:
    windows: list[Window]  # the first window of each sentence
    tags: list[np.ndarray]
    gold: list[bool]  # False: an unlabelled sentence (its tags are all O and unused)
    soft: list[np.ndarray] | None = None  # a teacher's probabilities (T_i, K) per window


def encode(
    text: Text,
    sentences: Sequence[Sentence],
    unlabelled: Sequence[str] = (),
    teacher: Path | Extractor | None = None,
) -> Encoded:
    """The sentences' first windows and BIO tags, and with a ``teacher`` its tag
    distribution per word; ValueError for a teacher that reads words with another word
    tokenizer than ``text`` (its rows would be other words: a quote glued to a word or not)."""
    ext = load_teacher(teacher) if teacher is not None else None
    if ext is not None and ext.text.tokenizer != text.tokenizer:
        raise ValueError(
            f"the teacher {ext.model_dir} reads words with word tokenizer {ext.text.tokenizer}"
            f" and the student with word tokenizer {text.tokenizer}: its tag rows would not be "
            "the student's words (a student takes its teacher's version: fit_tagger)"
        )
    windows, tags, gold, texts = [], [], [], []
    words: list[int] = []  # each text's words, over all its windows (a teacher's rows)
    items = [(s.text, s.span_set, True) for s in sentences] + [
        (t, set(), False) for t in unlabelled
    ]
    lost: list[tuple[str, tuple[int, int]]] = []  # gold spans no tagging marks exactly
    for t, spans, is_gold in items:
        parts = text.encode(t)
        if not parts:
            continue
        windows.append(parts[0])
        row = bio_tags(parts[0].tokens, spans)
        tags.append(np.array(row, dtype=np.int64))
        gold.append(is_gold)
        texts.append(t)
        words.append(sum(len(w.tokens) for w in parts))
        marked = {(a, b) for _, _, a, b in spans_of(row, parts[0].tokens)}
        lost += [(t, span) for span in sorted(spans - marked)]
    if lost:
        t, (a, b) = lost[0]
        log.warning(
            "%d of %d gold spans can never be marked exactly (inside a word, with spaces at an "
            "edge, overlapping another, or past a sentence's first %d words): trained as the "
            "words they touch and counted as misses; the first: %r in %r",
            len(lost),
            sum(len(sp) for _, sp, _ in items),
            text.max_len,
            t[a:b],
            t,
        )
    if ext is None:
        if not all(gold):
            raise ValueError("unlabelled sentences need a teacher")
        return Encoded(windows, tags, gold)
    t0 = time.perf_counter()
    probs = teacher_word_probs(ext, texts)
    for t, p, n in zip(texts, probs, words, strict=True):  # one version reads the same words
        if len(p) != n:
            raise ValueError(f"the teacher {ext.model_dir} tags {len(p)} words of {t!r}, the "
                             "student reads another number")  # fmt: skip
    soft = [p[: len(w.tokens)] for p, w in zip(probs, windows, strict=True)]
    log.info(
        "teacher %s tagged %d sentences in %.0f s",
        ext.model_dir,
        len(texts),
        time.perf_counter() - t0,
    )
    return Encoded(windows, tags, gold, soft)


def _tensors(text: Text, windows: Sequence[Window]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in text.feeds(windows).items()}


def tag_probs(net: Net, text: Text, windows: Sequence[Window], batch: int = 64) -> list:
    """Per-word tag probabilities (T_i, K) for each window, torch, eval mode."""
    net.eval()
    out: list[np.ndarray] = []
    with torch.no_grad():
        for s in range(0, len(windows), batch):
            part = windows[s : s + batch]
            probs = torch.softmax(net(**_tensors(text, part))[0], -1).numpy()
            out.extend(probs[i, : len(w.tokens)] for i, w in enumerate(part))
    return out


def predict_spans(net: Net, text: Text, texts: Sequence[str]) -> list[set]:
    """The (start, end) spans the network finds in each text, decoded as the exported
    extractor decodes them (``absa.model.extractor.decode_text``: a text longer than a
    window is stitched across its seams, not decoded window by window)."""
    from absa.model.extractor import decode_text

    windows = [text.encode(t) for t in texts]
    flat = [w for ws in windows for w in ws]
    probs = tag_probs(net, text, flat)
    learned = net.transitions()

    def tag(ws: list) -> list:
        return tag_probs(net, text, ws)

    out, k = [], 0
    for t, ws in zip(texts, windows, strict=True):
        found = decode_text(t, ws, probs[k : k + len(ws)], learned, text.encode, tag)
        out.append({(f.start, f.end) for f in found})
        k += len(ws)
    return out


def train_epoch(
    net: Net,
    opt: torch.optim.Optimizer,
    text: Text,
    data: Encoded,
    tcfg: TagTrainConfig,
    rng: random.Random,
    sched: torch.optim.lr_scheduler.LambdaLR | None = None,
) -> float:
    net.train()
    total, n = 0.0, 0
    t0 = time.perf_counter()
    for step, idx in enumerate(batches([len(w.ids) for w in data.windows], tcfg.batch_size, rng)):
        feeds = _tensors(text, [data.windows[i] for i in idx])
        if tcfg.word_dropout > 0 and isinstance(text, TagText):
            drop = torch.rand(feeds["input_ids"].shape) < tcfg.word_dropout
            feeds["input_ids"] = feeds["input_ids"].masked_fill(drop, text.words.unk_id)
        loss = batch_loss(net, feeds, data, idx, tcfg)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), tcfg.clip)
        opt.step()
        if sched is not None:
            sched.step()
        total += float(loss.detach()) * len(idx)
        n += len(idx)
        if step % 100 == 99:
            log.info("%d sentences, loss %.4f, %.0f s", n, total / n, time.perf_counter() - t0)
    return total / max(n, 1)


def batch_loss(
    net: Net,
    feeds: dict[str, torch.Tensor],
    data: Encoded,
    idx: Sequence[int],
    tcfg: TagTrainConfig,
) -> torch.Tensor:
    """The gold loss on the labelled rows; with a teacher, mixed with its KL term."""
    y = torch.zeros((len(idx), max(len(data.tags[i]) for i in idx)), dtype=torch.int64)
    words = torch.zeros_like(y)
    for row, i in enumerate(idx):
        y[row, : len(data.tags[i])] = torch.from_numpy(data.tags[i])
        words[row, : len(data.tags[i])] = 1
    logits, _ = net(**feeds)
    rows = torch.tensor([data.gold[i] for i in idx])
    loss = tag_loss(net.crf, logits[rows], y[rows], words[rows]) if rows.any() else logits.sum() * 0
    if data.soft is None:
        return loss
    soft = torch.zeros(logits.shape)
    for row, i in enumerate(idx):
        soft[row, : len(data.soft[i])] = torch.from_numpy(data.soft[i])
    kd = kd_loss(logits, soft, words, tcfg.temperature)
    # labelled rows: (1 - a) gold + a KD; unlabelled rows: KD alone (weighted by their share)
    share = float(rows.float().mean())
    return share * (1 - tcfg.distill) * loss + (tcfg.distill * share + (1 - share)) * kd


@dataclass
class TagRun:
    net: Net
    text: Text
    config: TaggerConfig
    train_config: TagTrainConfig
    dev: dict
    best_epoch: int
    history: list[dict]
    dev_sentences: list[Sentence]


def fit_tagger(
    train: Sequence[Sentence],
    dev: Sequence[Sentence],
    cfg: TaggerConfig,
    tcfg: TagTrainConfig,
    unlabelled: Sequence[str] = (),
    on_best: Callable[[TagRun], None] | None = None,
) -> TagRun:
    """Train on ``train`` (and, with a teacher, ``unlabelled`` texts), select the epoch by
    exact-span F1 on ``dev`` (``tcfg.select``: pooled or the mean over sources);
    ``on_best`` sees the run as it stands after each epoch that is the best so far."""
    if not train or not dev:
        raise ValueError("extraction training needs train and dev sentences")
    seed_everything(tcfg.seed)
    torch.set_num_threads(tcfg.threads)
    steps = -(-(len(train) + len(unlabelled)) // tcfg.batch_size)
    teacher = load_teacher(Path(tcfg.teacher)) if tcfg.teacher else None
    tokenizer = teacher.text.tokenizer if teacher is not None else TOKENIZER
    if tokenizer != TOKENIZER:
        log.info("the student reads words with its teacher's word tokenizer %d (new runs: %d)",
                 tokenizer, TOKENIZER)  # fmt: skip
    built = build(train, cfg, tcfg, steps, tokenizer)
    net, text, cfg = built.net, built.text, built.config
    data = encode(text, train, unlabelled, teacher)
    gold = [s.span_set for s in dev]
    rng = random.Random(tcfg.seed)
    best: tuple[float, int, dict, dict] = (-1.0, 0, {}, {})
    history: list[dict] = []
    for epoch in range(1, tcfg.epochs + 1):
        t0 = time.perf_counter()
        loss = train_epoch(net, built.opt, text, data, tcfg, rng, built.sched)
        pred = predict_spans(net, text, [s.text for s in dev])
        rep, sources = span_scores(gold, pred), by_source(dev, pred)
        score = criterion(rep, sources, tcfg)
        history.append({"epoch": epoch, "train_loss": loss, "seconds": time.perf_counter() - t0})
        history[-1].update({f"dev_{k}": v for k, v in rep.items()})
        history[-1].update(dev_by_source={k: r["f1"] for k, r in sources.items()}, dev_select=score)
        log.info("epoch %d loss %.4f dev P %.2f R %.2f F1 %.2f, %s %.2f", epoch, loss,
                 rep["precision"], rep["recall"], rep["f1"], tcfg.select, score)  # fmt: skip
        if not math.isfinite(loss):  # NaN weights tag nothing: no later epoch is kept either
            log.warning("epoch %d: training loss %s: the network diverged, training stops "
                        "(best epoch so far: %d)", epoch, loss, best[1])  # fmt: skip
            break
        if score > best[0]:
            state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            best = (score, epoch, {**rep, "select": score, "by_source": sources}, state)
            if on_best is not None:  # the network holds the best weights now
                on_best(TagRun(net, text, cfg, tcfg, best[2], epoch, list(history), list(dev)))
        elif epoch - best[1] >= tcfg.patience:
            break
    if best[1] == 0:  # the first epoch diverged: no weights to keep
        raise ValueError("training diverged in epoch 1 (its loss is not a number): try a lower lr")
    net.load_state_dict(best[3])
    net.eval()
    return TagRun(net, text, cfg, tcfg, best[2], best[1], history, list(dev))


def write_sentences(path: Path, sentences: Sequence[Sentence]) -> None:
    with Path(path).open("w", encoding="utf-8") as f:
        for s in sentences:
            spans = [[sp.start, sp.end, sp.label] for sp in s.spans]
            rec = {"text": s.text, "spans": spans, "source": s.source}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
