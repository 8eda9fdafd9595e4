"""Tests for model.recalibrate: a temperature added to an artifact without its run equals
the one export fits with the network, and the rewritten graph serves softmax(logits / T)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from absa.errors import ArtifactError
from absa.model import artifact
from absa.model.calibration import softmax
from absa.model.recalibrate import logits, recalibrate, temperature_of, with_temperature
from absa.model.runtime import Runtime
from absa.training.exporting import export_run
from absa.training.rundir import read_info
from tests.helpers import (
    ONNX_EXPORT_WARNINGS,
    one_writer_killed,
    said_of,
    synthetic_examples,
    temporary_held_in,
)

DEV = synthetic_examples(12, seed=0)  # tiny_run's dev set
SPANS = [(e.text, e.start, e.end) for e in DEV]
UNSEEN = [(e.text, e.start, e.end) for e in synthetic_examples(6, seed=9)]

pytestmark = ONNX_EXPORT_WARNINGS


@pytest.fixture(scope="module")
def exports(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """tiny_run exported without (raw) and with (calibrated) a temperature."""
    base = tmp_path_factory.mktemp("recalibrate")
    export_run(tiny_run, base / "raw", version="r1", calibrate=False)
    export_run(tiny_run, base / "calibrated", version="c1")
    return base / "raw", base / "calibrated"


def test_export_says_what_the_temperature_was_fitted_on(
    exports: tuple[Path, Path], tiny_run: Path
) -> None:
    meta = artifact.read_metadata(exports[1])
    assert meta["calibration"]["fitted_on"] == read_info(tiny_run)["dev_split"] != "dev"


def probs(model: Path, spans: list) -> np.ndarray:
    return Runtime.load(model, device="cpu", threads=1).predict_proba(spans)


def test_recalibrating_equals_calibrating_at_export(
    exports: tuple[Path, Path], tmp_path: Path
) -> None:
    raw, calibrated = exports
    meta = recalibrate(raw, tmp_path / "r2", SPANS, [e.label for e in DEV], "r2")
    t, t_export = temperature_of(meta), temperature_of(artifact.read_metadata(calibrated))
    assert t == pytest.approx(t_export, rel=1e-3)  # onnxruntime's logits vs torch's
    assert meta["version"] == "r2" and meta["recalibrated_from"]["version"] == "r1"
    check = meta["calibration"]["graph_check"]
    assert check["n"] == len(DEV) and check["prediction_mismatches"] == 0
    assert artifact.load(tmp_path / "r2").metadata == meta  # every file hashed again
    new, old = probs(tmp_path / "r2", UNSEEN), probs(raw, UNSEEN)
    np.testing.assert_allclose(new, probs(calibrated, UNSEEN), atol=1e-4)
    np.testing.assert_allclose(new, softmax(logits(raw, UNSEEN), t), atol=1e-5)
    assert (new.argmax(1) == old.argmax(1)).all() and np.abs(new - old).max() > 1e-3


def test_logits_are_recovered_through_the_temperature(exports: tuple[Path, Path]) -> None:
    raw, calibrated = exports
    np.testing.assert_allclose(logits(calibrated, UNSEEN), logits(raw, UNSEEN), atol=1e-4)
    np.testing.assert_allclose(softmax(logits(raw, UNSEEN)), probs(raw, UNSEEN), atol=1e-6)


def test_refuses_a_calibrated_artifact_and_a_second_temperature(
    exports: tuple[Path, Path], tmp_path: Path
) -> None:
    raw, calibrated = exports
    with pytest.raises(ArtifactError, match="already calibrated"):
        recalibrate(calibrated, tmp_path / "x", SPANS, [e.label for e in DEV], "x")
    once = with_temperature(onnx.load(str(raw / "model.onnx")), 2.0)
    with pytest.raises(ArtifactError, match="already has a temperature"):
        with_temperature(once, 2.0)
    with pytest.raises(FileExistsError):
        recalibrate(raw, calibrated, SPANS, [e.label for e in DEV], "x")
    assert not any(p.name.startswith(".recalibrate-") for p in tmp_path.iterdir())


def test_the_graph_check_refuses_nan() -> None:
    """NaN > limit is False: NaN probabilities passed the check that guards recalibration."""
    from absa.errors import ParityError
    from absa.model.recalibrate import _graph_check

    nan = np.full((2, 3), np.nan)
    with pytest.raises(ParityError, match="max \\|diff\\| nan"):
        _graph_check(nan, nan)
    # a near tie called the other way fails though within the tolerance
    ref = np.array([[0.5 + 1e-5, 0.5 - 1e-5, 0.0]])
    got = np.array([[0.5 - 1e-5, 0.5 + 1e-5, 0.0]])
    with pytest.raises(ParityError, match="1 predictions"):
        _graph_check(ref, got)
    assert _graph_check(ref, ref.copy())["prediction_mismatches"] == 0


def test_an_int8_record_keeps_only_what_a_new_temperature_leaves_true() -> None:
    """Probability differences and dev ECE were measured at the old T; predictions and
    sizes still hold (a temperature changes no prediction)."""
    from absa.model.recalibrate import _quantization_at_new_t

    measured = {"max_abs_prob_diff": 0.04, "dev_ece_int8": 0.012, "max_abs_batch_dependence": 0}
    old = {"type": "int8-embeddings", "changed_predictions": 10, "bytes_int8": 5, **measured}
    assert _quantization_at_new_t(old) == {
        "type": "int8-embeddings", "changed_predictions": 10, "bytes_int8": 5
    }  # fmt: skip
    assert _quantization_at_new_t(None) is None


def test_the_card_of_a_recalibrated_int8_artifact_states_no_stale_difference(
    tiny_run: Path, tmp_path: Path
) -> None:
    """Recalibration drops the int8 record's max |diff| (measured at the old T); the card
    printed the missing number as 0.000, a difference the new graph was never measured at."""
    raw = tmp_path / "raw"
    export_run(tiny_run, raw, version="q1", calibrate=False, quantize="int8-embeddings")
    meta = recalibrate(raw, tmp_path / "q2", SPANS, [e.label for e in DEV], "q2")
    assert "max_abs_prob_diff" not in meta["quantization"]
    card = (tmp_path / "q2" / "README.md").read_text()
    line = next(x for x in card.splitlines() if x.startswith("- Served quantized"))
    assert "max |diff|" not in line and "dev predictions change" in line
    assert "max |diff|" in (raw / "README.md").read_text()  # measured there: stated


def test_dev_labels_the_artifact_lacks_or_miscounted_are_refused_in_words(
    exports: tuple[Path, Path], tmp_path: Path
) -> None:
    """A label not among the artifact's was "'conflict' is not in list"; one label short
    was a torch size error from inside the fit."""
    raw = exports[0]
    labels = [e.label for e in DEV]
    with pytest.raises(ValueError, match="'conflict'.*negative, neutral, positive"):
        recalibrate(raw, tmp_path / "a", SPANS, [*labels[:-1], "conflict"], "a")
    with pytest.raises(ValueError, match=f"{len(SPANS)} dev spans but {len(SPANS) - 1} labels"):
        recalibrate(raw, tmp_path / "b", SPANS, labels[:-1], "b")
    assert list(tmp_path.iterdir()) == []


def varied(n: int, seed: int) -> tuple[list, list[str]]:
    """``n`` sentences' spans of several lengths (a clause added 0-3 times) and labels: over
    64 items of unequal length, batches in the given order are not batches by length."""
    examples = synthetic_examples(n, seed=seed)
    spans = [
        (e.text + " and the view was fine" * (i % 4), e.start, e.end)
        for i, e in enumerate(examples)
    ]
    return spans, [e.label for e in examples]


def test_an_int8_dynamic_artifact_recalibrates(tiny_run: Path, tmp_path: Path) -> None:
    """Dynamic int8 scales activations per batch: the logits were taken in the given order
    64 at a time, the check served by length, so the two differed by ~3e-3 and every int8
    artifact was refused ("the recalibrated graph differs from logits / T")."""
    raw = tmp_path / "raw"
    export_run(tiny_run, raw, version="d1", calibrate=False, quantize="int8")
    spans, labels = varied(60, seed=4)
    assert len(spans) > 64 and len({len(t.split()) for t, _, _ in spans}) > 1
    meta = recalibrate(raw, tmp_path / "d2", spans, labels, "d2")
    check = meta["calibration"]["graph_check"]
    assert check["n"] == len(spans) and check["max_abs_diff"] <= 1e-4
    assert meta["quantization"]["type"] == "int8-dynamic"
    t = temperature_of(meta)
    np.testing.assert_allclose(
        probs(tmp_path / "d2", spans), softmax(logits(raw, spans), t), atol=1e-4
    )


def test_the_card_of_a_recalibrated_artifact_says_where_and_from_what(
    exports: tuple[Path, Path], tmp_path: Path
) -> None:
    """The card said T was "fitted on the dev split" (the metadata: on the file given) and
    its Reproduce section rebuilt the uncalibrated source without a word of recalibration."""
    raw = exports[0]
    meta = recalibrate(raw, tmp_path / "r3", SPANS, [e.label for e in DEV], "r3", "held.jsonl")
    card = (tmp_path / "r3" / "README.md").read_text()
    calibration = card.split("## Calibration")[1].split("## ")[0]
    assert "fitted on the dev split" not in calibration
    assert f"fitted on held.jsonl ({len(DEV)} items" in calibration
    reproduce = card.split("## Reproduce")[1]
    source = meta["recalibrated_from"]
    assert f"recalibrated from version r1 (model.onnx sha256 {source['sha256'][:12]}" in reproduce
    assert "absa.model.recalibrate.recalibrate" in reproduce
    assert "benchmarks/calibration.py --artifact" in reproduce
    assert "recalibrated" not in (raw / "README.md").read_text()


def test_a_category_model_and_a_missing_folder_are_refused_in_words(
    category_run: Path, exports: tuple[Path, Path], tmp_path: Path
) -> None:
    """A category artifact ended in onnxruntime's "Required inputs (['category_ids']) are
    missing"; a destination in a missing folder in mkdtemp's FileNotFoundError."""
    cats = tmp_path / "cats"
    export_run(category_run, cats, name="categories", version="k1", calibrate=False)
    with pytest.raises(ArtifactError, match=f"{cats}: a category model.*term model"):
        recalibrate(cats, tmp_path / "k2", SPANS, [e.label for e in DEV], "k2")
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError, match=f"{missing}: no such folder to write r9 in"):
        recalibrate(exports[0], missing / "r9", SPANS, [e.label for e in DEV], "r9")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cats"]


def test_a_killed_recalibrations_temporary_directory_is_removed_by_the_next_one(
    exports: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A recalibration killed by SIGKILL left its .recalibrate-* directory (a copy of the
    artifact) beside its destination for good. The next one into the same folder removes
    those no process holds, says which, and leaves a running one's alone."""
    writers = (
        temporary_held_in(tmp_path, ".recalibrate-"),
        temporary_held_in(tmp_path, ".recalibrate-"),
    )
    with one_writer_killed(*writers) as (stale, live):
        with caplog.at_level("INFO", logger="absa"):
            recalibrate(exports[0], tmp_path / "r2", SPANS, [e.label for e in DEV], "r2")
        assert not stale.exists() and (live / "model.onnx").is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "r2"])
        assert said_of(caplog, stale) == [
            f"removed {stale}: the temporary directory of a recalibration that did not end"
        ]
