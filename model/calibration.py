"""Calibrated probabilities: temperature scaling and the expected calibration error.

Temperature scaling (Guo et al., 2017) divides a model's logits by one number T fitted on
held-out data by minimising the negative log-likelihood; T > 1 softens over-confident
probabilities, T < 1 sharpens under-confident ones, and no prediction changes (the
arg-max of z / T is the arg-max of z). Export fits T on the dev split and puts the
division into the ONNX graph, so every way of serving the artifact applies it.

The metrics are numpy only (``absa evaluate`` on an artifact reports ECE without torch);
``fit_temperature`` runs torch's L-BFGS and imports torch when it is called (the training
side, where export runs).
"""

from __future__ import annotations

import numpy as np

ECE_BINS = 15
T_BOUNDS = (0.05, 20.0)  # a fitted temperature is clipped into this range


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


def fit_temperature(logits: np.ndarray, y: np.ndarray, max_iter: int = 100) -> float:
    """The T minimising ``nll(logits, y, T)``: L-BFGS (strong Wolfe line search) on log T in
    float64, clipped into ``T_BOUNDS``. Deterministic: the same input gives the same T."""
    import torch

    if len(logits) == 0:
        raise ValueError("no examples to fit a temperature on")
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
    return float(np.clip(np.exp(log_t.item()), *T_BOUNDS))


def calibration_report(
    logits: np.ndarray, y: np.ndarray, temperature: float, bins: int = ECE_BINS
) -> dict:
    """ECE and NLL before (T = 1) and after (``temperature``) on one labelled set."""
    return {
        "n": len(logits),
        "ece_before": expected_calibration_error(softmax(logits), y, bins),
        "ece_after": expected_calibration_error(softmax(logits, temperature), y, bins),
        "nll_before": nll(logits, y),
        "nll_after": nll(logits, y, temperature),
    }
