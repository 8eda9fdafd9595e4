"""The top-label map after the temperature (model.calibration): its fit recovers a known
calibration curve, applying it never changes a prediction, and an artifact exported with
it serves exactly torch's probabilities with T and the map applied."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from absa.cli import main
from absa.errors import ArtifactError
from absa.model import artifact, calibration
from absa.model.calibration import (
    TOP_MAX,
    apply_top_map,
    expected_calibration_error,
    fit_top_map,
    held_out_folds,
    out_of_fold_top_map,
    set_top,
    softmax,
)
from absa.model.card import calibration_lines
from absa.model.export import export
from absa.model.runtime import Runtime
from absa.model.text import collate
from absa.training.rundir import load_run
from tests.helpers import ONNX_EXPORT_WARNINGS, synthetic_examples

pytestmark = ONNX_EXPORT_WARNINGS


def truth(c: np.ndarray) -> np.ndarray:
    """A known calibration curve: how often an answer of top probability c is right (flat,
    then steep near the top, as a label-smoothed student's)."""
    return np.clip(0.4 + 2.2 * np.maximum(c - 0.6, 0.0) ** 1.5 + 0.2 * (c - 1 / 3), 1 / 3, 0.97)


def sampled(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three-class probabilities with top probabilities in (1/3, 0.93] and labels drawn so
    that the top class is right with probability truth(top)."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.36, 0.93, n)
    second = (1 - c) * rng.uniform(0.5, 1.0, n)
    second = np.minimum(second, c - 1e-3)
    p = np.stack([c, second, 1 - c - second], axis=1)
    right = rng.random(n) < truth(c)
    y = np.where(right, 0, 1 + rng.integers(0, 2, n))
    perm = rng.permuted(np.tile(np.arange(3), (n, 1)), axis=1)  # the top class anywhere
    return np.take_along_axis(p, np.argsort(perm, axis=1), axis=1), perm[np.arange(n), y]


def test_the_fit_recovers_a_known_curve() -> None:
    p, y = sampled(40000, seed=0)
    xs, ys = fit_top_map(p, y)
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(ys) >= 0)
    assert ys[0] >= 1 / 3 and ys[-1] <= TOP_MAX
    grid = np.linspace(0.45, 0.9, 10)
    assert np.abs(np.interp(grid, xs, ys) - truth(grid)).max() < 0.04
    again = fit_top_map(p, y)
    np.testing.assert_array_equal(again[0], xs)  # deterministic
    # on new data from the same source the map calibrates what the raw top probability did not
    q, yq = sampled(20000, seed=1)
    assert expected_calibration_error(q, yq) > 0.05
    assert expected_calibration_error(apply_top_map(q, xs, ys), yq) < 0.015


def test_applying_a_map_keeps_every_prediction_and_sums_to_one() -> None:
    rng = np.random.default_rng(3)
    p = softmax(rng.normal(0, 2, (5000, 3)))
    p[:10] = [0.4, 0.4, 0.2]  # ties on top
    xs, ys = np.array([0.35, 0.6, 0.9]), np.array([0.34, 0.34, 0.99])  # pulls hard down
    q = apply_top_map(p, xs, ys)
    assert (q.argmax(1) == p.argmax(1)).all()
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-9)
    assert (q >= 0).all()
    # the other classes keep their proportions
    lo = np.sort(p, 1)[:, :2]
    lq = np.sort(q, 1)[:, :2]
    np.testing.assert_allclose(lq[:, 0] * lo[:, 1], lq[:, 1] * lo[:, 0], atol=1e-9)
    # the identity map changes nothing; float32 in, float32 out
    f32 = p.astype(np.float32)
    out = apply_top_map(f32, np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, f32, atol=1e-6)
    assert apply_top_map(np.zeros((0, 3)), xs, ys).shape == (0, 3)
    with pytest.raises(ValueError, match="no examples"):
        fit_top_map(np.zeros((0, 3)), np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize("classes", [3, 5])
def test_a_few_rows_on_floats_answer_as_the_whole_batch_does(classes: int) -> None:
    """A served request's few rows take the float path (``calibration.FEW_ROWS``); a batch
    takes numpy's: each row the same, ties, saturated tops and both ends of the map too."""
    rng = np.random.default_rng(7)
    p = softmax(rng.normal(0, 3, (4000, classes))).astype(np.float32)
    p[:5] = np.eye(classes)[0]  # saturated: the rest shared evenly
    p[5:10, :2] = 0.45  # a tie on top
    p[5:10, 2:] = 0.1 / (classes - 2)
    p[10:15] = 1.0 / classes  # below the first knot
    xs, ys = np.sort(rng.uniform(0.3, 0.95, 12)), np.sort(rng.uniform(0.3, 0.99, 12))
    assert len(p) > calibration.FEW_ROWS
    whole = apply_top_map(p, xs, ys)  # numpy's path
    np.testing.assert_array_equal(
        whole, set_top(p, np.interp(p.astype(np.float64).max(axis=1), xs, ys))
    )
    for size in (1, 3, calibration.FEW_ROWS):
        for s in range(0, 600, size):
            few = apply_top_map(p[s : s + size], xs, ys)
            assert few.dtype == np.float32 and few.shape == (size, classes)
            np.testing.assert_allclose(few, whole[s : s + size], atol=2e-7, rtol=0)
            assert (few.argmax(1) == p[s : s + size].argmax(1)).all()
    # a row that is not a number goes numpy's way, as it always did
    bad = p[:2].copy()
    bad[1, 0] = np.nan
    np.testing.assert_array_equal(
        apply_top_map(bad, xs, ys), set_top(bad, np.interp(bad.max(axis=1), xs, ys))
    )


def test_set_top_gives_each_row_its_own_top_probability() -> None:
    p = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.5, 0.45, 0.05]])
    q = set_top(p, np.array([0.9, 0.4, 0.3]))  # the last would let the runner-up overtake
    np.testing.assert_allclose(q[:2].max(1), [0.9, 0.4])
    np.testing.assert_allclose(q[0], [0.9, 0.075, 0.025])  # the rest keep their 3:1
    assert (q.argmax(1) == p.argmax(1)).all() and q[2, 0] > q[2, 1]
    np.testing.assert_allclose(q.sum(1), 1.0)


