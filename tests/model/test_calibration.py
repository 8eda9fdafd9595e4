"""Tests for model.calibration: the temperature fit recovers a known temperature, and the
expected calibration error matches hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from absa.model.calibration import (
    T_BOUNDS,
    calibration_report,
    expected_calibration_error,
    fit_temperature,
    nll,
    softmax,
)


def sampled(true_t: float, n: int = 20000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits and labels drawn from softmax(logits / true_t): T = true_t calibrates them."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 3.0, (n, 3))
    p = softmax(logits, true_t)
    y = (p.cumsum(1) > rng.random((n, 1))).argmax(1)
    return logits, y


@pytest.mark.parametrize("true_t", [0.5, 1.0, 2.0, 4.0])
def test_fit_recovers_a_known_temperature(true_t: float) -> None:
    logits, y = sampled(true_t)
    t = fit_temperature(logits, y)
    assert t == pytest.approx(true_t, rel=0.03)
    # the fitted T is the NLL minimum: nudging it either way does worse
    assert nll(logits, y, t) < min(nll(logits, y, t * 1.05), nll(logits, y, t / 1.05))
    assert fit_temperature(logits, y) == t  # deterministic


def test_the_fit_stays_in_bounds_and_refuses_no_data() -> None:
    sure = np.array([[50.0, 0.0, 0.0], [0.0, 50.0, 0.0], [0.0, 0.0, 50.0]] * 10)
    y = np.array([0, 1, 2] * 10)
    assert T_BOUNDS[0] <= fit_temperature(sure / 10, y) < 0.5  # always right: sharpen
    # always wrong, however sure: the best T is infinite (uniform); it stops at the bound
    assert fit_temperature(sure, (y + 1) % 3) == T_BOUNDS[1]
    with pytest.raises(ValueError, match="no examples"):
        fit_temperature(np.zeros((0, 3)), np.zeros(0, dtype=np.int64))


def test_a_bound_hit_is_said_and_non_finite_logits_are_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sure = np.array([[50.0, 0.0, 0.0], [0.0, 50.0, 0.0], [0.0, 0.0, 50.0]] * 10)
    y = np.array([0, 1, 2] * 10)
    with caplog.at_level("WARNING", logger="absa.model.calibration"):
        fit_temperature(*sampled(2.0, n=2000))
        assert not caplog.records  # inside the bounds: nothing to say
        assert fit_temperature(sure, (y + 1) % 3) == T_BOUNDS[1]
    assert "clipped to 20" in caplog.records[-1].getMessage()
    bad = sure.copy()
    bad[3, 1] = np.nan  # NaN logits used to give T = NaN, and NaN passed the graph check
    with pytest.raises(ValueError, match="NaN or infinite"):
        fit_temperature(bad, y)


def test_scaling_keeps_predictions_and_lowers_ece_on_overconfident_logits() -> None:
    logits, y = sampled(2.0)  # the raw logits are twice as sharp as the truth
    rep = calibration_report(logits, y, fit_temperature(logits, y))
    assert rep["n"] == len(y)
    assert rep["ece_before"] > 0.05 and rep["ece_after"] < 0.015
    assert rep["nll_after"] < rep["nll_before"]
    assert (softmax(logits, 2.0).argmax(1) == logits.argmax(1)).all()


def test_ece_known_answers() -> None:
    y = np.zeros(10, dtype=np.int64)
    confident = np.tile([0.9, 0.05, 0.05], (10, 1))
    assert expected_calibration_error(confident, y) == pytest.approx(0.1)  # 100 % right at 0.9
    wrong = confident.copy()
    wrong[:5] = [0.05, 0.9, 0.05]  # half wrong, all at confidence 0.9: |0.5 - 0.9|
    assert expected_calibration_error(wrong, y) == pytest.approx(0.4)
    # two bins: 4 items at 0.6 (3 right) and 6 at 0.95 (all right): (4*0.15 + 6*0.05) / 10
    mixed = np.array([[0.6, 0.4, 0.0]] * 3 + [[0.4, 0.6, 0.0]] + [[0.95, 0.05, 0.0]] * 6)
    assert expected_calibration_error(mixed, y) == pytest.approx(0.09)
    # one bin only: the gaps of 0.6 and 0.95 would cancel into one number
    assert expected_calibration_error(mixed, y, bins=1) == pytest.approx(abs(0.9 - 0.81))
    assert expected_calibration_error(np.zeros((0, 3)), np.zeros(0)) == 0.0


def test_ece_bins_are_closed_on_the_right() -> None:
    """A confidence of exactly 2/15 belongs to the bin (1/15, 2/15], as in Guo et al."""
    p = np.array([[2 / 15, 0.1, 0.1]])  # not normalised: only the top value matters
    assert expected_calibration_error(p, np.array([0])) == pytest.approx(1 - 2 / 15)
    one = np.array([[1.0, 0.0, 0.0]])
    assert expected_calibration_error(one, np.array([0])) == 0.0


def test_softmax_and_nll_agree() -> None:
    logits, y = sampled(1.0, n=50)
    for t in (0.5, 1.0, 3.0):
        p = softmax(logits, t)
        np.testing.assert_allclose(p.sum(1), 1.0)
        assert nll(logits, y, t) == pytest.approx(-np.log(p[np.arange(50), y]).mean())


def test_a_fit_that_does_not_converge_to_a_number_gives_t_1(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Finite logits whose float64 spread overflows (1e308 - -1e308 = inf) made L-BFGS end
    at log T = NaN, and np.clip(NaN) is NaN: fit_temperature returned T = NaN ("clipped to
    nan"). A temperature is positive and finite: the fit falls back to 1 (none) and says so."""
    z = np.array([[1e308, -1e308, 0.0]])
    with caplog.at_level("WARNING", logger="absa.model.calibration"):
        t = fit_temperature(z, np.array([1]))
    assert np.isfinite(t) and t == 1.0
    assert "not a number" in caplog.records[-1].getMessage()


def test_a_dev_set_without_a_wrong_or_a_right_answer_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every dev prediction right: the NLL falls all the way to T -> 0, so the fit stops
    wherever L-BFGS's tolerance stops it (T = 0.15 on a tiny run's dev set, inside the
    bounds, silently) and the served model claims ~100 % on every answer."""
    sure = np.array([[5.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 5.0]] * 8)
    y = np.array([0, 1, 2] * 8)
    with caplog.at_level("WARNING", logger="absa.model.calibration"):
        t = fit_temperature(sure, y)
    assert T_BOUNDS[0] <= t < 1  # sharpened, as before: only said
    assert any(
        "every one of the 24 dev predictions is right" in r.getMessage() for r in caplog.records
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="absa.model.calibration"):
        fit_temperature(sure, (y + 1) % 3)
    assert any("is wrong" in r.getMessage() for r in caplog.records)
