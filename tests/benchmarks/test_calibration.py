"""benchmarks/calibration.py: the shipped model's dev split rebuilds exactly from its
metadata, the shipped model carries the temperature and the test-set ECE it reports, and
re-running the card update is idempotent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from absa.model import artifact
from absa.model.calibration import expected_calibration_error
from absa.model.recalibrate import temperature_of
from absa.model.runtime import DEFAULT_MODEL_DIR, Runtime
from benchmarks.calibration import (
    identity,
    null_eces,
    null_summary,
    rebuild_dev,
    reusable,
    spans,
    with_calibration,
)
from tests.helpers import data_dir

META = artifact.read_metadata(DEFAULT_MODEL_DIR)


def test_the_shipped_model_is_calibrated_and_reports_each_test_set() -> None:
    cal = META["calibration"]
    assert cal["fitted"]  # at export (1.3.0 on), or re-issued (1.2.1 from 1.2.0)
    assert temperature_of(META) == cal["temperature"] != 1.0
    assert set(cal["test"]) == {"rest14", "lap14", "twitter", "mams", "all"}
    # the re-issued graph's check against logits / T, or the export's parity (T applied)
    assert cal.get("graph_check", META["parity"])["prediction_mismatches"] == 0
    card = (DEFAULT_MODEL_DIR / "README.md").read_text(encoding="utf-8")
    assert card.startswith(f"# absa-default {META['version']}\n")
    assert with_calibration(card, META, DEFAULT_MODEL_DIR) == card  # idempotent
    for name, rep in cal["test"].items():
        assert f"| {name} | {rep['n']} | {rep['ece_before'] * 100:.2f} |" in card


def test_the_dev_split_rebuilds_and_gives_the_recorded_numbers() -> None:
    if not (data_dir() / "mams" / "train.xml").is_file():
        pytest.skip("the benchmark data is absent")
    dev = rebuild_dev(META)  # checks n_train, n_dev, label counts, overlap and supports
    probs = Runtime.load(DEFAULT_MODEL_DIR, device="cpu", threads=1).predict_proba(spans(dev))
    y = np.array([META["labels"].index(e.label) for e in dev])
    # a quantised graph: the accuracy and the ECE export measured on it (calibration.dev is
    # the fp32 graph's, where T was fitted)
    q = META.get("quantization")
    acc = q["dev_accuracy_int8"] if q else META["metrics"]["dev"]["accuracy"]
    assert float((probs.argmax(1) == y).mean()) == acc
    ece = expected_calibration_error(probs, y)
    recorded = q["dev_ece_int8"] if q else META["calibration"]["dev"]["ece_after"]
    assert ece == pytest.approx(recorded, abs=1e-5)


def test_ece_floor_of_calibrated_probabilities() -> None:
    """The floor shrinks with more items and is the ECE of labels drawn from the model."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet([1.0, 1.0, 1.0], size=4000)
    small, large = null_eces(p[:300], 15).mean(), null_eces(p, 15).mean()
    assert 0 < large < small < 0.1
    assert null_eces(p[:300], 15).mean() == small  # seeded


def test_null_summary_says_how_often_a_calibrated_model_meets_a_target() -> None:
    """Labels drawn from the probabilities themselves: a loose target is always met, an
    impossible one never, and the 95th percentile lies above the mean."""
    p = np.random.default_rng(2).dirichlet([1.0, 1.0, 1.0], size=600)
    loose, strict = null_summary(p, 15, target=0.5), null_summary(p, 15, target=0.0)
    assert loose["ece_floor_share_meeting_target"] == 1.0
    assert strict["ece_floor_share_meeting_target"] == 0.0
    assert loose["ece_floor"] == null_eces(p, 15).mean()  # the same seeded draws
    assert loose["ece_floor"] < loose["ece_floor_p95"] < 0.2


def test_a_result_file_of_another_artifact_by_the_same_name_is_never_reused(
    tmp_path: Path,
) -> None:
    """Two candidates exported under one version: the second must not take the first's
    numbers (and write them into its own metadata)."""
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(DEFAULT_MODEL_DIR, first)
    shutil.copytree(DEFAULT_MODEL_DIR, second)
    out = tmp_path / "results" / "absa-default-x__lap14.json"
    assert reusable(out, identity(first)) is None  # nothing measured yet
    out.parent.mkdir()
    out.write_text(json.dumps({"artifact": "absa-default-x", "model": identity(first), "n": 638}))
    assert reusable(out, identity(second)) == json.loads(out.read_text())  # the same files: resumed
    onnx = second / artifact.ONNX
    onnx.write_bytes(onnx.read_bytes() + b"\0")  # another graph, the same metadata
    with pytest.raises(SystemExit, match="measured another artifact named absa-default-x"):
        reusable(out, identity(second))
    meta = artifact.read_metadata(first)
    meta["calibration"]["temperature"] += 0.5  # the same graph, another temperature
    artifact.write_metadata(first, meta)
    with pytest.raises(SystemExit, match="give --results DIR"):
        reusable(out, identity(first))


@pytest.mark.parametrize("more", [False, True])
def test_the_dev_split_of_a_run_with_a_bracket_spelt_test_sentence_rebuilds(
    tmp_path: Path, small_glove: Path, more: bool
) -> None:
    """absa train compares --exclude's sentences with the training ones by bracket_free (a
    run records it as ``sentence_key``): the rebuilt split must compare them so too."""
    from absa.cli import main
    from tests.helpers import bracket_leak, synthetic_examples, tiny_config, write_jsonl

    leak, test = bracket_leak(tmp_path)
    examples = synthetic_examples(24, seed=3)
    train = write_jsonl(tmp_path / "train.jsonl", [*examples[:12], *leak, *examples[12:]])
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, dev_fraction=0.3)
    run, art = tmp_path / "run", tmp_path / "art"
    argv = ["train", "--train", str(train), "--exclude", str(test), "--config", str(cfg)]
    argv += ["--train-more", str(train), "--dev-from-train"] if more else []
    assert main([*argv, "--out", str(run), "--quiet"]) == 0
    assert main(["export", "--run", str(run), "--out", str(art), "--no-calibrate"]) == 0
    meta = artifact.read_metadata(art)
    data = meta["train"]["data"]
    assert data["sentence_key"] == "bracket_free"
    assert data["excluded_overlap"] == (4 if more else 2)  # --train-more: the file again
    dev = rebuild_dev(meta)  # checks n_train, n_dev, label counts and supports
    assert [e.text for e in dev] == [
        json.loads(line)["text"] for line in (run / "dev.jsonl").read_text().splitlines()
    ]
    del data["sentence_key"]  # as a run made before: by normalise_text, the leak is kept
    with pytest.raises(SystemExit, match="does not rebuild"):
        rebuild_dev(meta)
