"""Calibrated probabilities: temperature scaling and the expected calibration error.

Temperature scaling (Guo et al., 2017) divides a model's logits by one number T fitted on
held-out data by minimising the negative log-likelihood; T > 1 softens over-confident
probabilities, T < 1 sharpens under-confident ones, and no prediction changes (the
arg-max of z / T is the arg-max of z). Export fits T on the dev split and puts the
division into the ONNX graph, so every way of serving the artifact applies it.

A temperature cannot fix every shape: a student trained with label smoothing never claims
more than 1 - 0.1 * (C - 1) / C of its top class, so its surest answers are under-confident
while the next bin down is over-confident, and no single T moves both the right way. The
top-label map (``fit_top_map``; Zadrozny & Elkan 2002, centred as in Oron & Flournoy 2017)
is fitted after T on the same dev split: isotonic regression of "the top class is right" on
the top probability, its blocks' centres as the knots of a non-decreasing piecewise-linear
map. ``apply_top_map`` moves the top probability onto the map and shares the rest among the
other classes in their old proportions, so no prediction changes. It runs on the graph's
probabilities in the runtime (``absa.model.runtime``), numpy only (a few rows on plain floats).

The metrics are numpy only (``absa evaluate`` on an artifact reports ECE without torch);
``fit_temperature`` runs torch's L-BFGS and imports torch when it is called (the training
side, where export runs).
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Iterator

import numpy as np

log = logging.getLogger(__name__)

ECE_BINS = 15
T_BOUNDS = (0.05, 20.0)  # a fitted temperature is clipped into this range
TOP_MAX = 0.99  # the top-label map never claims more than this
TOP_MAP_MIN_DEV = 500  # fewer dev items than this fit a map of too few, too noisy knots
CROSS_FOLDS = 5  # the dev ECE of a map is measured out of fold (in sample it is ~0)


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Row-wise softmax of ``logits / temperature``, (N, C) -> (N, C), in float64."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def nll(logits: np.ndarray, y: np.ndarray, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood of the gold labels ``y`` under ``softmax(logits / T)``."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    m = z.max(axis=1, keepdims=True)
    log_norm = (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True)))[:, 0]
    return float((log_norm - z[np.arange(len(z)), np.asarray(y)]).mean()) if len(z) else 0.0


def expected_calibration_error(probs: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE with ``bins`` equal-width confidence bins over (0, 1]: the mean over items of
    |accuracy - mean confidence| of the item's bin, i.e. sum_b (n_b / N) |acc_b - conf_b|.
    Confidence is the top probability; 0 for no items."""
    p = np.asarray(probs, dtype=np.float64)
    if len(p) == 0:
        return 0.0
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == np.asarray(y)).astype(np.float64)
    # bin b holds confidences in (b/bins, (b+1)/bins]; a confidence of exactly 0 goes to bin 0
    idx = np.clip(np.ceil(conf * bins).astype(np.int64) - 1, 0, bins - 1)
    gap = np.bincount(idx, weights=correct - conf, minlength=bins)  # per bin: sum(acc - conf)
    return float(np.abs(gap).sum() / len(p))


def prob_nll(probs: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of the gold labels ``y`` under the probabilities."""
    p = np.asarray(probs, dtype=np.float64)
    if len(p) == 0:
        return 0.0
    return float(-np.log(np.clip(p[np.arange(len(p)), np.asarray(y)], 1e-12, 1.0)).mean())


# rows up to which apply_top_map works on Python floats: after an onnxruntime call its ~30
# numpy calls took ~95 us for one row (caches cold), ~14% of a served batch-1 answer; the
# same arithmetic on floats, ~25 us
FEW_ROWS = 8


def apply_top_map(probs: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Each row's top probability c becomes ``interp(c; xs, ys)`` (flat outside the knots),
    through ``set_top``. Same shape and dtype as ``probs``."""
    p = np.asarray(probs)
    if 0 < len(p) <= FEW_ROWS and p.ndim == 2:
        rows = p.tolist()
        if all(math.isfinite(v) for row in rows for v in row):
            return np.array(_top_map_rows(rows, xs.tolist(), ys.tolist()), dtype=p.dtype)
    p = np.asarray(probs, dtype=np.float64)
    return set_top(probs, np.interp(p.max(axis=1), xs, ys)) if len(p) else np.asarray(probs).copy()


def _top_map_rows(rows: list[list[float]], xs: list[float], ys: list[float]) -> list[list[float]]:
    """``apply_top_map`` row by row on floats: np.interp, then ``set_top``'s arithmetic
    (tests/model/test_top_map.py holds the two together)."""
    out = []
    for p in rows:
        c = max(p)
        top = p.index(c)  # the first of a tie, as argmax
        if c <= xs[0]:
            q = ys[0]
        elif c >= xs[-1]:
            q = ys[-1]
        else:
            j = bisect.bisect_right(xs, c) - 1
            q = (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j]) * (c - xs[j]) + ys[j]
        rest = p[:]
        rest[top] = 0.0
        second = max(rest)
        q = max(q, min(second / max(1.0 - c + second, 1e-12) + 1e-6, 1.0))
        mass = sum(rest)
        if mass > 0:
            row = [v / mass * (1.0 - q) for v in rest]
        else:
            row = [(1.0 - q) / max(len(p) - 1, 1)] * len(p)
        row[top] = q
        out.append(row)
    return out


