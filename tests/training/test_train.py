"""Tests for training.train: every preset learns, reproducibility, the dev split, the
early-stopping bookkeeping and the learning-rate schedule, and a short run on real data."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.model.text import LABELS
from absa.training.evaluate import evaluate
from absa.training.inference import resolve_device
from absa.training.optim import balanced_weights, make_schedule
from absa.training.overlap import bracket_free
from absa.training.presets import PRESETS, TrainConfig, get_preset
from absa.training.records import DataError, Example
from absa.training.rundir import DEV, WEIGHTS, is_run, read_dev_examples, read_info
from absa.training.train import EarlyStopping, fit
from absa.training.train_data import split_dev
from tests.helpers import data_dir, synthetic_examples, tiny_preset

DATA = data_dir()
GLOVE_PRESETS = [name for name in PRESETS if name != "accurate"]


# --------------------------------------------------------------------------- every preset learns


@pytest.mark.parametrize("name", GLOVE_PRESETS)
def test_preset_overfits_a_small_set(name: str, small_glove: Path, tmp_path: Path) -> None:
    # the "lstm" baseline never sees the aspect, so it gets one aspect per sentence; the
    # others get both aspects of each sentence (opposite labels): they must use the aspect.
    examples = synthetic_examples(12 if name != "lstm" else 24, seed=5, paired=name != "lstm")
    assert len(examples) == 24
    result = fit(examples, examples, tiny_preset(name, small_glove), tmp_path, progress=False)
    report = evaluate(tmp_path, examples)
    assert report["accuracy"] >= 0.9, (name, report["accuracy"], result.history[-1])
    assert report["n"] == 24
    assert result.dev["accuracy"] == pytest.approx(report["accuracy"])


@pytest.mark.parametrize(
    "labels", [("positive", "neutral", "negative"), ("negative", "positive")], ids=["order", "two"]
)
def test_the_configs_labels_are_what_the_model_learns_and_answers(
    labels: tuple[str, ...], small_glove: Path, tmp_path: Path
) -> None:
    """model.labels in a config: gold labels were numbered in the fixed order, the outputs
    named in the config's, so a reordered model answered positive for negative (its dev
    accuracy 100, its artifact's 35) and two labels ended in an IndexError."""
    from absa.model.runtime import Runtime
    from absa.training.exporting import export_run

    examples = [e for e in synthetic_examples(12, seed=5) if e.label in labels]
    fit(examples, examples, tiny_preset("atae-lstm", small_glove, labels=labels), tmp_path / "r")
    assert evaluate(tmp_path / "r", examples)["accuracy"] >= 0.9
    export_run(tmp_path / "r", tmp_path / "a", version="t")
    runtime = Runtime.load(tmp_path / "a", device="cpu", threads=1)
    assert runtime.labels == list(labels)
    probs = runtime.predict_proba([(e.text, e.start, e.end) for e in examples])
    answered = [labels[i] for i in probs.argmax(1)]
    assert sum(a == e.label for a, e in zip(answered, examples, strict=True)) >= 0.9 * len(examples)


def test_aspect_blind_baseline_cannot_fit_paired_aspects(small_glove: Path, tmp_path: Path) -> None:
    """The same sentence asked about two aspects with opposite labels: without the aspect
    the baseline answers both the same, so at most one of each pair is right."""
    examples = [e for e in synthetic_examples(12, seed=5) if e.label != "neutral"]
    preset = tiny_preset("lstm", small_glove)
    fit(
        examples,
        examples,
        replace(preset, train=replace(preset.train, epochs=5)),
        tmp_path,
        progress=False,
    )
    assert evaluate(tmp_path, examples)["accuracy"] <= 0.5


# --------------------------------------------------------------------------- reproducibility


