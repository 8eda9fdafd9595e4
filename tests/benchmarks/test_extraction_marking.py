"""benchmarks/extraction_marking.py: how consistently a data set marks its aspect terms."""

from __future__ import annotations

from absa.training.sentences import GoldSpan, Sentence
from benchmarks.extraction_marking import marking


def _sent(text: str, *terms: str) -> Sentence:
    spans = []
    for t in terms:
        at = text.index(t)
        spans.append(GoldSpan(at, at + len(t), "positive"))
    return Sentence(text, tuple(spans))


def test_unmarked_occurrences_of_a_marked_term_lower_the_share() -> None:
    sents = [
        _sent("The food was good.", "food"),
        _sent("Food came late but the staff was kind.", "staff"),  # food unmarked here
        _sent("I liked the food and the staff.", "food", "staff"),
        _sent("The staff smiled.", "staff"),
    ]
    r = marking(sents, min_count=2)
    assert r["terms"] == 2  # food (2 marks), staff (3)
    assert (r["occurrences"], r["marked"]) == (6, 5)
    assert r["top_terms"]["food"] == {"occurrences": 3, "marked": 2}
    assert r["marked_pct"] == round(100 * 5 / 6, 2)


def test_whole_words_only_and_parts_of_longer_terms_are_left_out() -> None:
    sents = [
        _sent("The pizza was fine.", "pizza"),
        _sent("The pizza again.", "pizza"),
        _sent("A chicken pizza and pizzas.", "chicken pizza"),  # inside a marked span; plural
    ]
    r = marking(sents, min_count=2)
    assert (r["occurrences"], r["marked"]) == (2, 2)


def test_min_aspects_keeps_only_sentences_with_that_many_marks() -> None:
    sents = [
        _sent("The food was good.", "food"),
        _sent("The food was bad.", "food"),
        _sent("The food and the wine.", "wine"),
        _sent("Wine, food.", "Wine", "food"),
    ]
    one = marking(sents, min_count=2, min_aspects=1)
    assert (one["occurrences"], one["marked"]) == (6, 5)  # food in the wine sentence is not
    two = marking(sents, min_count=1, min_aspects=2)
    assert (two["sentences"], two["occurrences"], two["marked"]) == (1, 2, 2)