def set_top(probs: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's top probability set to ``q`` (one per row), the other classes sharing what
    is left in their old proportions. Where ``q`` would let the runner-up overtake, the top
    class keeps just enough to stay on top: the arg-max never changes. Same shape and dtype
    as ``probs``."""
    p = np.asarray(probs, dtype=np.float64)
    rows = np.arange(len(p))
    top = p.argmax(axis=1)
    c = p[rows, top]
    rest = p.copy()
    rest[rows, top] = 0.0
    second = rest.max(axis=1)
    # the runner-up's new share second * (1 - q) / (1 - c) stays below q iff q >= floor
    floor = second / np.maximum(1.0 - c + second, 1e-12)
    q = np.maximum(np.asarray(q, dtype=np.float64), np.minimum(floor + 1e-6, 1.0))
    # the others keep their proportions, scaled by their own sum (not 1 - c: in float32 a
    # saturated top, c = 1, left them summing to 0 and the row to q); where they are all
    # 0, 1 - q is shared evenly: every row still sums to 1
    mass = rest.sum(axis=1)
    k = p.shape[1]
    even = np.full_like(rest, 1.0 / max(k - 1, 1))
    even[rows, top] = 0.0
    shares = np.where((mass > 0)[:, None], rest / np.maximum(mass, 1e-300)[:, None], even)
    out = shares * (1.0 - q)[:, None]
    out[rows, top] = q
    return out.astype(np.asarray(probs).dtype, copy=False)


def fit_top_map(
    probs: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The knots (xs strictly increasing, ys non-decreasing in [1/C, TOP_MAX]) of the
    top-label map fitted on ``probs`` (the probabilities after T) and gold ``y``: isotonic
    regression (scikit-learn; ``weights`` per item, optional) of correctness on the top
    probability, one knot per block at its items' mean top probability. Deterministic."""
    from sklearn.isotonic import IsotonicRegression

    p = np.asarray(probs, dtype=np.float64)
    if len(p) == 0:
        raise ValueError("no examples to fit a top-label map on")
    c = p.max(axis=1)
    right = (p.argmax(axis=1) == np.asarray(y)).astype(np.float64)
    iso = IsotonicRegression(y_min=1.0 / p.shape[1], y_max=TOP_MAX, out_of_bounds="clip")
    fitted = iso.fit(c, right, sample_weight=weights).predict(c)
    order = np.argsort(c, kind="stable")
    cs, fs = c[order], fitted[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(fs) != 0) + 1])
    ends = np.append(starts[1:], len(cs))
    xs = np.array([cs[a:b].mean() for a, b in zip(starts, ends, strict=True)])
    return xs, fs[starts]


def out_of_fold_top_map(
    probs: np.ndarray, y: np.ndarray, folds: int = CROSS_FOLDS, seed: int = 0
) -> np.ndarray:
    """``probs`` with a top-label map applied to each fold that was fitted on the others:
    what the map does to data it has not seen, for an honest dev ECE."""
    p = np.asarray(probs, dtype=np.float64)
    out = p.copy()
    for held in held_out_folds(len(p), folds, seed):
        out[held] = apply_top_map(p[held], *fit_top_map(p[~held], np.asarray(y)[~held]))
    return out


