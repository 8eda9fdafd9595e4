"""Tests for training.source_scores and ``select_on="source_mean"``: dev accuracy per
training file, each file weighed alike when the epoch is chosen."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from absa.training.evaluate import evaluate
from absa.training.presets import TrainConfig
from absa.training.provenance import ROOT
from absa.training.records import Example
from absa.training.rundir import METRICS, read_metrics
from absa.training.source_scores import by_source, source_mean, source_names
from absa.training.train import epoch_score, fit
from tests.helpers import synthetic_examples, tiny_preset


def test_source_names_drop_the_line_and_name_a_missing_source() -> None:
    examples = [
        Example("a b", 0, 1, "positive", "data/mams/train.xml:12"),
        Example("a b", 0, 1, "positive", "data/Laptops_Train.xml.seg:7"),
        Example("a b", 0, 1, "positive"),
    ]
    assert source_names(examples) == ["data/mams/train.xml", "data/Laptops_Train.xml.seg", "other"]
    # a path given absolutely, beside the checkout, is named as records name it
    beside = ROOT.parent / "shared" / "data" / "mams" / "train.xml"
    absolute = Example("a b", 0, 1, "positive", f"{beside}:3")
    assert source_names([absolute]) == ["../shared/data/mams/train.xml"]


def test_read_metrics_names_older_runs_sources_as_records_do(tmp_path: Path) -> None:
    beside = str(ROOT.parent / "shared" / "data" / "mams" / "train.xml")
    dev = {"accuracy": 0.5, "by_source": {beside: 0.5, "other": 0.25}}
    (tmp_path / METRICS).write_text(json.dumps({"dev": dev}))
    by = read_metrics(tmp_path)["dev"]["by_source"]
    assert by == {"../shared/data/mams/train.xml": 0.5, "other": 0.25}


def test_by_source_and_their_mean_weigh_each_source_alike() -> None:
    # "big": 3 of 4 right; "small": 0 of 1 right -> pooled 3/5, mean of sources (0.75 + 0) / 2
    gold = [0, 1, 2, 0, 1]
    pred = [0, 1, 2, 1, 0]
    names = ["big", "big", "big", "big", "small"]
    scores = by_source(gold, pred, names)
    assert scores == {"big": 0.75, "small": 0.0}
    assert source_mean(scores) == pytest.approx(0.375)
    assert source_mean({}) == 0.0


def test_select_on_source_mean_keeps_the_epoch_of_the_best_mean(
    small_glove: Path, tmp_path: Path
) -> None:
    train = synthetic_examples(9, seed=3)
    # dev from two files of unequal size: the mean differs from the pooled accuracy
    dev = [
        replace(e, source=f"{'a.xml' if i < len(train) - 4 else 'b.xml'}:{i}")
        for i, e in enumerate(train)
    ]
    base = tiny_preset("atae-lstm", small_glove)
    preset = replace(base, train=replace(base.train, epochs=5, select_on="source_mean", lr=0.1))
    result = fit(train, dev, preset, tmp_path, progress=False)
    rows = result.history
    assert all(set(h["dev_by_source"]) == {"a.xml", "b.xml"} for h in rows)
    means = [h["dev_source_mean"] for h in rows]
    for h in rows:
        assert h["dev_source_mean"] == pytest.approx(sum(h["dev_by_source"].values()) / 2)
    best = max(means)
    ties = [h for h in rows if h["dev_source_mean"] == best]
    assert result.best_epoch == min(ties, key=lambda h: h["dev_loss"])["epoch"]
    assert result.dev["source_mean"] == best
    assert evaluate(tmp_path, dev)["accuracy"] == pytest.approx(result.dev["accuracy"])


def test_epoch_score_ranks_by_the_chosen_metric_then_the_loss() -> None:
    # epoch 1: pooled 0.80, mean of sources 0.60; epoch 2: pooled 0.78, mean 0.70
    one = {"accuracy": 0.80, "macro_f1": 0.7, "source_mean": 0.60}
    two = {"accuracy": 0.78, "macro_f1": 0.7, "source_mean": 0.70}
    assert epoch_score(one, 0.5, "accuracy") > epoch_score(two, 0.5, "accuracy")
    assert epoch_score(two, 0.5, "source_mean") > epoch_score(one, 0.5, "source_mean")
    assert epoch_score(one, 0.4, "macro_f1") > epoch_score(two, 0.5, "macro_f1")  # a tie
    assert epoch_score(two, 0.4, "loss") > epoch_score(one, 0.5, "loss")


def test_select_on_names_its_choices() -> None:
    TrainConfig(select_on="source_mean")
    with pytest.raises(ValueError, match="source_mean"):
        TrainConfig(select_on="mean")