def test_same_seed_same_history(small_glove: Path, tmp_path: Path) -> None:
    examples = synthetic_examples(9, seed=2)
    base = tiny_preset("atae-gru", small_glove, dropout=0.3)  # dropout draws random numbers too
    runs = []
    for name, seed in (("a", 11), ("b", 11), ("c", 12)):
        preset = replace(base, train=replace(base.train, epochs=3, seed=seed))
        runs.append(fit(examples, None, preset, tmp_path / name, progress=False))  # seeded split
    losses = [[(h["train_loss"], h["dev_loss"]) for h in r.history] for r in runs]
    assert losses[0] == losses[1]
    assert losses[0] != losses[2]
    assert (tmp_path / "a" / WEIGHTS).read_bytes() == (tmp_path / "b" / WEIGHTS).read_bytes()
    assert (tmp_path / "a" / DEV).read_bytes() == (tmp_path / "b" / DEV).read_bytes()


def test_weight_average_is_what_is_evaluated_and_kept(small_glove: Path, tmp_path: Path) -> None:
    """With ``ema`` the moving average is scored on dev and saved: the kept weights give
    the dev report of their epoch, and they are not the plain run's."""
    examples = synthetic_examples(12, seed=5, paired=True)
    base = tiny_preset("card", small_glove)
    runs = {}
    for name, ema in (("plain", 0.0), ("ema", 0.9)):
        preset = replace(base, train=replace(base.train, epochs=6, ema=ema))
        runs[name] = fit(examples, examples, preset, tmp_path / name, progress=False)
    for name, result in runs.items():
        assert evaluate(tmp_path / name, examples)["accuracy"] == pytest.approx(
            result.dev["accuracy"]
        )
    assert [h["dev_loss"] for h in runs["plain"].history] != [
        h["dev_loss"] for h in runs["ema"].history
    ]
    assert (tmp_path / "plain" / WEIGHTS).read_bytes() != (tmp_path / "ema" / WEIGHTS).read_bytes()
    # the training itself is the same: the average only watches it
    assert [h["train_loss"] for h in runs["plain"].history] == [
        h["train_loss"] for h in runs["ema"].history
    ]


def test_balanced_class_weights() -> None:
    y = torch.tensor([0, 0, 0, 2, 2, 1])  # 3 / 1 / 2 of 6
    torch.testing.assert_close(balanced_weights(y, 3), torch.tensor([2 / 3, 2.0, 1.0]))
    absent = balanced_weights(torch.tensor([0, 2]), 3)  # no neutral in train
    torch.testing.assert_close(absent, torch.tensor([2 / 3, 0.0, 2 / 3]))


def test_balanced_class_weights_change_the_loss(small_glove: Path, tmp_path: Path) -> None:
    examples = [e for e in synthetic_examples(12, seed=5) if e.label != "neutral"]
    examples += [e for e in synthetic_examples(12, seed=6) if e.label == "neutral"][:2]
    base = tiny_preset("fast", small_glove)
    losses = []
    for name in ("none", "balanced"):
        preset = replace(base, train=replace(base.train, epochs=2, class_weights=name))
        run = fit(examples, examples, preset, tmp_path / name, progress=False)
        losses.append([h["train_loss"] for h in run.history])
    assert losses[0] != losses[1]


# --------------------------------------------------------------------------- dev split


def sentences(n: int) -> list[Example]:
    """n sentences with 1 to 3 aspects each."""
    out = []
    for i in range(n):
        text = f"sentence {i} has food service and wine"
        for j, term in enumerate(("food", "service", "wine")[: 1 + i % 3]):
            s = text.index(term)
            out.append(Example(text, s, s + len(term), LABELS[(i + j) % 3], f"s:{i}.{j}"))
    return out


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5])
def test_split_dev_holds_out_whole_sentences(fraction: float) -> None:
    examples = sentences(100)  # 200 examples
    train, dev = split_dev(examples, fraction, seed=7)
    target = round(len(examples) * fraction)
    assert target <= len(dev) < target + 3  # whole sentences: at most 2 over the target
    assert not {e.text for e in train} & {e.text for e in dev}
    assert Counter(train + dev) == Counter(examples)


