"""Tests for model.export and model.runtime: exporting a loaded network (no training code
in the way) to an artifact, parity, int8, verification, execution providers, and a serving
path that never imports torch. Exporting a run directory: tests/training/test_exporting.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

import absa
import absa.model.export as export
from absa import errors
from absa.cli import main
from absa.model import artifact
from absa.model.aspects import find_all
from absa.model.calibration import expected_calibration_error, softmax
from absa.model.card import calibration_lines
from absa.model.predictor import Predictor
from absa.model.runtime import ArtifactError, Runtime, choose_providers, word_weights
from absa.model.text import collate
from absa.training.metrics import classification_report
from absa.training.rundir import LoadedRun, load_run
from absa.training.train import fit
from tests.helpers import (
    ONNX_EXPORT_WARNINGS,
    one_writer_killed,
    said_of,
    staging_in,
    synthetic_examples,
    tiny_preset,
    write_jsonl,
)

EXAMPLES = synthetic_examples(12, seed=0)  # tiny_run's training (and dev) set
PROVENANCE = {"preset": "atae-lstm", "source_run": "somewhere"}


class Span(NamedTuple):
    """A dev example as export takes it: anything with text, start, end and label."""

    text: str
    start: int
    end: int
    label: str


DEV = [Span(e.text, e.start, e.end, e.label) for e in EXAMPLES]


def export_loaded(run: LoadedRun, out: Path, dev: Sequence[Span] = DEV, **kw: object) -> dict:
    return export.export(
        run.net,
        run.pipeline,
        run.model_config,
        dev,
        out,
        PROVENANCE,
        **kw,  # type: ignore[arg-type]
    )


ROOT = Path(__file__).resolve().parents[2]

# the TorchScript exporter's notes on tracing and LSTM batch sizes; the tests below check
# dynamic batch and length axes themselves
pytestmark = ONNX_EXPORT_WARNINGS


@pytest.fixture(scope="module")
def loaded(tiny_run: Path) -> LoadedRun:
    """tiny_run's network, loaded once. Read-only."""
    return load_run(tiny_run)


@pytest.fixture(scope="module")
def art(loaded: LoadedRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("artifacts") / "fp32"
    export_loaded(loaded, out, name="tiny", version="t1")
    return out


def two_head_run(
    tmp: pytest.TempPathFactory, glove: Path, preset_name: str, **over: object
) -> Path:
    """A 3-epoch run of a preset with two self-attention heads, on EXAMPLES."""
    preset = tiny_preset(preset_name, glove, self_attention_heads=2, **over)
    preset = replace(preset, train=replace(preset.train, epochs=3))
    run_dir = tmp.mktemp("runs") / preset_name
    fit(EXAMPLES, EXAMPLES, preset, run_dir, progress=False)
    return run_dir


@pytest.fixture(scope="module")
def selfattn_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    return two_head_run(tmp_path_factory, small_glove, "pos-scaled-selfattn")


@pytest.fixture(
    scope="module",
    params=[
        "card",
        "card-lite",
        "card-lite-relative",
        "card-lite-2-layers",
        "card-lite-2-between",
        "card-lite-2-between-window",
    ],
)
def card_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, small_glove: Path
) -> Path:
    """The card's network; "card-lite": small queries and keys, the states as values;
    "-relative": positions counted from the aspect, an affine attention query; "-2-layers":
    two stacked recurrent layers; "-2-between": the self-attention between them; "-window":
    each word attending within two words of it."""
    lite = {"self_attention_dim": 8, "self_attention_value": "states"}
    relative = {**lite, "positional_origin": "aspect", "attention_query_bias": True}
    over = {
        "card": {},
        "card-lite": lite,
        "card-lite-relative": relative,
        "card-lite-2-layers": {**lite, "layers": 2},
        "card-lite-2-between": {**lite, "layers": 2, "self_attention_at": "between"},
        "card-lite-2-between-window": {
            **lite,
            "layers": 2,
            "self_attention_at": "between",
            "self_attention_window": 2,
        },
    }[request.param]
    return two_head_run(tmp_path_factory, small_glove, "card", **over)


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(".export-"))


# --------------------------------------------------------------------------- the artifact


