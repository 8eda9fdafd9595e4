"""benchmarks/calibration_dev.py's map per label answered: on answers whose sureness means
something else for each label, it recovers each label's own rate where one map cannot; its
laptop shift and laptop temperature: the same for sentences that read like laptop reviews."""

from __future__ import annotations

import numpy as np
import pytest

from absa.model.calibration import expected_calibration_error, softmax
from benchmarks.calibration_dev import by_label, knots, laptop_shift, laptop_temperature


def test_a_map_per_label_answered_recovers_each_labels_own_rate() -> None:
    rng = np.random.default_rng(0)
    n = 3000
    answered = rng.integers(0, 2, n)  # labels 0 and 1 answered, each as sure: 0.85
    p = np.full((n, 3), 0.05)
    p[np.arange(n), answered] = 0.9
    right = rng.random(n) < np.where(answered == 0, 0.55, 0.9)  # label 0 is right less often
    y = np.where(right, answered, 2)
    x = np.zeros((n, 1))
    per_label = by_label(min_items=100)(p, x, y)(p, x)
    one_map = knots("centres")(p, x, y)(p, x)
    assert (per_label.argmax(1) == answered).all()  # no prediction changes
    for k, rate in ((0, 0.55), (1, 0.9)):
        assert abs(per_label[answered == k].max(1).mean() - rate) < 0.03
    assert expected_calibration_error(per_label, y) < 0.5 * expected_calibration_error(one_map, y)
    few = by_label(min_items=n)(p, x, y)(p, x)  # no label answered that often: the one map
    assert np.allclose(few, one_map)


def test_the_laptop_shift_lowers_laptop_like_answers_to_their_rate_and_no_others() -> None:
    rng = np.random.default_rng(1)
    n = 4000
    like = rng.random(n) < 0.2  # a fifth read like laptop reviews (score 0.9, else 0.05)
    p = np.full((n, 3), 0.05)
    p[:, 0] = 0.9
    right = rng.random(n) < np.where(like, 0.7, 0.9)  # as sure, right less often
    y = np.where(right, 0, 1)
    x = np.zeros((n, 6), dtype=object)
    x[:, 3] = np.where(like, 0.9, 0.05)
    shifted = laptop_shift()(p, x, y)(p, x)
    one_map = knots("centres")(p, x, y)(p, x)
    assert (shifted.argmax(1) == 0).all()  # no prediction changes
    assert abs(shifted[like].max(1).mean() - right[like].mean()) < 0.01
    np.testing.assert_allclose(shifted[~like], one_map[~like])  # the others as the map says
    assert expected_calibration_error(shifted[like], y[like]) < 0.01
    assert expected_calibration_error(one_map[like], y[like]) > 0.1


def surer_on_laptops(seed: int, n: int = 6000) -> tuple[np.ndarray, ...]:
    """(probabilities, features, gold, laptop-like mask): a quarter of the items read like
    laptop reviews (score 0.9, else 0.05), their gold drawn from the logits at T 2 and the
    others' at T 1, so the model is twice as sure as it should be there."""
    rng = np.random.default_rng(seed)
    like = rng.random(n) < 0.25
    z = rng.normal(0.0, 2.0, (n, 3))
    truth = np.where(like[:, None], softmax(z, 2.0), softmax(z, 1.0))
    y = (rng.random(n)[:, None] > truth.cumsum(1)).sum(1)
    x = np.zeros((n, 6), dtype=object)
    x[:, 4] = np.where(like, 0.9, 0.05)
    return softmax(z, 1.0), x, y, like


def test_a_laptop_temperature_softens_laptop_like_answers_that_are_surer_than_right() -> None:
    p, x, y, like = surer_on_laptops(2)
    tempered = laptop_temperature()(p, x, y)(p, x)
    one_map = knots("centres")(p, x, y)(p, x)
    assert (tempered.argmax(1) == p.argmax(1)).all()  # no prediction changes
    assert expected_calibration_error(tempered[like], y[like]) < 0.5 * expected_calibration_error(
        one_map[like], y[like]
    )
    assert expected_calibration_error(tempered, y) < expected_calibration_error(one_map, y)
    x[:, 4] = 0.05  # nothing reads like a laptop review: one temperature, then the map
    alone = laptop_temperature()(p, x, y)(p, x)
    assert (alone.argmax(1) == p.argmax(1)).all()
    assert expected_calibration_error(alone, y) == pytest.approx(
        expected_calibration_error(one_map, y), abs=0.01
    )


def test_a_shrunk_laptop_temperature_lies_between_its_own_and_the_others() -> None:
    p, x, y, like = surer_on_laptops(3)
    sure = [laptop_temperature(shrink=s)(p, x, y)(p, x)[like].max(1).mean() for s in (0, 0.5, 1)]
    assert sure[0] < sure[1] < sure[2]  # softest as fitted, as sure as the others when shrunk
    # a threshold over every score: nothing reads like a laptop review, one temperature
    above = laptop_temperature(above=0.95)(p, x, y)(p, x)
    x[:, 4] = 0.05
    np.testing.assert_allclose(above, laptop_temperature()(p, x, y)(p, x))