def test_split_dev_is_deterministic() -> None:
    examples = sentences(60)
    a = split_dev(examples, 0.2, seed=1)
    assert split_dev(list(examples), 0.2, seed=1) == a
    assert split_dev(examples, 0.2, seed=2) != a


def test_split_dev_keeps_one_sentence_in_two_spellings_on_one_side() -> None:
    """MAMS and SemEval-2014 restaurants hold the same sentences, one with "(" and "n't",
    the other with "-LRB-" and "n 't": grouped by the exact text, the two copies could land
    on both sides (29 of the shipped union's dev sentences were in train so)."""
    examples = sentences(60)
    for i in range(0, 60, 3):  # each of 20 sentences again, another tokenisation
        text = f"-LRB- sentence {i} -RRB- has food , service and wine"
        s = text.index("food")
        examples.append(Example(text, s, s + 4, LABELS[i % 3], f"other:{i}"))

    def shared(train: list[Example], dev: list[Example]) -> set[str]:
        return {bracket_free(e.text) for e in train} & {bracket_free(e.text) for e in dev}

    assert not any(shared(*split_dev(examples, 0.3, seed=seed)) for seed in range(1, 6))
    # by the exact text (runs made before sentence_key), they were split apart
    assert any(shared(*split_dev(examples, 0.3, seed=seed, key=str)) for seed in range(1, 6))


def test_split_dev_needs_enough_examples() -> None:
    with pytest.raises(DataError, match="too few"):
        split_dev(sentences(1), 0.1, seed=1)
    train, dev = split_dev(sentences(2), 0.1, seed=1)
    assert train and dev


def test_fit_without_dev_splits_train(small_glove: Path, tmp_path: Path) -> None:
    examples = synthetic_examples(10, seed=4)
    preset = tiny_preset("at-lstm", small_glove)
    preset = replace(preset, train=replace(preset.train, epochs=2, dev_fraction=0.2))
    fit(examples, None, preset, tmp_path, progress=False)
    info = read_info(tmp_path)
    assert info["n_train"] + info["n_dev"] == 20 and info["n_dev"] == 4
    assert "20% of train" in info["dev_split"]
    _, dev = split_dev(examples, 0.2, preset.train.seed)
    saved = read_dev_examples(tmp_path)
    assert [(e.text, e.start, e.end, e.label) for e in saved] == [
        (e.text, e.start, e.end, e.label) for e in dev
    ]


def test_dev_seed_fixes_the_split_apart_from_the_seed(small_glove: Path, tmp_path: Path) -> None:
    """A student of seed 3 keeps the seed-1 split of the teacher it learns from."""
    examples = synthetic_examples(10, seed=4)
    preset = tiny_preset("at-lstm", small_glove)
    tcfg = replace(preset.train, epochs=1, dev_fraction=0.2, seed=3, dev_seed=1)
    fit(examples, None, replace(preset, train=tcfg), tmp_path, progress=False)
    _, dev_1 = split_dev(examples, 0.2, seed=1)
    _, dev_3 = split_dev(examples, 0.2, seed=3)
    assert {e.text for e in dev_1} != {e.text for e in dev_3}  # the two seeds' splits differ
    saved = {e.text for e in read_dev_examples(tmp_path)}
    assert saved == {e.text for e in dev_1}
    info = read_info(tmp_path)
    assert info["seed"] == 3 and "held out with seed 1" in info["dev_split"]


class Rewrite(logging.Handler):
    """The vectors file rewritten in place once training has read it (a chain that makes
    its inputs again while a long run trains): at the log line ``build_network`` writes."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("training on"):
            self.path.write_text(self.path.read_text() + "zzz " + "0.5 " * 49 + "0.5\n")


def test_an_embed_dim_the_vectors_overrule_is_said(
    small_glove: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ "embed_dim": 50 with vectors 32 wide became 32 without a word."""
    width = len(small_glove.read_text().splitlines()[0].split()) - 1
    base = tiny_preset("atae-lstm", small_glove, embed_dim=width + 7)
    preset = replace(base, train=replace(base.train, epochs=1))
    with caplog.at_level(logging.INFO, logger="absa.training.train"):
        fit(synthetic_examples(6), None, preset, tmp_path / "run", progress=False)
    said = f"embed_dim is the word vectors' width, {width} (the config says {width + 7})"
    assert said in caplog.messages
    caplog.clear()
    same = replace(preset, model=replace(preset.model, embed_dim=width))
    with caplog.at_level(logging.INFO, logger="absa.training.train"):
        fit(synthetic_examples(6), None, same, tmp_path / "run2", progress=False)
    assert not [m for m in caplog.messages if m.startswith("embed_dim")]