def held_out_folds(n: int, folds: int, seed: int) -> Iterator[np.ndarray]:
    """The held-out mask of each of ``folds`` seeded folds of ``n`` items (a permutation,
    item i in fold perm[i] % folds), skipping a fold that is empty or holds everything."""
    fold = np.random.default_rng(seed).permutation(n) % folds
    for k in range(folds):
        held = fold == k
        if held.any() and (~held).any():
            yield held


def temperature_caveat(logits: np.ndarray, y: np.ndarray, t: float) -> str | None:
    """What the metadata and card must say of a fitted ``t`` that is no best fit: where every
    prediction is right (or wrong) the NLL has no minimum, and a T at a bound of
    ``T_BOUNDS`` was clipped there. None for an ordinary fit."""
    right = int((np.asarray(logits).argmax(axis=1) == np.asarray(y)).sum())
    if right in (0, len(y)):
        return (
            f"every dev prediction is {'right' if right else 'wrong'}: the NLL has no "
            f"minimum, and T = {t:.4g} is where the fit stopped"
        )
    if t in T_BOUNDS:
        return f"T was clipped to the bound {t:g} of {T_BOUNDS}: not the best fit"
    return None


def fit_temperature(logits: np.ndarray, y: np.ndarray, max_iter: int = 100) -> float:
    """The T minimising ``nll(logits, y, T)``: L-BFGS (strong Wolfe line search) on log T in
    float64, clipped into ``T_BOUNDS`` (1, no temperature, where the fit ends at NaN: the
    NLL overflowed). Where every prediction is right (or every one wrong) the NLL has no
    minimum (it falls all the way to T -> 0, or T -> inf): T is where L-BFGS stopped, said in
    a warning. Deterministic: the same input gives the same T."""
    import torch

    if len(logits) == 0:
        raise ValueError("no examples to fit a temperature on")
    if not np.isfinite(np.asarray(logits, dtype=np.float64)).all():
        raise ValueError("the logits hold NaN or infinite values: no temperature fits them")
    z = torch.as_tensor(np.asarray(logits), dtype=torch.float64)
    target = torch.as_tensor(np.asarray(y), dtype=torch.int64)
    log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)  # start at T = 1
    opt = torch.optim.LBFGS(
        [log_t], lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe", tolerance_grad=1e-10
    )

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(z / log_t.exp(), target)
        loss.backward()
        return loss

    opt.step(closure)
    fitted = float(np.exp(log_t.item()))
    if np.isnan(fitted):  # the NLL overflowed on the way (float64 logits near 1e308)
        log.warning("the temperature fit ended at T = %s, not a number: T = 1 (none)", fitted)
        return 1.0
    right = int((np.asarray(logits).argmax(axis=1) == np.asarray(y)).sum())
    if right in (0, len(y)):
        log.warning(
            "every one of the %d dev predictions is %s: the NLL has no minimum, T = %.4g is "
            "where the fit stopped and the dev ECE after it means little",
            len(y),
            "right" if right else "wrong",
            fitted,
        )
    t = float(np.clip(fitted, *T_BOUNDS))
    if t != fitted:
        log.warning(
            "temperature %.4g is outside %s: clipped to %g, which is not the best fit",
            fitted,
            T_BOUNDS,
            t,
        )
    return t


def calibration_report(
    logits: np.ndarray,
    y: np.ndarray,
    temperature: float,
    bins: int = ECE_BINS,
    served: np.ndarray | None = None,
) -> dict:
    """ECE and NLL before (T = 1) and after (``temperature``) on one labelled set. With a
    top-label map, ``served`` (the probabilities after T and the map) are scored as "after"
    and the T-only numbers are kept as ``ece_temperature`` / ``nll_temperature``."""
    rep = {
        "n": len(logits),
        "ece_before": expected_calibration_error(softmax(logits), y, bins),
        "ece_after": expected_calibration_error(softmax(logits, temperature), y, bins),
        "nll_before": nll(logits, y),
        "nll_after": nll(logits, y, temperature),
    }
    if served is not None:
        rep["ece_temperature"], rep["nll_temperature"] = rep["ece_after"], rep["nll_after"]
        rep["ece_after"] = expected_calibration_error(served, y, bins)
        rep["nll_after"] = prob_nll(served, y)
    return rep
