"""Tests for training.inference: encoding with sources in errors, length-bucketed batches,
model inputs, and predictions that do not depend on how the data is batched."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from absa.model.text import WordPipeline
from absa.training.inference import batches, encode_all, predict_probs, to_tensors
from absa.training.records import DataError, Example
from absa.training.rundir import load_run
from tests.helpers import synthetic_examples


def test_encode_all_names_the_source_of_a_bad_span() -> None:
    pipe = WordPipeline(["<pad>", "<unk>", "the", "food"], max_len=16)
    good = Example("the food", 4, 8, "positive", "a.jsonl:1")
    assert len(encode_all(pipe, [good, good])) == 2
    bad = Example("the food", 3, 4, "positive", "a.jsonl:2")  # a whitespace span
    with pytest.raises(DataError, match="a.jsonl:2"):
        encode_all(pipe, [good, bad])


def test_batches_in_order_sort_by_length() -> None:
    lengths = [5, 1, 4, 2, 3, 1, 6]
    out = batches(lengths, 3, None)
    assert [len(b) for b in out] == [3, 3, 1]
    flat = [i for b in out for i in b]
    assert sorted(flat) == list(range(7))
    assert [lengths[i] for i in flat] == sorted(lengths)


def test_shuffled_batches_cover_everything_once_and_follow_the_seed() -> None:
    lengths = [random.Random(0).randint(1, 40) for _ in range(1000)]
    a = batches(lengths, 8, random.Random(3))
    assert sorted(i for b in a for i in b) == list(range(1000))
    assert all(len(b) <= 8 for b in a)
    assert a == batches(lengths, 8, random.Random(3))
    assert a != batches(lengths, 8, random.Random(4))
    # within a batch, lengths are close: each comes from one length-sorted chunk of 400
    spread = np.mean([max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in a])
    assert spread < 3


def test_to_tensors_pads_and_adds_cached_features(tiny_run: Path) -> None:
    run = load_run(tiny_run)
    items = encode_all(run.pipeline, synthetic_examples(2, seed=1)[:3])
    cache = [torch.ones(len(e.ids), 4, dtype=torch.half) for e in items]
    out = to_tensors(items, run.pipeline.pad_id, cache)
    n = max(len(e.ids) for e in items)
    assert set(out) == {"input_ids", "attention_mask", "aspect_mask", "features"}
    assert out["input_ids"].shape == (3, n) and out["features"].shape == (3, n, 4)
    assert out["features"].dtype == torch.float32
    assert "features" not in to_tensors(items, run.pipeline.pad_id)


def test_predict_probs_keeps_the_input_order_whatever_the_batch_size(tiny_run: Path) -> None:
    run = load_run(tiny_run)
    examples = synthetic_examples(12, seed=7)
    encoded = encode_all(run.pipeline, examples)
    whole = predict_probs(run.net, encoded, run.pipeline.pad_id)
    small = predict_probs(run.net, encoded, run.pipeline.pad_id, batch_size=3)
    one_by_one = np.concatenate([predict_probs(run.net, [e], run.pipeline.pad_id) for e in encoded])
    np.testing.assert_allclose(whole, small, atol=1e-6)
    np.testing.assert_allclose(whole, one_by_one, atol=1e-6)
    np.testing.assert_allclose(whole.sum(1), 1.0, atol=1e-6)
