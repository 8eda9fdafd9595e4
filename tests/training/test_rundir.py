"""Tests for training.rundir: what a run directory holds, reading it back strictly, and the
evaluation results ``absa train --eval`` adds to it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from absa.training.evaluate import evaluate, model_kind
from absa.training.inference import encode_all, predict_probs
from absa.training.presets import TrainConfig
from absa.training.records import Example
from absa.training.rundir import (
    RUN_KIND,
    WEIGHTS,
    add_eval,
    is_run,
    load_run,
    read_dev_examples,
    read_info,
    read_metrics,
)
from tests.helpers import synthetic_examples


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
    assert info["data"] == {"source": "synthetic", "sentence_key": "bracket_free"}
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
    (run2 / "model_config.json").write_text(json.dumps({**cfg, "depth": 3}))
    with pytest.raises(ValueError, match="unknown model config keys"):
        load_run(run2)


def test_a_run_whose_files_cannot_be_read_is_refused_naming_the_file(
    tiny_run: Path, tmp_path: Path
) -> None:
    """A train_config.json key this code does not know (a run of other code) failed with a
    TypeError traceback; run.json that is not JSON, or not an object, with a message that
    named no file (or an AttributeError)."""
    run = shutil.copytree(tiny_run, tmp_path / "run")
    cfg = json.loads((run / "train_config.json").read_text())
    (run / "train_config.json").write_text(json.dumps({**cfg, "warmup_steps": 10}))
    with pytest.raises(ValueError, match=r"train_config.json: unknown .*'warmup_steps'"):
        load_run(run)
    for text in ("{torn", "[]"):
        (run / "run.json").write_text(text)
        with pytest.raises(ValueError, match="run.json"):
            read_info(run)


@pytest.mark.parametrize(
    ("name", "key", "value", "says"),
    [
        ("model_config.json", "hidden_size", "150", "valid integer"),
        ("model_config.json", "bidirectional", "yes", "valid boolean"),
        ("train_config.json", "epochs", "3", "valid integer"),
        ("train_config.json", "lr", None, "valid number"),
    ],
)
def test_a_run_config_value_of_the_wrong_type_is_refused_naming_file_and_key(
    tiny_run: Path, tmp_path: Path, name: str, key: str, value: object, says: str
) -> None:
    """A run's own model_config.json or train_config.json edited by hand ("hidden_size":
    "150") failed later with a TypeError traceback from torch, or trained with the string;
    now the run is refused as a --config file is, naming the file, the key and the value."""
    run = shutil.copytree(tiny_run, tmp_path / "run")
    cfg = json.loads((run / name).read_text())
    (run / name).write_text(json.dumps({**cfg, key: value}))
    with pytest.raises(ValueError, match=rf"{name}: {key}: input should be a {says}, not "):
        load_run(run)


# --------------------------------------------------------------------------- the readers


def test_read_dev_examples_gives_back_what_fit_saved(tiny_run: Path) -> None:
    dev = read_dev_examples(tiny_run)
    want = synthetic_examples(12, seed=0)  # tiny_run's dev set
    assert [(e.text, e.start, e.end, e.label) for e in dev] == [
        (e.text, e.start, e.end, e.label) for e in want
    ]
    assert dev[0].source.endswith("dev.jsonl:1") and dev[-1].source.endswith(f":{len(want)}")


def test_read_dev_examples_keeps_non_ascii_text_and_skips_blank_lines(tmp_path: Path) -> None:
    row = {"text": "le café était bon", "aspect": "café", "start": 3, "end": 7, "label": "positive"}
    (tmp_path / "dev.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n\n")
    assert read_dev_examples(tmp_path) == [
        Example("le café était bon", 3, 7, "positive", f"{tmp_path / 'dev.jsonl'}:1")
    ]


def test_read_info_checks_the_kind(tiny_run: Path, tmp_path: Path) -> None:
    assert read_info(tiny_run)["kind"] == RUN_KIND and is_run(tiny_run)
    assert not is_run(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a training run directory"):
        read_info(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"kind": "absa-artifact"}))
    with pytest.raises(ValueError, match="'absa-artifact', expected 'absa-run'"):
        read_info(tmp_path)


def test_read_metrics_of_a_run_without_them(tmp_path: Path) -> None:
    assert read_metrics(tmp_path) == {}


# --------------------------------------------------------------------------- --eval results


def test_add_eval_records_reports_and_keeps_the_rest(tiny_run: Path, tmp_path: Path) -> None:
    run = shutil.copytree(tiny_run, tmp_path / "run")
    before = json.loads((run / "metrics.json").read_text())
    assert add_eval(run, {}) == before  # nothing to add: nothing changes
    assert "eval" not in json.loads((run / "metrics.json").read_text())
    rep_a, rep_b = {"n": 3, "accuracy": 1.0}, {"n": 5, "accuracy": 0.6}
    add_eval(run, {"a.jsonl": rep_a})
    metrics = add_eval(run, {"b.jsonl": rep_b})
    assert metrics == json.loads((run / "metrics.json").read_text())
    assert metrics["eval"] == {"a.jsonl": rep_a, "b.jsonl": rep_b}
    assert {k: v for k, v in metrics.items() if k != "eval"} == before
    assert list(metrics) == [*before, "eval"]
    assert load_run(run).metrics == metrics


def test_a_weights_write_error_keeps_the_errno_safetensors_names() -> None:
    """safetensors says "Read-only file system (os error 30)": that was reported as EIO, which
    absa train answers with exit 75, "may succeed if run again"."""
    import errno

    from absa.training.rundir import _os_error

    said = 'I/O error: Read-only file system (os error 30) at path "/x/.tmpBZeOBu"'
    assert _os_error(said) == errno.EROFS
    assert _os_error("No space left on device") == errno.ENOSPC
    assert _os_error("something else") == errno.EIO
