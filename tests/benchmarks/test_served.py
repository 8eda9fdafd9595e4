"""benchmarks/served.py: a candidate artifact against the shipped one and issue #11's targets."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from benchmarks import served


def _with_scores(artifact: Path, out: Path, scores: dict[str, tuple[float, float]]) -> Path:
    """A copy of ``artifact`` with the eval.json that default_model.py writes beside it."""
    shutil.copytree(artifact, out)
    results = {
        k: {"accuracy": a / 100, "macro_f1": f / 100, "n": 100} for k, (a, f) in scores.items()
    }
    (out / "eval.json").write_text(json.dumps({"results": results, "commands": ["absa train x"]}))
    return out


def _dev(out: Path, acc: float, f1: float) -> None:
    dev = {"model": str(out), "dev": {"all": {"n": 50, "accuracy": acc, "macro_f1": f1}}}
    out.with_name(out.name + ".dev.json").write_text(json.dumps(dev))


SHIPPED = {
    "rest14": (83.0, 77.1),
    "lap14": (77.9, 72.4),
    "twitter": (74.0, 72.4),
    "mams": (81.5, 81.1),
}


def test_the_result_counts_targets_and_says_whether_it_is_ahead_everywhere(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    ref = _with_scores(artifact, tmp_path / "shipped", SHIPPED)
    better = {k: (a + 0.5, f + 0.7) for k, (a, f) in SHIPPED.items()}
    cand = _with_scores(artifact, tmp_path / "cand", better)
    _dev(cand, 77.5, 77.4)
    out = tmp_path / "results"
    args = ["--name", "c", "--as-served", "int8", "--against", str(ref), "--out", str(out)]
    assert served.main([str(cand), *args, "--against-dev", "77.0", "77.1"]) == 0
    result = json.loads((out / "c.json").read_text())
    assert result["targets_met"] == 8  # lap14 F1 73.1 now meets 73
    assert result["ahead_of"]["everywhere"] is True
    assert result["test"]["lap14"]["macro_f1"] == pytest.approx(0.731)
    assert result["dev"]["all"]["accuracy"] == 77.5
    assert "targets met 8 of 8" in caplog.text

    # level on dev: not ahead, however good the tests are
    assert served.main([str(cand), *args, "--against-dev", "77.5", "77.0"]) == 0
    assert json.loads((out / "c.json").read_text())["ahead_of"]["everywhere"] is False


def test_one_test_number_behind_is_not_ahead(artifact: Path, tmp_path: Path) -> None:
    ref = _with_scores(artifact, tmp_path / "shipped", SHIPPED)
    mixed = {**{k: (a + 1, f + 1) for k, (a, f) in SHIPPED.items()}, "twitter": (75.0, 71.9)}
    cand = _with_scores(artifact, tmp_path / "cand", mixed)
    _dev(cand, 80.0, 80.0)
    out = tmp_path / "results"
    served.main(
        [
            str(cand),
            "--name",
            "c",
            "--as-served",
            "x",
            "--against",
            str(ref),
            "--out",
            str(out),
            "--against-dev",
            "70",
            "70",
        ]
    )
    result = json.loads((out / "c.json").read_text())
    assert result["ahead_of"]["everywhere"] is False
    assert result["targets_met"] == 7  # all but Twitter's macro-F1 (71.9 < 72)


def test_a_missing_dev_file_is_named(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cand = _with_scores(artifact, tmp_path / "cand", SHIPPED)
    with pytest.raises(SystemExit) as exc:
        served.main([str(cand), "--name", "c", "--as-served", "x", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "cand.dev.json: missing" in capsys.readouterr().err


def test_the_reference_dev_is_the_served_graphs_where_export_recorded_it(
    artifact: Path, tmp_path: Path
) -> None:
    ref = _with_scores(artifact, tmp_path / "shipped", SHIPPED)
    meta = json.loads((ref / "metadata.json").read_text())
    run = meta["metrics"]["dev"]
    assert served.reference_dev(ref) == (100 * run["accuracy"], 100 * run["macro_f1"])
    quant = {"dev_accuracy_int8": 0.7811, "dev_macro_f1_int8": 0.7824}
    meta["quantization"] = {**(meta.get("quantization") or {}), **quant}
    (ref / "metadata.json").write_text(json.dumps(meta))
    assert served.reference_dev(ref) == pytest.approx((78.11, 78.24))