def test_run_json_names_the_vectors_file_that_was_trained_on(
    small_glove: Path, tmp_path: Path
) -> None:
    """Its sha256 was taken when the run was written, hours later: a file rewritten in the
    meantime was recorded as what the run trained on."""
    glove = tmp_path / "vectors.txt"
    glove.write_bytes(small_glove.read_bytes())
    read = hashlib.sha256(glove.read_bytes()).hexdigest()
    base = tiny_preset("atae-lstm", glove)
    preset = replace(base, train=replace(base.train, epochs=1))
    logger = logging.getLogger("absa.training.train")
    rewrite, level = Rewrite(glove), logger.level
    logger.addHandler(rewrite)
    logger.setLevel(logging.INFO)
    try:
        fit(synthetic_examples(6), None, preset, tmp_path / "run", progress=False)
    finally:
        logger.removeHandler(rewrite)
        logger.setLevel(level)
    assert hashlib.sha256(glove.read_bytes()).hexdigest() != read
    assert read_info(tmp_path / "run")["vectors"]["sha256"] == read


def test_fit_reports_bad_spans_with_their_source(small_glove: Path, tmp_path: Path) -> None:
    bad = [Example("the food", 3, 4, "positive", "data.jsonl:7")]  # a whitespace span
    good = synthetic_examples(3)
    with pytest.raises(DataError, match="data.jsonl:7"):
        fit(good + bad, good, tiny_preset("atae-lstm", small_glove), tmp_path, progress=False)


def test_train_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="select_on"):
        TrainConfig(select_on="nll")
    with pytest.raises(ValueError, match="dev_fraction"):
        TrainConfig(dev_fraction=0.0)
    with pytest.raises(ValueError, match="distill"):
        TrainConfig(distill=1.5)
    with pytest.raises(ValueError, match="ema"):
        TrainConfig(ema=1.0)
    with pytest.raises(ValueError, match="class_weights"):
        TrainConfig(class_weights="inverse")
    with pytest.raises(ValueError, match="device"):
        TrainConfig(device="tpu")


def test_resolve_device() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    if torch.cuda.is_available():
        assert resolve_device("auto").type == resolve_device("cuda").type == "cuda"
    else:
        assert resolve_device("auto") == torch.device("cpu")
        with pytest.raises(RuntimeError, match="no CUDA GPU"):
            resolve_device("cuda")


# ------------------------------------------------------------------ early stopping, schedule


def test_early_stopping_keeps_the_best_epoch_and_counts_the_rest() -> None:
    stop = EarlyStopping(patience=2)
    assert stop.update(1, (0.5, -1.0), {"accuracy": 0.5})  # the first epoch always improves
    assert stop.update(2, (0.5, -0.9), {"accuracy": 0.5, "n": 2})  # same metric, lower loss
    assert not stop.update(3, (0.5, -0.9), {"accuracy": 0.5})  # a tie is no gain
    assert not stop.exhausted and stop.bad_epochs == 1
    assert not stop.update(4, (0.4, -0.1), {"accuracy": 0.4})  # lower metric, whatever the loss
    assert stop.exhausted
    assert (stop.epoch, stop.score, stop.dev) == (2, (0.5, -0.9), {"accuracy": 0.5, "n": 2})
    assert stop.update(5, (0.6, -2.0), {"accuracy": 0.6}) and stop.bad_epochs == 0


