"""The Python API with a category model: ``load`` picks the kind from the artifact,
``clf(text, categories=[...])`` and ``clf.batch`` answer per category, and each kind of model
refuses the other kind of question."""

from __future__ import annotations

from pathlib import Path

import pytest

from absa import load
from absa.api import CategoryPrediction
from absa.errors import InputError
from absa.model.categories import SHIPPED_CATEGORY_MODEL
from tests.helpers import category_examples

EXAMPLES = category_examples()


def test_call_and_batch(category_artifact: Path) -> None:
    clf = load(category_artifact, device="cpu")
    assert clf.categories == ["ambience", "food", "service"]
    a, b = EXAMPLES[0], EXAMPLES[1]
    got = clf(a.text, categories=[a.category, b.category])
    assert all(isinstance(p, CategoryPrediction) for p in got)
    assert [(p.category, p.label) for p in got] == [(a.category, a.label), (b.category, b.label)]
    batch = clf.batch([{"text": a.text, "categories": [a.category]}, (b.text, [b.category])])
    assert [[p.label for p in ps] for ps in batch] == [[a.label], [b.label]]
    assert clf(a.text, categories=a.category)[0].category == a.category  # one name alone
    again = clf(a.text, categories=[a.category.upper(), a.category, b.category.title()])
    assert [(p.category, p.label) for p in again] == [(a.category, a.label), (b.category, b.label)]


def test_category_answers_are_values_that_can_be_set_members_and_keys(
    category_artifact: Path,
) -> None:
    """Frozen, so hashable, as the term model's answers are (its dict of scores made it
    unhashable)."""
    clf = load(category_artifact, device="cpu")
    a, b = EXAMPLES[0], EXAMPLES[1]
    first = clf(a.text, categories=[a.category, b.category], explain=True)
    again = clf(a.text, categories=[a.category, b.category], explain=True)
    assert first == again and {*first, *again} == set(first) and len(set(first)) == 2
    assert {first[0]: "seen"}[again[0]] == "seen"
    assert clf(a.text, categories=[a.category])[0] != first[0]  # without its explanation


def test_each_kind_refuses_the_other_question(category_artifact: Path, artifact: Path) -> None:
    cats, terms = load(category_artifact, device="cpu"), load(artifact, device="cpu")
    assert terms.categories is None
    with pytest.raises(InputError, match="aspect-category model: ask with categories"):
        cats("the food was great", ["food"])
    with pytest.raises(InputError, match="aspect-term model"):
        terms("the food was great", categories=["food"])
    with pytest.raises(InputError, match="not both"):
        cats("the food was great", ["food"], categories=["food"])
    with pytest.raises(InputError, match=r"items\[0\]: this is an aspect-category model"):
        cats.batch([{"text": "the food was great"}])
    with pytest.raises(InputError, match=r"items\[0\]: categories\[0\]: unknown category 'x'"):
        cats.batch([("the food was great", ["x"])])


def test_category_names_that_differ_by_case_alone_need_the_exact_one() -> None:
    from absa.model.categories import category_ids

    names = ["FOOD", "Food", "service"]
    assert category_ids(names, ["Food", "SERVICE", "FOOD"]) == [1, 2, 0]  # exact first
    with pytest.raises(
        InputError,
        match=r"categories\[0\]: 'food' is several categories but "
        r"for case \(FOOD, Food\): give one as it is spelt",
    ):
        category_ids(names, ["food"])


def test_a_category_name_with_spaces_around_it_is_the_category() -> None:
    """Case was ignored, spaces around the name were not (" food " from a form or a CSV was
    an unknown category); spaces inside still count ("anecdotes / misc" is no category)."""
    from absa.model.categories import category_ids

    names = ["food", "service", "anecdotes/miscellaneous"]
    assert category_ids(names, [" food ", "\tService\n"]) == [0, 1]
    with pytest.raises(InputError, match="unknown category 'anecdotes / miscellaneous'"):
        category_ids(names, ["anecdotes / miscellaneous"])
    with pytest.raises(InputError, match="unknown category ' '"):
        category_ids(names, [" "])


def test_a_text_without_a_word_is_said_to_be_one_not_an_aspect_span() -> None:
    """A category question has no aspect span: "aspect span [0, 1) holds only invisible
    characters" named one the caller never gave."""
    clf = load(SHIPPED_CATEGORY_MODEL)
    for text in ("\u200b", "  \u200e "):
        with pytest.raises(InputError) as raised:
            clf(text, categories=["food"])
        said = str(raised.value)
        assert "aspect span" not in said and "no word" in said, said


def test_a_category_model_loads_no_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    """It uses none: ABSA_EXTRACTOR's was loaded (and a missing one failed the load), and
    one asked for by name was loaded and dropped without a word."""
    monkeypatch.setenv("ABSA_EXTRACTOR", "/nonexistent")
    clf = load(SHIPPED_CATEGORY_MODEL)
    assert clf.categories and clf("the food was great", categories=["food"])
    monkeypatch.delenv("ABSA_EXTRACTOR")
    with pytest.raises(InputError, match="category model finds no aspects"):
        load(SHIPPED_CATEGORY_MODEL, extractor="shipped")
