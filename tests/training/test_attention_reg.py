"""The attention terms of training/attention_reg.py: their values on known attentions, the
batches that keep a sentence's aspects together, and training with each (it still fits,
and the attention it learns moves the way the term pushes)."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.training.attention_reg import (
    attention_entropy,
    coverage_penalty,
    grouped_batches,
    sentence_groups,
)
from absa.training.evaluate import evaluate
from absa.training.inference import encode_all, to_tensors
from absa.training.presets import TrainConfig
from absa.training.rundir import load_run
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_preset


def test_coverage_penalty_counts_sentences_with_several_aspects_only() -> None:
    alpha = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    # sentence 7: words 0 and 1 covered once, word 2 never (the padding does not count);
    # sentence 9 has one aspect here and adds nothing
    assert coverage_penalty(alpha, mask, torch.tensor([7, 7, 9])).item() == pytest.approx(1.0)
    piled = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    # both on word 0: (1 - 2)^2 + 1 + 1
    assert coverage_penalty(piled, mask[:2], torch.tensor([3, 3])).item() == pytest.approx(3.0)
    assert coverage_penalty(alpha, mask, torch.tensor([1, 2, 3])).item() == 0.0


def test_attention_entropy_of_uniform_and_one_hot() -> None:
    alpha = torch.tensor([[0.25, 0.25, 0.25, 0.25, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    assert attention_entropy(alpha, mask).item() == pytest.approx(math.log(4) / 2)


def test_grouped_batches_keep_a_sentences_aspects_together() -> None:
    rng = random.Random(0)
    groups = [g for g in range(300) for _ in range(1 + g % 3)]  # 1 to 3 aspects a sentence
    lengths = [5 + g % 17 for g in groups]
    out = grouped_batches(lengths, groups, 16, rng)
    assert sorted(i for b in out for i in b) == list(range(len(groups)))
    spread = [
        len({k for k, b in enumerate(out) if any(groups[i] == g for i in b)}) for g in range(300)
    ]
    assert max(spread) <= 2  # split only where a batch ends
    assert sum(s == 1 for s in spread) >= 0.8 * 300


def test_sentence_groups_by_word_ids() -> None:
    from absa.model.text import Encoded

    items = [
        Encoded([1, 2, 3], [1, 0, 0], []),
        Encoded([1, 2, 3], [0, 0, 1], []),
        Encoded([4], [1], []),
    ]
    assert sentence_groups(items) == [0, 0, 1]


def test_a_copy_of_an_aspect_is_a_sentence_of_its_own_not_another_aspect() -> None:
    """An oversampled file's copies (union.oversample) share their original's word ids: a
    one-aspect sentence given twice counted as two aspects, its words' total 2α, and the
    penalty Σ_t (1 − 2α_t)² pushed its attention flat (4.0 for a one-word sentence)."""
    from absa.model.text import Encoded

    first, second = Encoded([1, 2, 3], [1, 0, 0], []), Encoded([1, 2, 3], [0, 0, 1], [])
    items = [first, first, second, second, Encoded([4], [1], []), Encoded([4], [1], [])]
    groups = sentence_groups(items)
    assert groups == [0, 1, 0, 1, 2, 3]  # each copy of the sentence whole, once
    alpha = torch.tensor([[1.0], [1.0]])
    pair = torch.tensor(sentence_groups([Encoded([4], [1], [])] * 2))
    assert coverage_penalty(alpha, torch.ones(2, 1), pair).item() == 0.0


def test_the_categories_of_one_sentence_are_one_group_pair_models_too() -> None:
    """A category model's items have no span (aspect_mask all 0): two categories of one
    sentence are two aspects of it, not copies. A sentence-pair model's ids hold the
    category words too: its items were each a sentence of their own, and the penalty did
    nothing; the text's part (token type 0) says which sentence an item is of."""
    from absa.model.text import Encoded

    food, service = (Encoded([1, 2, 3], [0, 0, 0], [], category=c) for c in (0, 1))
    assert sentence_groups([food, service, food]) == [0, 0, 1]
    pair_food = Encoded([7, 1, 2, 8, 5, 8], [0] * 6, [], category=0, token_types=[0] * 4 + [1] * 2)
    pair_service = Encoded(
        [7, 1, 2, 8, 6, 6, 8], [0] * 7, [], category=1, token_types=[0] * 4 + [1] * 3
    )
    other = Encoded([7, 4, 8, 5, 8], [0] * 5, [], category=0, token_types=[0] * 3 + [1] * 2)
    assert sentence_groups([pair_food, pair_service, other]) == [0, 0, 1]


@pytest.mark.parametrize(
    ("option", "value"), [("attention_coverage", 0.5), ("attention_entropy", 0.2)]
)
def test_training_with_an_attention_term_still_fits_and_moves_the_attention(
    small_glove: Path, tmp_path: Path, option: str, value: float
) -> None:
    examples = synthetic_examples(12, seed=4, paired=True)  # two aspects per sentence
    base = tiny_preset("atae-lstm", small_glove)
    entropy = {}
    for name, v in (("plain", 0.0), ("term", value)):
        preset = replace(base, train=replace(base.train, epochs=30, **{option: v}))
        fit(examples, examples, preset, tmp_path / name, progress=False)
        assert evaluate(tmp_path / name, examples)["accuracy"] >= 0.9, name
        run = load_run(tmp_path / name)
        batch = to_tensors(encode_all(run.pipeline, examples), run.pipeline.pad_id)
        with torch.no_grad():
            alpha = run.net.eval()(**batch)[1]
        entropy[name] = attention_entropy(alpha, batch["attention_mask"]).item()
    # the coverage term spreads a sentence's attention; a positive entropy weight sharpens it
    assert (entropy["term"] > entropy["plain"]) is (option == "attention_coverage")


def test_a_negative_coverage_weight_is_refused() -> None:
    with pytest.raises(ValueError, match="attention_coverage"):
        TrainConfig(attention_coverage=-0.1)