def test_artifact_contents(art: Path, tiny_run: Path, loaded: LoadedRun) -> None:
    names = {p.name for p in art.iterdir()}
    assert {"model.onnx", "metadata.json", "pipeline.json", "vocab.json"} <= names
    assert not any(n.endswith((".pt", ".pkl", ".safetensors")) for n in names)
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["kind"] == artifact.KIND
    assert meta["format"] == artifact.FORMAT == 1 and meta["absa_version"] == absa.__version__
    assert meta["name"] == "tiny" and meta["version"] == "t1"
    assert meta["labels"] == ["negative", "neutral", "positive"]
    assert meta["onnx"] == {
        "file": "model.onnx",
        "sha256": artifact.sha256_file(art / "model.onnx"),
        "opset": export.OPSET,
        "inputs": ["input_ids", "attention_mask", "aspect_mask"],
        # what made the graph and measured the parity, calibration and int8 numbers below
        "exported_with": {
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
        },
    }
    parity = meta["parity"]
    assert parity["n"] == len(EXAMPLES)
    assert parity["max_abs_diff"] <= 1e-4 and parity["prediction_mismatches"] == 0
    assert parity["atol"] == artifact.PARITY_ATOL
    assert parity["dev_accuracy_onnx"] == parity["dev_accuracy_torch"]
    assert parity["dev_accuracy_torch"] == loaded.metrics["dev"]["accuracy"]  # dev = EXAMPLES
    assert parity["dev_macro_f1_onnx"] == pytest.approx(loaded.metrics["dev"]["macro_f1"])
    assert "quantization" not in meta
    assert meta["model_config"] == loaded.model_config.to_dict()
    # the provenance goes in as given, between the model's config and the graph
    assert list(meta) == [
        *("kind", "format", "absa_version", "task", "name", "version", "created", "labels"),
        "model_config",
        *PROVENANCE,
        *("calibration", "onnx", "files", "parity"),
    ]
    # every file but metadata.json, with its sha256 (artifact.load verifies each)
    assert meta["files"] == {
        n: artifact.sha256_file(art / n) for n in sorted(names - {"metadata.json"})
    }
    assert {k: meta[k] for k in PROVENANCE} == PROVENANCE
    assert (art / "vocab.json").read_text() == (tiny_run / "vocab.json").read_text()
    assert (art.stat().st_mode & 0o755) == 0o755  # readable by a serving user
    assert artifact.load(art).metadata == meta  # what every loader checks, parity included


