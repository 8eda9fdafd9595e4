"""Known answers for training.metrics: a confusion matrix small enough to score by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from absa.training.metrics import classification_report, format_report

LABELS = ("negative", "neutral", "positive")

# rows gold, columns predicted:      negative neutral positive   support
#                          negative      4       1       0          5
#                          neutral       2       2       0          4
#                          positive      0       1       2          3
#                  predicted totals      6       4       2         12
GOLD = [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
PRED = [0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 2, 2]


def f1(p: Fraction, r: Fraction) -> Fraction:
    return 2 * p * r / (p + r) if p + r else Fraction(0)


# by hand: precision = diagonal / column total, recall = diagonal / row total
EXPECTED = {
    "negative": (Fraction(4, 6), Fraction(4, 5), 5),  # F1 8/11
    "neutral": (Fraction(2, 4), Fraction(2, 4), 4),  # F1 1/2
    "positive": (Fraction(2, 2), Fraction(2, 3), 3),  # F1 4/5
}


def test_classification_report_known_answer() -> None:
    rep = classification_report(GOLD, PRED, LABELS)
    assert rep["n"] == 12
    assert rep["labels"] == list(LABELS)
    assert rep["confusion"] == [[4, 1, 0], [2, 2, 0], [0, 1, 2]]
    assert rep["accuracy"] == pytest.approx(8 / 12, abs=1e-12)
    for name, (p, r, support) in EXPECTED.items():
        c = rep["per_class"][name]
        assert c["precision"] == pytest.approx(float(p), abs=1e-12), name
        assert c["recall"] == pytest.approx(float(r), abs=1e-12), name
        assert c["f1"] == pytest.approx(float(f1(p, r)), abs=1e-12), name
        assert c["support"] == support
    assert [float(f1(p, r)) for p, r, _ in EXPECTED.values()] == pytest.approx([8 / 11, 0.5, 0.8])
    # macro-F1: the unweighted mean of the three F1s = (8/11 + 1/2 + 4/5) / 3 = 223/330
    assert rep["macro_f1"] == pytest.approx(223 / 330, abs=1e-12)


def test_macro_f1_averages_the_labels_the_data_holds() -> None:
    """Counted as 0, a label the file lacks capped a file of two classes, all right, at
    macro-F1 66.67. Averaged over the labels gold or predicted instead, one stray answer in
    it took a third off: a retraining gate turned down a challenger with fewer errors."""
    rep = classification_report([0, 1], [0, 1], ("a", "b", "c"))
    assert rep["accuracy"] == 1.0
    assert rep["per_class"]["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert rep["macro_f1"] == 1.0
    # a wrong answer in a label the data lacks is a miss of the gold label's, not a third
    gold = [0] * 500 + [1] * 500
    champion = classification_report(gold, [1, 0] + gold[2:], ("a", "b", "c"))  # 2 errors
    challenger = classification_report(gold, [2] + gold[1:], ("a", "b", "c"))  # 1 error
    assert challenger["macro_f1"] > champion["macro_f1"] > 0.99


def test_a_class_predicted_but_never_gold() -> None:
    rep = classification_report([0, 0], [0, 1], ("a", "b"))
    assert rep["per_class"]["a"] == pytest.approx(
        {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2}
    )
    assert rep["per_class"]["b"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}


def test_empty_and_mismatched_input() -> None:
    rep = classification_report([], [], LABELS)
    assert rep["n"] == 0 and rep["accuracy"] == 0.0 and rep["macro_f1"] == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        classification_report([0, 1], [0], LABELS)


def test_format_report_shows_the_known_answer() -> None:
    text = format_report(classification_report(GOLD, PRED, LABELS))
    assert text.splitlines()[0] == "n=12  accuracy=66.67  macro-F1=67.58"
    assert "negative    66.67  80.00  72.73        5" in text
    assert text.splitlines()[-1] == "positive        0      1      2"
