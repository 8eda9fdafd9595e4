"""Choosing the tagger's epoch: dev F1 per source, the mean-over-sources criterion, and the
training loop that selects by it and hands each new best epoch to ``on_best``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from absa.model.tagger_config import TaggerConfig
from absa.training.sentences import GoldSpan, Sentence
from absa.training.tag_select import by_source, criterion, source_name
from absa.training.tagging import TagRun, TagTrainConfig, fit_tagger
from tests.helpers import extraction_sentences


def _sent(source: str, *spans: tuple[int, int]) -> Sentence:
    return Sentence("x" * 40, tuple(GoldSpan(a, b, "positive") for a, b in spans), source)


def test_dev_scores_per_source_and_the_mean_criterion() -> None:
    assert source_name("/data/mams/train.xml:42") == "mams/train.xml"
    assert source_name("/d/acos-laptop/train.jsonl:7") == "acos-laptop/train.jsonl"
    dev = [
        _sent("/d/semeval14/rest.xml:1", (0, 3)),
        _sent("/d/semeval14/rest.xml:2", (4, 6)),
        _sent("/d/mams/train.xml:1", (0, 2), (3, 5), (6, 8), (9, 11)),
        _sent("/d/acos-laptop/train.jsonl:3", (0, 1)),
    ]
    pred = [{(0, 3)}, {(4, 6)}, {(0, 2)}, set()]
    sources = by_source(dev, pred)
    assert list(sources) == ["acos-laptop/train.jsonl", "mams/train.xml", "semeval14/rest.xml"]
    assert sources["semeval14/rest.xml"]["f1"] == 100.0
    assert sources["mams/train.xml"]["f1"] == pytest.approx(40.0)  # P 100, R 25
    assert sources["acos-laptop/train.jsonl"]["f1"] == 0.0
    pooled = {"f1": 999.0}
    assert criterion(pooled, sources, TagTrainConfig()) == 999.0  # the default: pooled
    mean = TagTrainConfig(select="source_mean")
    assert criterion(pooled, sources, mean) == pytest.approx(140.0 / 3)
    no_acos = TagTrainConfig.from_dict({"select": "source_mean", "select_skip": ["acos"]})
    assert no_acos.select_skip == ("acos",)
    assert criterion(pooled, sources, no_acos) == pytest.approx(70.0)
    with pytest.raises(ValueError, match="leaves no dev source"):
        criterion(pooled, sources, replace(no_acos, select_skip=("/",)))


def test_the_train_config_refuses_an_unknown_criterion() -> None:
    with pytest.raises(ValueError, match="select must be one of"):
        TagTrainConfig(select="f1")
    with pytest.raises(ValueError, match="list of source name parts"):
        TagTrainConfig.from_dict({"select_skip": "acos"})


def test_the_loop_keeps_the_epoch_of_the_best_source_mean(small_glove: Path) -> None:
    sentences = extraction_sentences()
    dev = [replace(s, source=f"/d/{'ab'[i % 2]}/x.xml:{i}") for i, s in enumerate(sentences)]
    cfg = TaggerConfig(hidden_size=8, char_dim=4, char_filters=4)
    tcfg = TagTrainConfig(epochs=8, patience=100, batch_size=8, lr=0.02, glove=str(small_glove),
                          glove_top_k=0, select="source_mean")  # fmt: skip
    seen: list[TagRun] = []
    run = fit_tagger(sentences, dev, cfg, tcfg, on_best=seen.append)
    scores = [h["dev_select"] for h in run.history]
    for h in run.history:
        assert set(h["dev_by_source"]) == {"a/x.xml", "b/x.xml"}
        assert h["dev_select"] == pytest.approx(sum(h["dev_by_source"].values()) / 2)
    assert run.best_epoch == 1 + scores.index(max(scores))
    assert run.dev["select"] == max(scores)
    assert set(run.dev["by_source"]) == {"a/x.xml", "b/x.xml"}
    # on_best saw exactly the epochs that beat every earlier one, the last being the best
    records = [i + 1 for i, s in enumerate(scores) if s > max(scores[:i], default=-1.0)]
    assert [r.best_epoch for r in seen] == records
    assert [len(r.history) for r in seen] == records
    assert len(seen) >= 2  # it improved at least once after the first epoch
