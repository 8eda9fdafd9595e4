"""Tests for training.train and training.checkpoint: every preset learns, the run directory,
strict reloading, reproducibility, the dev split, and a short run on real SemEval data."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from model.text import LABELS
from tests.helpers import data_dir, synthetic_examples, tiny_preset
from training.checkpoint import RUN_KIND, WEIGHTS, load_run
from training.evaluate import evaluate, model_kind
from training.presets import PRESETS, TrainConfig, get_preset
from training.records import DataError, Example
from training.train import encode_all, fit, predict_probs, resolve_device, split_dev

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


# --------------------------------------------------------------------------- the run directory


def test_run_directory_contents(tiny_run: Path) -> None:
    names = {p.name for p in tiny_run.iterdir()}
    expected = {
        WEIGHTS,
        "model_config.json",
        "train_config.json",
        "vocab.json",
        "pipeline.json",
        "history.json",
        "history.png",
        "metrics.json",
        "run.json",
        "dev.jsonl",
    }
    assert expected <= names
    assert (tiny_run / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    info = json.loads((tiny_run / "run.json").read_text())
    assert info["kind"] == RUN_KIND and info["preset"] == "atae-lstm"
    assert info["seed"] == 3
    assert info["data"] == {"source": "synthetic"}
    assert info["n_train"] == info["n_dev"] == 24 and info["dev_split"] == "file"
    assert isinstance(info["code_version"], str) and info["code_version"]
    history = json.loads((tiny_run / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, len(history) + 1))
    assert {"train_loss", "dev_loss", "dev_accuracy", "dev_macro_f1", "seconds"} <= set(history[0])
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    best = max(h["dev_accuracy"] for h in history)
    assert metrics["dev"]["accuracy"] == best and metrics["select_on"] == "accuracy"
    assert history[metrics["best_epoch"] - 1]["dev_accuracy"] == best
    dev = [json.loads(line) for line in (tiny_run / "dev.jsonl").read_text().splitlines()]
    assert len(dev) == 24
    assert all(r["text"][r["start"] : r["end"]] == r["aspect"] for r in dev)
    train_cfg = json.loads((tiny_run / "train_config.json").read_text())
    assert TrainConfig(**train_cfg).seed == 3
    # the device actually used is recorded (the tiny run asks for none: auto)
    expected_device = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert info["environment"]["device"].startswith(expected_device.split(":")[0])


def test_load_run_rebuilds_the_same_model(tiny_run: Path) -> None:
    examples = synthetic_examples(12, seed=0)
    a, b = load_run(tiny_run), load_run(tiny_run)
    assert a.model_config == b.model_config and a.model_config.hidden_size == 16
    assert a.info["preset"] == "atae-lstm" and a.metrics["best_epoch"] >= 1
    assert not a.net.training
    pa = predict_probs(a.net, encode_all(a.pipeline, examples), a.pipeline.pad_id)
    pb = predict_probs(b.net, encode_all(b.pipeline, examples), b.pipeline.pad_id)
    np.testing.assert_array_equal(pa, pb)
    assert model_kind(tiny_run) == "run"
    # the weights reloaded are the best epoch's (not the last one's): same dev loss
    history = json.loads((tiny_run / "history.json").read_text())
    best = a.metrics["best_epoch"]
    assert best < len(history)  # otherwise this check proves nothing
    y = [e.label_id for e in examples]  # dev = train = these examples
    dev_loss = float(-np.log(pa[np.arange(len(y)), y] + 1e-12).mean())
    assert dev_loss == pytest.approx(history[best - 1]["dev_loss"], rel=1e-5)
    assert dev_loss != pytest.approx(history[-1]["dev_loss"], rel=1e-5)
    rep = evaluate(tiny_run, examples)
    assert rep["accuracy"] == pytest.approx(a.metrics["dev"]["accuracy"])


@pytest.mark.parametrize(
    ("key", "value"),
    [("hidden_size", 12), ("bidirectional", True), ("vocab_size", 7), ("cell", "gru")],
)
def test_load_run_fails_on_a_config_that_does_not_fit(
    tiny_run: Path, tmp_path: Path, key: str, value: object
) -> None:
    run = shutil.copytree(tiny_run, tmp_path / "run")
    cfg = json.loads((run / "model_config.json").read_text())
    cfg[key] = value
    (run / "model_config.json").write_text(json.dumps(cfg))
    with pytest.raises(RuntimeError, match="state_dict"):
        load_run(run)


def test_load_run_fails_on_missing_or_foreign_run(tiny_run: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run.json"):
        load_run(tmp_path)
    run = shutil.copytree(tiny_run, tmp_path / "run")
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "kind": "something-else"}))
    with pytest.raises(ValueError, match="kind"):
        load_run(run)
    run2 = shutil.copytree(tiny_run, tmp_path / "run2")
    cfg = json.loads((run2 / "model_config.json").read_text())
    (run2 / "model_config.json").write_text(json.dumps({**cfg, "layers": 3}))
    with pytest.raises(ValueError, match="unknown model config keys"):
        load_run(run2)


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
    dev = [(tmp_path / n / "dev.jsonl").read_text() for n in ("a", "b")]
    assert dev[0] == dev[1]


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
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["n_train"] + info["n_dev"] == 20 and info["n_dev"] == 4
    assert "20% of train" in info["dev_split"]
    _, dev = split_dev(examples, 0.2, preset.train.seed)
    rows = [json.loads(line) for line in (tmp_path / "dev.jsonl").read_text().splitlines()]
    assert [(r["text"], r["start"], r["label"]) for r in rows] == [
        (e.text, e.start, e.label) for e in dev
    ]


def test_fit_reports_bad_spans_with_their_source(small_glove: Path, tmp_path: Path) -> None:
    bad = [Example("the food", 3, 4, "positive", "data.jsonl:7")]  # a whitespace span
    good = synthetic_examples(3)
    with pytest.raises(DataError, match="data.jsonl:7"):
        fit(good + bad, good, tiny_preset("atae-lstm", small_glove), tmp_path, progress=False)


def test_train_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="select_on"):
        TrainConfig(select_on="loss")
    with pytest.raises(ValueError, match="dev_fraction"):
        TrainConfig(dev_fraction=0.0)
    with pytest.raises(ValueError, match="distill"):
        TrainConfig(distill=1.5)
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


# --------------------------------------------------------------------------- real data


@pytest.mark.skipif(not (DATA / "semeval14").is_dir(), reason="no shared SemEval-14 data")
def test_real_short_run_beats_the_majority_class(tmp_path: Path) -> None:
    from training.readers import read_examples

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


def test_code_version_without_git_uses_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the tree travels without git (a Docker build), ABSA_CODE_VERSION names it."""
    import subprocess

    from training.checkpoint import code_version

    def no_git(*args: object, **kwargs: object) -> None:
        raise OSError("git: not found")

    monkeypatch.setattr(subprocess, "run", no_git)
    monkeypatch.setenv("ABSA_CODE_VERSION", "abc123")
    assert code_version() == "abc123"
    monkeypatch.delenv("ABSA_CODE_VERSION")
    assert code_version().startswith(("absa ", "unknown"))