def test_set_top_sums_to_one_when_the_top_is_saturated() -> None:
    """The rest was scaled by (1 - q) / (1 - c), as if it summed to 1 - c: a top of 1.0
    (or a float32 one that rounds to it) left the row summing to q."""
    p = np.array([[1.0, 0.0, 0.0], [0.99999994, 3e-9, 1e-9]], dtype=np.float32)
    q = set_top(p, np.array([0.9, 0.9]))
    np.testing.assert_allclose(q.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(q[0], [0.9, 0.05, 0.05], rtol=1e-6)  # the rest shared evenly
    np.testing.assert_allclose(q[1, 1] / q[1, 2], 3.0, rtol=1e-3)  # else in its proportions
    assert (q.argmax(1) == 0).all()


def test_out_of_fold_is_honest() -> None:
    """In sample the map nearly zeroes the ECE; out of fold it is what unseen data shows."""
    p, y = sampled(3000, seed=4)
    in_sample = apply_top_map(p, *fit_top_map(p, y))
    oof = out_of_fold_top_map(p, y)
    assert expected_calibration_error(in_sample, y) < expected_calibration_error(oof, y)
    assert expected_calibration_error(oof, y) < expected_calibration_error(p, y) / 2
    assert (oof.argmax(1) == p.argmax(1)).all()


def test_the_folds_hold_out_each_item_once_and_follow_the_seed() -> None:
    masks = list(held_out_folds(23, 5, seed=3))
    assert len(masks) == 5 and (np.sum(masks, axis=0) == 1).all()
    assert sorted(int(m.sum()) for m in masks) == [4, 4, 5, 5, 5]
    again = list(held_out_folds(23, 5, seed=3))
    assert all((a == b).all() for a, b in zip(masks, again, strict=True))
    assert any((a != b).any() for a, b in zip(masks, held_out_folds(23, 5, seed=4), strict=True))
    # more folds than items: the empty ones are skipped, every item still held out once
    few = list(held_out_folds(3, 5, seed=0))
    assert len(few) == 3 and (np.sum(few, axis=0) == 1).all()


# --------------------------------------------------------------------------- the artifact

# a dev set large enough to fit a map on, one label in four wrong on purpose: the tiny run
# is sure of the template, the noisy dev says how often that sureness is right
NOISY = [
    e if i % 4 else replace(e, label={"positive": "negative"}.get(e.label, "positive"))
    for i, e in enumerate(synthetic_examples(300, seed=5))
]


@pytest.fixture(scope="module")
def mapped(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """tiny_run exported on the noisy dev with T only and with T and the map."""
    run = load_run(tiny_run)
    out = tmp_path_factory.mktemp("top-map")
    for name, top in (("t", False), ("map", True)):
        export(run.net, run.pipeline, run.model_config, NOISY, out / name, {}, top_map=top)
    return out / "t", out / "map"


def test_an_int8_graph_with_a_map_records_its_dev_ece_out_of_fold_too(
    tiny_run: Path, tmp_path: Path
) -> None:
    """dev_ece_int8 is in sample (the map fitted on those items); the number comparable
    with calibration.dev.ece_after is measured out of fold, as that one is."""
    run = load_run(tiny_run)
    args = (run.net, run.pipeline, run.model_config, NOISY, tmp_path / "q", {})
    q = export(*args, top_map=True, quantize="int8-embeddings")["quantization"]
    rt = Runtime.load(tmp_path / "q", device="cpu", threads=1)
    rt.top_map = None  # the graph's own probabilities, after T
    pre = rt.predict_proba([(e.text, e.start, e.end) for e in NOISY])
    y = np.array([rt.labels.index(e.label) for e in NOISY])
    oof = calibration.expected_calibration_error(calibration.out_of_fold_top_map(pre, y), y)
    assert q["dev_ece_int8_out_of_fold"] == pytest.approx(oof, abs=1e-9)
    assert q["dev_ece_int8_out_of_fold"] > q["dev_ece_int8"]  # in sample flatters the map


def test_the_served_probabilities_are_torchs_with_t_and_the_map(
    tiny_run: Path, mapped: tuple[Path, Path]
) -> None:
    only_t, with_map = mapped
    rt = Runtime.load(with_map, device="cpu", threads=1)
    cal = rt.metadata["calibration"]
    assert cal["method"] == "temperature+top_map" and rt.top_map is not None
    items = [rt.encode(e.text, e.start, e.end) for e in NOISY[:64]]
    with torch.no_grad():
        feeds = collate(items, rt.pipeline.pad_id)
        z = load_run(tiny_run).net(**{k: torch.from_numpy(v) for k, v in feeds.items()})[0]
    ref = apply_top_map(
        softmax(z.numpy(), cal["temperature"]), cal["top_map"]["x"], cal["top_map"]["y"]
    )
    got = np.stack([o.probs for o in rt.run(items)])
    np.testing.assert_allclose(got, ref, atol=1e-5)
    plain = Runtime.load(only_t, device="cpu", threads=1)
    spans = [(e.text, e.start, e.end) for e in NOISY]
    a, b = plain.predict_proba(spans), rt.predict_proba(spans)
    assert (a.argmax(1) == b.argmax(1)).all() and np.abs(a - b).max() > 0.05
    y = np.array([rt.labels.index(e.label) for e in NOISY])
    dev = cal["dev"]  # after T and the map, out of fold; T alone kept beside it
    assert dev["ece_temperature"] == pytest.approx(expected_calibration_error(a, y), abs=1e-5)
    oof = out_of_fold_top_map(a, y)
    assert dev["ece_after"] == pytest.approx(expected_calibration_error(oof, y), abs=1e-4)
    section = "\n".join(calibration_lines(rt.metadata))
    assert f"top-label map ({len(cal['top_map']['x'])} knots" in section
    assert "| data | n | ECE before | ECE T only | ECE after | floor |" in section


def test_a_small_dev_or_no_temperature_is_refused(tiny_run: Path, tmp_path: Path) -> None:
    run = load_run(tiny_run)
    args = (run.net, run.pipeline, run.model_config)
    small = NOISY[: calibration.TOP_MAP_MIN_DEV - 1]
    with pytest.raises(ValueError, match="at least 500 dev items; the dev split has 499"):
        export(*args, small, tmp_path / "a", {}, top_map=True)
    with pytest.raises(ValueError, match="needs the temperature"):
        export(*args, NOISY, tmp_path / "b", {}, top_map=True, calibrate=False)
    assert not list(tmp_path.iterdir())
    # the CLI: tiny_run's dev split has 24 items
    assert main(["export", "--run", str(tiny_run), "--out", str(tmp_path / "c"), "--top-map"]) == 2


@pytest.mark.parametrize(
    "bad",
    [
        {"x": [0.5, 0.4], "y": [0.4, 0.5]},
        {"x": [0.4, 0.5], "y": [0.6, 0.5]},
        {"x": [0.4]},
        {"x": [0.4, 1.5], "y": [0.4, 0.5]},
        {"x": "no", "y": "no"},
    ],
)
def test_a_broken_map_is_refused(mapped: tuple[Path, Path], tmp_path: Path, bad: dict) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(mapped[1], broken)
    meta = artifact.read_metadata(broken)
    meta["calibration"]["top_map"] = bad
    artifact.write_metadata(broken, meta)
    with pytest.raises(ArtifactError, match="top_map"):
        Runtime.load(broken, device="cpu", threads=1)