def test_export_needs_no_training_code() -> None:
    """model/ never depends on training/: the exporter imports no absa.training module."""
    code = (
        "import sys\n"
        "import absa.model.export\n"
        "bad = sorted(m for m in sys.modules if m.startswith('absa.training'))\n"
        "assert not bad, bad\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr


def test_evaluate_same_accuracy_on_run_and_artifact(
    tiny_run: Path, art: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES + synthetic_examples(6, seed=9))
    reports = []
    for model in (tiny_run, art):
        capsys.readouterr()
        assert main(["evaluate", "--model", str(model), "--data", str(data), "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0]["accuracy"] == reports[1]["accuracy"]
    assert reports[0]["confusion"] == reports[1]["confusion"]
    assert reports[0]["n"] == len(EXAMPLES) + 12


@pytest.mark.parametrize("size", [1, 5])
def test_onnxruntime_matches_torch_on_padded_batches(
    loaded: LoadedRun, art: Path, size: int
) -> None:
    rt = Runtime.load(art, device="cpu", threads=1)
    texts = [
        ("the food was great", "food"),
        ("wow , the service at this odd little place was truly awful , sadly", "service"),
        ("the pizza was ok but the wine was terrible and the staff were slow", "wine"),
        ("music", "music"),
        ("the view was excellent", "view"),
    ]
    items = [rt.encode(t, *find_all(t, a)[0]) for t, a in texts[:size]]
    feeds = collate(items, rt.pipeline.pad_id)
    assert size == 1 or len({len(e.ids) for e in items}) > 1  # really padded
    probs, attn = rt.session.run(["probs", "attention"], feeds)
    with torch.no_grad():
        logits, alpha, _ = loaded.net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    t = rt.metadata["calibration"]["temperature"]  # fitted on dev at export: in the graph
    assert rt.metadata["calibration"]["fitted"] and abs(t - 1) > 0.05, t
    np.testing.assert_allclose(probs, torch.softmax(logits / t, -1).numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(attn, alpha.numpy(), atol=1e-5, rtol=0)
    assert probs.shape == (size, 3) and attn.shape == feeds["input_ids"].shape
    # the runtime's per-item outputs are the unpadded rows
    for i, out in enumerate(rt.run(items)):
        n = len(items[i].ids)
        np.testing.assert_allclose(out.probs, probs[i], atol=1e-6)
        np.testing.assert_allclose(out.attention, attn[i, :n], atol=1e-6)
        assert out.aspect_mask == tuple(items[i].aspect_mask)
        assert [t.text for t, _ in word_weights(out)] == [t.text for t in items[i].tokens]


def test_runtime_bucketing_keeps_input_order(art: Path) -> None:
    rt = Runtime.load(art, device="cpu", threads=1, max_batch=2)
    spans = [(e.text, e.start, e.end) for e in EXAMPLES[:7]]
    spans.insert(3, ("the food", 4, 8))
    batched = rt.predict_proba(spans)
    single = np.stack([rt.predict_proba([s])[0] for s in spans])
    np.testing.assert_allclose(batched, single, atol=1e-6)
    assert rt.predict_proba([]).shape == (0, 3)


# --------------------------------------------------------------------------- calibration

UNSEEN = [(e.text, e.start, e.end) for e in synthetic_examples(6, seed=9)]


def test_the_recorded_calibration_is_true_of_the_served_graph(art: Path) -> None:
    rt = Runtime.load(art, device="cpu", threads=1)
    cal = rt.metadata["calibration"]
    assert (cal["method"], cal["bins"], cal["dev"]["n"]) == ("temperature", 15, len(DEV))
    assert cal["fitted_on"] == "dev"  # no run's dev_split given (export_run passes it)
    probs = rt.predict_proba([(e.text, e.start, e.end) for e in DEV])
    y = np.array([rt.labels.index(e.label) for e in DEV])
    assert expected_calibration_error(probs, y) == pytest.approx(cal["dev"]["ece_after"], abs=1e-5)
    assert cal["dev"]["nll_after"] <= cal["dev"]["nll_before"]
    section = "\n".join(calibration_lines(rt.metadata))
    assert f"T = {cal['temperature']:.3f}, fitted on the dev split" in section
    assert f"| dev | {len(DEV)} | {cal['dev']['ece_before'] * 100:.2f} |" in section
    assert section in (art / "README.md").read_text()  # the card has it


def test_evaluate_reports_the_ece_before_and_after(
    tiny_run: Path, art: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``absa evaluate`` on the run (the network's probabilities) and on the artifact (T
    applied), on the dev set T was fitted on: the ECE export recorded before and after."""
    data = write_jsonl(tmp_path / "dev.jsonl", EXAMPLES)
    dev = artifact.load(art).metadata["calibration"]["dev"]
    for model, key in ((tiny_run, "ece_before"), (art, "ece_after")):
        capsys.readouterr()
        assert main(["evaluate", "--model", str(model), "--data", str(data), "--json"]) == 0
        rep = json.loads(capsys.readouterr().out)
        assert rep["ece_bins"] == 15
        assert rep["ece"] == pytest.approx(dev[key], abs=1e-5), key


def test_export_without_calibration_serves_the_networks_probabilities(
    loaded: LoadedRun, art: Path, tmp_path: Path
) -> None:
    meta = export_loaded(loaded, tmp_path / "raw", calibrate=False)
    cal = meta["calibration"]
    assert cal["temperature"] == 1.0 and cal["fitted"] is False
    assert cal["dev"]["ece_before"] == cal["dev"]["ece_after"]
    assert "None: exported with `--no-calibrate`" in "\n".join(calibration_lines(meta))
    raw = Runtime.load(tmp_path / "raw", device="cpu", threads=1).predict_proba(UNSEEN)
    scaled = Runtime.load(art, device="cpu", threads=1).predict_proba(UNSEEN)
    t = artifact.load(art).metadata["calibration"]["temperature"]
    assert (raw.argmax(1) == scaled.argmax(1)).all()  # the temperature changes no answer
    assert np.abs(raw - scaled).max() > 1e-3
    np.testing.assert_allclose(softmax(np.log(raw), t), scaled, atol=1e-5)


def test_an_artifact_from_before_calibration_still_loads(art: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(art, old)
    meta = artifact.read_metadata(old)
    del meta["calibration"]  # what an export before temperature scaling wrote
    artifact.write_metadata(old, meta)
    rt = Runtime.load(old, device="cpu", threads=1)
    assert "calibration" not in rt.metadata and calibration_lines(rt.metadata) == []
    np.testing.assert_array_equal(
        rt.predict_proba(UNSEEN), Runtime.load(art, device="cpu", threads=1).predict_proba(UNSEEN)
    )


# --------------------------------------------------------------------------- failures


def test_outputs_that_are_not_numbers_fail_parity() -> None:
    """NaN probabilities (weights gone NaN) made max |diff| NaN, and "nan > atol" is False:
    such a model was exported and could be promoted."""
    ref = np.full((4, 3), np.nan)
    with pytest.raises(export.ParityError, match="max \\|diff\\| nan"):
        export._check_parity(ref, ref.copy(), np.zeros(4, int))


def test_a_flipped_winner_within_the_tolerance_fails_parity() -> None:
    """A near tie that torch and onnxruntime call differently fails, though every
    probability is within the tolerance: served answers would differ from the run's."""
    ref = np.array([[0.5 + 1e-5, 0.5 - 1e-5, 0.0], [0.9, 0.05, 0.05]])
    got = np.array([[0.5 - 1e-5, 0.5 + 1e-5, 0.0], [0.9, 0.05, 0.05]])
    assert np.abs(ref - got).max() <= export.PARITY_ATOL
    with pytest.raises(export.ParityError, match="1 predictions differ"):
        export._check_parity(ref, got, np.zeros(2, int))
    assert export._check_parity(ref, ref.copy(), np.zeros(2, int))["prediction_mismatches"] == 0


def test_parity_failure_writes_nothing(
    loaded: LoadedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "PARITY_ATOL", -1.0)
    out = tmp_path / "artifact"
    with pytest.raises(export.ParityError, match="nothing exported") as err:
        export_loaded(loaded, out)
    assert isinstance(err.value, errors.ParityError) and isinstance(err.value, ArtifactError)
    assert not out.exists()
    assert leftovers(tmp_path) == []


def test_export_into_existing_directory_fails(loaded: LoadedRun, tmp_path: Path) -> None:
    out = tmp_path / "artifact"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        export_loaded(loaded, out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert leftovers(tmp_path) == []


def test_an_existing_output_is_refused_before_any_work(
    loaded: LoadedRun, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The check ran only at the very end: an int8 export of a large network fitted T,
    checked parity and quantised for minutes, then said the output path exists."""
    out = tmp_path / "artifact"
    out.write_text("a file, not an artifact")
    with caplog.at_level("INFO", logger="absa.model"), pytest.raises(FileExistsError) as err:
        export_loaded(loaded, out, quantize="int8-embeddings")
    assert str(out) in str(err.value)
    assert not [r for r in caplog.records if r.name.startswith("absa.model.")]  # nothing ran
    assert out.read_text() == "a file, not an artifact" and leftovers(tmp_path) == []


def test_a_dangling_link_at_the_output_is_refused(loaded: LoadedRun, tmp_path: Path) -> None:
    """exists() is False for a link to nothing, and the rename at the end replaced the link:
    whatever the user pointed it at was never written, and the link was gone."""
    out = tmp_path / "artifact"
    out.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError, match="exists; export into a new directory"):
        export_loaded(loaded, out)
    assert out.is_symlink() and leftovers(tmp_path) == []
    with pytest.raises(FileExistsError), artifact.staged(out):
        pass  # the check at the end of staged() too
    assert out.is_symlink() and leftovers(tmp_path) == []


def test_a_failed_export_leaves_none_of_the_folders_it_made(tmp_path: Path) -> None:
    """--out deep/a/b/art that failed left deep/a/b/ behind, empty; folders that were there
    before stay."""
    (tmp_path / "deep").mkdir()
    with pytest.raises(RuntimeError), artifact.staged(tmp_path / "deep" / "a" / "b" / "art"):
        raise RuntimeError("the export failed")
    assert [p.name for p in tmp_path.iterdir()] == ["deep"] and leftovers(tmp_path / "deep") == []
    assert list((tmp_path / "deep").iterdir()) == []


def test_a_killed_exports_temporary_directory_is_removed_by_the_next_export(
    tiny_run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An export killed by SIGKILL left its .export-* directory (half an artifact) beside
    --out for good: nothing removed it. The next export into the same folder removes those
    that no process holds (each export holds a flock on its own while it runs), says which,
    and leaves a running export's alone."""
    with one_writer_killed(staging_in(tmp_path, "a"), staging_in(tmp_path, "b")) as (stale, live):
        with caplog.at_level("INFO", logger="absa"):
            assert main(["export", "--run", str(tiny_run), "--out", str(tmp_path / "art")]) == 0
        assert not stale.exists()
        assert live.is_dir() and (live / "model.onnx").is_file()  # a running export's: kept
        assert leftovers(tmp_path) == [live.name]
        assert said_of(caplog, stale) == [
            f"removed {stale}: the temporary directory of an export that did not end"
        ]
        assert artifact.is_artifact(tmp_path / "art")


def test_an_export_that_fills_the_disk_is_one_line_naming_its_output(tmp_path: Path) -> None:
    """A full disk while the artifact's files were written: "[Errno 28] No space left on
    device", naming no file (fp32 export; int8's own check said so before). Whatever file
    of the artifact meets it, the message names --out, and nothing is left behind."""
    import errno

    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("no /dev/full here")
    out = tmp_path / "art"
    with pytest.raises(OSError) as raised, artifact.staged(out) as building:
        (building / "model.onnx").symlink_to(full)  # writes fail as on a full disk
        (building / "model.onnx").write_bytes(b"x" * 100_000)
    assert raised.value.errno == errno.ENOSPC
    assert str(raised.value) == f"cannot write {out}: the disk is full (No space left on device)"
    assert list(tmp_path.iterdir()) == []


def test_an_empty_dev_set_is_refused_in_words(loaded: LoadedRun, tmp_path: Path) -> None:
    """No dev items crashed in numpy ("need at least one array to concatenate")."""
    with pytest.raises(ValueError, match="no dev examples"):
        export_loaded(loaded, tmp_path / "a", dev=[])
    assert list(tmp_path.iterdir()) == []


def test_export_rejects_unknown_quantization(loaded: LoadedRun, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="int8"):
        export_loaded(loaded, tmp_path / "a", quantize="int4")
    assert list(tmp_path.iterdir()) == []


def test_export_rejects_a_dev_label_the_model_lacks(loaded: LoadedRun, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="conflict"):
        export_loaded(loaded, tmp_path / "a", dev=[DEV[0]._replace(label="conflict")])
    assert list(tmp_path.iterdir()) == []


def test_runtime_refuses_a_modified_model(art: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(art, tmp_path / "a")
    with (copy / "model.onnx").open("ab") as f:
        f.write(b"\0")
    with pytest.raises(ArtifactError, match="sha256"):
        Runtime.load(copy, device="cpu")


def test_runtime_refuses_broken_artifacts(art: Path, tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="no metadata.json"):
        Runtime.load(tmp_path, device="cpu")
    copy = shutil.copytree(art, tmp_path / "a")
    meta = json.loads((copy / "metadata.json").read_text())
    (copy / "metadata.json").write_text(json.dumps({**meta, "kind": "absa-run"}))
    with pytest.raises(ArtifactError, match="kind"):
        Runtime.load(copy, device="cpu")
    (copy / "metadata.json").write_text(json.dumps(meta))
    (copy / "model.onnx").unlink()
    with pytest.raises(ArtifactError, match="missing"):
        Runtime.load(copy, device="cpu")


# --------------------------------------------------------------------------- int8, self-attention


def test_macro_f1_counts_as_training_metrics_do() -> None:
    rng = np.random.default_rng(0)
    cases = [(rng.integers(0, k, n), rng.integers(0, k, n), k) for k, n in ((3, 50), (4, 30))]
    cases.append((np.array([0, 0, 1]), np.array([0, 1, 1]), 3))  # class 2 neither gold nor said
    for y, pred, k in cases:
        want = classification_report(y, pred, [str(i) for i in range(k)])["macro_f1"]
        assert export._macro_f1(y, pred, k) == pytest.approx(want)


def test_int8_export(loaded: LoadedRun, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "int8"
    with caplog.at_level("WARNING"):
        meta = export_loaded(loaded, out, quantize="int8")
    # onnxruntime's advice to pre-process the graph (for its static image examples) came out
    # as a WARNING of the root logger on every int8 export: nothing a user could act on
    assert not [r for r in caplog.records if "pre-processing before quantization" in r.message]
    assert meta == json.loads((out / "metadata.json").read_text())
    q = meta["quantization"]
    assert q["type"] == "int8-dynamic"
    assert q["accuracy_change"] == pytest.approx(q["dev_accuracy_int8"] - q["dev_accuracy_fp32"])
    assert q["dev_accuracy_fp32"] == meta["parity"]["dev_accuracy_onnx"]
    assert isinstance(q["changed_predictions"], int) and 0 <= q["changed_predictions"] <= 24
    assert q["bytes_int8"] < q["bytes_fp32"]
    assert meta["onnx"]["sha256"] == artifact.sha256_file(out / "model.onnx")
    assert list(meta)[-2:] == ["parity", "quantization"]
    assert not (out / "model.int8.onnx").exists()
    card = (out / "README.md").read_text()  # the parity record is the fp32 graph's, not int8's
    assert "- Export: the fp32 graph matches torch on 24 dev aspects" in card
    assert (
        f"- Served quantized (int8-dynamic): against the fp32 graph, {q['changed_predictions']}"
        in card
    )
    rt = Runtime.load(out, device="cpu", threads=1)
    probs = rt.predict_proba([(e.text, e.start, e.end) for e in EXAMPLES])
    predicted = [rt.labels[i] for i in probs.argmax(1)]
    acc = float(np.mean([p == e.label for p, e in zip(predicted, EXAMPLES, strict=True)]))
    assert acc == pytest.approx(q["dev_accuracy_int8"])
    y = np.array([rt.labels.index(e.label) for e in EXAMPLES])  # the dev set export used
    f1 = classification_report(y, probs.argmax(1), rt.labels)["macro_f1"]
    assert q["dev_macro_f1_int8"] == pytest.approx(f1)
    # (dynamic int8: probabilities depend a little on how the items are batched)
    assert q["dev_ece_int8"] == pytest.approx(expected_calibration_error(probs, y), abs=0.02)
    # how much, export measured: the dev items alone against in one batch
    encoded = [rt.encode(e.text, e.start, e.end) for e in EXAMPLES]
    batched = np.stack([o.probs for o in rt.run_batch(encoded)])
    alone = np.stack([rt.run_batch([x])[0].probs for x in encoded])
    assert q["max_abs_batch_dependence"] == pytest.approx(np.abs(alone - batched).max(), abs=1e-6)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("changed", "change", "refused"),
    [(10, 0.0, False), (46, -0.005, False), (47, 0.0, True), (10, -0.0056, True), (2, 0.0, False)],
)
def test_the_int8_graph_is_gated_as_the_served_one(
    changed: int, change: float, refused: bool
) -> None:
    """The parity check covered the fp32 graph only; the int8 one is what serves (1.8.0:
    10 of 2,330 dev predictions changed, accuracy unchanged)."""
    info = {"type": "int8-dynamic", "changed_predictions": changed, "accuracy_change": change}
    if refused:
        with pytest.raises(export.ParityError, match=rf"changes {changed} of 2330 dev predictions"):
            export.check_quantization(info, 2330)
    else:
        export.check_quantization(info, 2330)
    export.check_quantization({**info, "changed_predictions": 2, "accuracy_change": -2 / 24}, 24)


def test_an_int8_refusal_suggests_only_what_is_left_to_try() -> None:
    """Every refusal ended "or with int8-embeddings (the word table alone)", that one's too."""
    over = {"changed_predictions": 47, "accuracy_change": 0.0}
    with pytest.raises(export.ParityError) as dynamic:
        export.check_quantization({"type": "int8-dynamic", **over}, 2330)
    assert str(dynamic.value).endswith(
        "export without --quantize, or with int8-embeddings (the word table alone)"
    )
    with pytest.raises(export.ParityError) as tables:
        export.check_quantization({"type": "int8-embeddings", **over}, 2330)
    assert str(tables.value).endswith("nothing exported: export without --quantize")
    assert "int8-embeddings (the word table alone)" not in str(tables.value)


def test_an_int8_graph_past_the_budget_exports_nothing(
    loaded: LoadedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "QUANT_MAX_CHANGED", -1.0)
    monkeypatch.setattr(export, "QUANT_ANY_CHANGED", -1)  # no change at all is allowed
    with pytest.raises(export.ParityError, match="quantisation changes 0 of 24 dev predictions"):
        export_loaded(loaded, tmp_path / "q", quantize="int8")
    assert not (tmp_path / "q").exists() and leftovers(tmp_path) == []


def test_int8_embeddings_export_answers_each_item_as_if_alone(
    loaded: LoadedRun, tmp_path: Path
) -> None:
    """Only the word-vector table is int8 (a weight-only Gather): the table shrinks and an
    item's probabilities are the same whatever else is in its batch, which dynamic
    quantisation (activation scales per batch) does not keep."""
    import onnx

    meta = export_loaded(loaded, tmp_path / "e", quantize="int8-embeddings")
    q = meta["quantization"]
    assert q["type"] == "int8-embeddings"  # (on a table this small, int8 saves no bytes)
    graph = onnx.load(str(tmp_path / "e" / "model.onnx")).graph
    ops = {n.op_type for n in graph.node}
    assert "DequantizeLinear" in ops and not ops & {"DynamicQuantizeLinear", "MatMulInteger"}
    eight_bit = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)  # onnxruntime picks
    int8 = [i.dims for i in graph.initializer if i.data_type in eight_bit]
    assert [loaded.model_config.vocab_size, loaded.model_config.embed_dim] in map(list, int8)
    spans = [(e.text, e.start, e.end) for e in EXAMPLES]
    rt = Runtime.load(tmp_path / "e", device="cpu", threads=1)
    batched = rt.predict_proba(spans)
    alone = np.stack([rt.predict_proba([s])[0] for s in spans])
    np.testing.assert_allclose(batched, alone, atol=1e-6)
    assert q["max_abs_batch_dependence"] < 1e-6  # what export measured says the same
    export_loaded(loaded, tmp_path / "f")  # the same run in fp32: near, not equal
    fp32 = Runtime.load(tmp_path / "f", device="cpu", threads=1).predict_proba(spans)
    assert 0 < np.abs(batched - fp32).max() < 0.05


def test_self_attention_is_exported(selfattn_run: Path, tmp_path: Path) -> None:
    run = load_run(selfattn_run)
    meta = export_loaded(run, tmp_path / "a")
    assert meta["parity"]["prediction_mismatches"] == 0
    rt = Runtime.load(tmp_path / "a", device="cpu", threads=1)
    assert rt.output_names == ["probs", "attention", "self_attention"]
    items = [rt.encode(e.text, e.start, e.end) for e in EXAMPLES[:2]]
    items.append(rt.encode("the food was great", 4, 8))
    feeds = collate(items, rt.pipeline.pad_id)
    with torch.no_grad():
        _, _, self_w = run.net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    for i, out in enumerate(rt.run(items)):
        n = len(items[i].ids)
        assert out.self_attention is not None and out.self_attention.shape == (2, n, n)
        np.testing.assert_allclose(out.self_attention, self_w[i, :, :n, :n].numpy(), atol=1e-5)
        np.testing.assert_allclose(out.self_attention.sum(-1), 1.0, atol=1e-5)


def test_self_attention_is_fetched_only_when_explained(selfattn_run: Path, tmp_path: Path) -> None:
    """Without explain the maps are not fetched; the probabilities do not change, and in a
    batch that mixes both only the explained answer carries them."""
    export_loaded(load_run(selfattn_run), tmp_path / "a")
    rt = Runtime.load(tmp_path / "a", device="cpu", threads=1)
    items = [rt.encode(e.text, e.start, e.end) for e in EXAMPLES[:4]]
    full, bare = rt.run(items), rt.run(items, self_attention=False)
    assert all(o.self_attention is None for o in bare)
    np.testing.assert_array_equal([o.probs for o in full], [o.probs for o in bare])
    p = Predictor(rt)
    e = EXAMPLES[0]
    asked = [p.preprocess(e.text, [e.term], explain=x) for x in (False, True)]
    plain, explained = p.predict_many(asked)
    assert plain[0].self_attention is None and plain[0].attention is None
    assert explained[0].self_attention is not None and len(explained[0].self_attention) == 2
    assert p(e.text, [e.term])[0].scores == plain[0].scores


def test_card_network_is_exported(card_run: Path, tmp_path: Path) -> None:
    """Learned position scales and the gated pre-LN self-attention survive the export."""
    run = load_run(card_run)
    net = run.net
    assert net.positions is not None and net.positions.scale_h is not None
    assert net.self_attn is not None and net.self_attn.gate is not None
    assert (
        float(net.self_attn.gate.detach().abs().max()) > 1e-3
    )  # trained: the gated path is in use
    assert abs(net.positions.scale_h.item() - 0.1) > 1e-4
    meta = export_loaded(run, tmp_path / "a")
    assert meta["parity"]["prediction_mismatches"] == 0
    rt = Runtime.load(tmp_path / "a", device="cpu", threads=1)
    items = [rt.encode(e.text, e.start, e.end) for e in EXAMPLES[:3]]
    items.append(rt.encode("the food was great", 4, 8))
    feeds = collate(items, rt.pipeline.pad_id)
    assert len({len(e.ids) for e in items}) > 1  # really padded
    probs, attn, self_w = rt.session.run(["probs", "attention", "self_attention"], feeds)
    with torch.no_grad():
        logits, alpha, sw = net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    t = rt.metadata["calibration"]["temperature"]
    np.testing.assert_allclose(probs, torch.softmax(logits / t, -1).numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(attn, alpha.numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(self_w, sw.numpy(), atol=1e-5, rtol=0)


# --------------------------------------------------------------------------- providers


CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"


@pytest.mark.parametrize(
    ("device", "available", "expected"),
    [
        ("auto", [CPU], [CPU]),
        ("auto", [CUDA, CPU], [CUDA, CPU]),
        ("AUTO", ["TensorrtExecutionProvider", CUDA, CPU], [CUDA, CPU]),
        ("cpu", [CPU], [CPU]),
        ("cpu", [CUDA, CPU], [CPU]),
        ("cuda", [CUDA, CPU], [CUDA, CPU]),
    ],
)
def test_choose_providers(device: str, available: list[str], expected: list[str]) -> None:
    assert choose_providers(device, available) == expected


def test_choose_providers_errors() -> None:
    with pytest.raises(ArtifactError, match="onnxruntime-gpu"):
        choose_providers("cuda", [CPU])
    with pytest.raises(ValueError, match="auto, cpu or cuda"):
        choose_providers("gpu", [CUDA, CPU])


def test_runtime_device(art: Path) -> None:
    """The device is an argument (the settings supply it where it comes from the
    environment): cpu runs on the CPU provider; cuda without CUDA is refused."""
    import onnxruntime as ort

    assert Runtime.load(art, device="cpu", threads=1).providers == [CPU]
    if CUDA not in ort.get_available_providers():
        with pytest.raises(ArtifactError):
            Runtime.load(art, device="cuda", threads=1)


# --------------------------------------------------------------------------- no torch


def test_runtime_never_imports_torch(art: Path) -> None:
    code = (
        "import sys\n"
        "from absa.model.runtime import Runtime\n"
        f"rt = Runtime.load({str(art)!r}, device='cpu', threads=1)\n"
        "p = rt.predict_proba([('the food was great', 4, 8)])\n"
        "assert p.shape == (1, 3), p.shape\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "assert not bad, bad\n"
        "print('ok', round(float(p.sum()), 4))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok 1.0"


def test_aspect_features_are_exported(
    tmp_path_factory: pytest.TempPathFactory, small_glove: Path, tmp_path: Path
) -> None:
    """The inside-the-aspect and proximity channels are computed in the graph: onnxruntime
    answers padded batches as torch does."""
    preset = tiny_preset("fast", small_glove, aspect_features=True)
    run_dir = tmp_path_factory.mktemp("runs") / "fast-aspect-features"
    fit(EXAMPLES, EXAMPLES, replace(preset, train=replace(preset.train, epochs=2)), run_dir,
        progress=False)  # fmt: skip
    run = load_run(run_dir)
    assert run.model_config.aspect_features
    meta = export_loaded(run, tmp_path / "a")
    assert meta["parity"]["prediction_mismatches"] == 0
    rt = Runtime.load(tmp_path / "a", device="cpu", threads=1)
    items = [rt.encode(e.text, e.start, e.end) for e in EXAMPLES[:4]]
    items.append(rt.encode("the food was great", 4, 8))
    items.append(rt.encode("great food but the service was so slow that we left", 6, 10))
    feeds = collate(items, rt.pipeline.pad_id)
    assert len({len(e.ids) for e in items}) > 1  # really padded
    probs, attn = rt.session.run(["probs", "attention"], feeds)
    with torch.no_grad():
        logits, alpha, _ = run.net(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    t = rt.metadata["calibration"]["temperature"]
    np.testing.assert_allclose(probs, torch.softmax(logits / t, -1).numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(attn, alpha.numpy(), atol=1e-5, rtol=0)


def test_a_temperature_without_a_best_fit_is_recorded_as_such() -> None:
    """Every dev prediction right: the NLL has no minimum and T is wherever the fit
    stopped (clipped to its bound), yet the metadata said "fitted" and the card "fitted on
    the dev split", the caveat only in the log."""
    import numpy as np

    from absa.model.card import calibration_lines
    from absa.model.export import _calibrate

    y = np.array([0, 1, 2] * 20)
    logits = np.eye(3)[y] * 4.0  # each one right, surely
    cal = _calibrate(logits, y)
    assert "no minimum" in cal["caveat"] and "every dev prediction is right" in cal["caveat"]
    card = "\n".join(calibration_lines({"calibration": cal}))
    assert cal["caveat"] in card
    mixed = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.5], [0.0, 0.2, 1.0]] * 10)
    assert "caveat" not in _calibrate(mixed, np.array([0, 1, 2, 1] * 10))
