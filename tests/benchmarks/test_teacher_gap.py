"""benchmarks/teacher_gap.py: where a student and its teacher part, per gold class."""

from __future__ import annotations

import numpy as np

from benchmarks.teacher_gap import gap

LABELS = ["negative", "neutral", "positive"]


def test_each_side_counts_only_what_it_alone_gets_right() -> None:
    gold = np.array([1, 1, 1, 1, 0, 2])
    student = np.array([0, 1, 0, 2, 0, 2])
    teacher = np.array([1, 1, 0, 1, 1, 2])
    got = gap(gold, student, teacher, LABELS)
    neutral = got["by_class"]["neutral"]
    assert neutral["n"] == 4
    assert neutral["teacher_recall"] == 75.0 and neutral["student_recall"] == 25.0
    assert neutral["teacher_only"] == 2 and neutral["student_only"] == 0
    assert got["by_class"]["negative"]["student_only"] == 1
    assert got["student_confusion"] == [[1, 0, 0], [2, 1, 1], [0, 0, 1]]
    assert got["teacher_confusion"] == [[0, 1, 0], [1, 3, 0], [0, 0, 1]]
    assert round(got["agreement"], 2) == 50.0


def test_a_class_the_set_lacks_has_no_recall() -> None:
    got = gap(np.array([0, 2]), np.array([0, 2]), np.array([0, 0]), LABELS)
    assert got["by_class"]["neutral"] == {
        "n": 0, "teacher_recall": None, "student_recall": None, "teacher_only": 0, "student_only": 0
    }  # fmt: skip
    assert got["agreement"] == 50.0
