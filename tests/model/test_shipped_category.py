"""The shipped restaurant category model (model/artifacts/category/): it verifies, stays
small, is a category model with the five SemEval-2014 categories, and reads real sentences."""

from __future__ import annotations

import pytest

from absa import load
from absa.model import artifact
from absa.model.categories import SHIPPED_CATEGORY_MODEL
from absa.model.runtime import DEFAULT_MODEL_DIR

REST14 = ["ambience", "anecdotes/miscellaneous", "food", "price", "service"]


def size_mb(path) -> float:  # type: ignore[no-untyped-def]
    return sum(f.stat().st_size for f in path.iterdir()) / 1e6


def test_it_verifies_and_stays_small() -> None:
    meta = artifact.load(SHIPPED_CATEGORY_MODEL).metadata
    assert meta["task"] == "category" and meta["categories"] == REST14
    assert size_mb(SHIPPED_CATEGORY_MODEL) < 6.0
    assert size_mb(SHIPPED_CATEGORY_MODEL) + size_mb(DEFAULT_MODEL_DIR) < 25.0
    card = (SHIPPED_CATEGORY_MODEL / "README.md").read_text()
    assert "## Reproduce" in card and "absa train --task category" in card


@pytest.mark.parametrize(
    ("text", "category", "label"),
    [
        ("The fries were soggy and cold.", "food", "negative"),
        ("The waiter was friendly and attentive.", "service", "positive"),
        ("Way too expensive for what you get.", "price", "negative"),
        ("The pasta was delicious but the staff was rude.", "food", "positive"),
        ("The pasta was delicious but the staff was rude.", "service", "negative"),
    ],
)
def test_it_reads_real_sentences(text: str, category: str, label: str) -> None:
    (got,) = load(SHIPPED_CATEGORY_MODEL, device="cpu")(text, categories=[category])
    assert got.label == label, got