def test_select_on_loss_keeps_the_epoch_of_the_lowest_dev_loss(
    small_glove: Path, tmp_path: Path
) -> None:
    """Also when the first epoch's dev loss is above 1 (it is still a best)."""
    examples = synthetic_examples(9, seed=3)
    base = tiny_preset("atae-lstm", small_glove)
    preset = replace(base, train=replace(base.train, epochs=5, select_on="loss", lr=0.1))
    result = fit(examples, examples, preset, tmp_path, progress=False)
    losses = [h["dev_loss"] for h in result.history]
    assert losses[0] > 1.0
    assert result.best_epoch == 1 + losses.index(min(losses))
    assert evaluate(tmp_path, examples)["accuracy"] == pytest.approx(result.dev["accuracy"])
    stop = EarlyStopping(patience=1)
    assert stop.update(1, (-1.7, 0.3), {}) and not stop.update(2, (-1.9, 0.9), {})


@pytest.mark.parametrize("select_on", ["loss", "accuracy", "macro_f1"])
def test_a_run_whose_dev_loss_is_never_a_number_is_refused_not_written(
    small_glove: Path, tmp_path: Path, select_on: str, caplog: pytest.LogCaptureFixture
) -> None:
    """select_on loss and a diverged network (every dev loss NaN): no epoch ranks above
    none, so no weights were kept. The run was written anyway, run.json with no weights and
    metrics with an empty dev report (absa train then failed with "error: accuracy"). On
    accuracy or macro-F1 (NaN outputs argmax to a label: an ordinary number) it was written,
    every weight NaN, exit 0."""
    examples = synthetic_examples(12, seed=0)
    base = tiny_preset("atae-lstm", small_glove)
    tcfg = replace(base.train, epochs=3, lr=1e30, embed_lr=1e30, select_on=select_on)
    with (
        caplog.at_level(logging.INFO, logger="absa.training.train"),
        pytest.raises(ValueError, match="diverged"),
    ):
        fit(examples, examples, replace(base, train=tcfg), tmp_path, progress=False)
    assert not is_run(tmp_path)
    # the loss is NaN from the first epoch: the run stops there (it trained every epoch)
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("epoch 1: training loss nan: the network diverged") for m in said)
    assert not any(m.startswith("epoch 2") for m in said)


def _factors(tcfg: TrainConfig, steps_per_epoch: int) -> list[float]:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = make_schedule(opt, tcfg, steps_per_epoch)
    out = []
    for _ in range(steps_per_epoch * tcfg.epochs):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_schedule_constant_or_warm_up_then_decay() -> None:
    assert _factors(TrainConfig(epochs=2, warmup=0.0), 5) == [1.0] * 10
    # 10 steps, 2 of warm-up: 1/2, 2/2, then (10 - step) / 8 down to 1/8
    got = _factors(TrainConfig(epochs=2, warmup=0.2), 5)
    want = [0.5, 1.0] + [(10 - s) / 8 for s in range(2, 10)]
    assert got == pytest.approx(want)


# --------------------------------------------------------------------------- real data


@pytest.mark.skipif(not (DATA / "semeval14").is_dir(), reason="no shared SemEval-14 data")
def test_real_short_run_beats_the_majority_class(tmp_path: Path) -> None:
    from absa.training.readers import read_examples

    root = DATA / "semeval14"
    train = read_examples(root / "Restaurants_Train.xml.seg").examples
    test = read_examples(root / "Restaurants_Test_Gold.xml.seg").examples[::4][:300]
    base = get_preset("atae-lstm")
    preset = replace(
        base,
        model=replace(base.model, hidden_size=32),
        train=replace(base.train, epochs=3, lr=0.01, threads=1),  # the packaged GloVe
    )
    fit(train, None, preset, tmp_path, progress=False, preset_name="atae-lstm")
    report = evaluate(tmp_path, test)
    majority = max(Counter(e.label for e in test).values()) / len(test)
    assert report["n"] == len(test) >= 250
    assert report["accuracy"] > majority, (report["accuracy"], majority)
    assert report["macro_f1"] > 0.4  # predicting the majority class scores about 0.26
