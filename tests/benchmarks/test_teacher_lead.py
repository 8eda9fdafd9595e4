"""benchmarks/teacher_lead.py: the chain's choice between the main teacher's students and
those of the teachers' mean, made on dev alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.teacher_lead import choose, leads, main


def _result(first: tuple[float, float], mean: tuple[float, float]) -> dict:
    def s(v: tuple[float, float]) -> dict:
        return {"accuracy": v[0], "macro_f1": v[1]}

    # the test sets are deliberately far ahead: the choice must not read them
    test = {"members": [s((50.0, 50.0))], "mean": s((90.0, 90.0))}
    return {
        "dev": {"members": [s(first), s((70.0, 70.0))], "mean": s(mean)},
        "test": {"lap14": test},
    }


@pytest.mark.parametrize(
    ("mean", "picked"),
    [
        ((81.0, 81.5), "3f"),  # +0.5 / +1.0: both leads reach the least
        ((81.4, 80.8), ""),  # macro-F1 only +0.3
        ((80.2, 81.9), ""),  # accuracy behind
        ((80.5, 80.5), ""),  # level
    ],
)
def test_the_mean_is_taken_only_when_it_leads_on_both(
    mean: tuple[float, float], picked: str
) -> None:
    got = _result((80.5, 80.5), mean)
    assert choose(got, "3f", 0.5) == picked
    assert leads(got)["accuracy"] == pytest.approx(mean[0] - 80.5)


def test_a_file_without_dev_scores_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """An ensemble of artifacts (no --runs) has no dev: exit 2 and no choice printed, so the
    chain (set -e) stops rather than guess."""
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"artifacts": ["a", "b"], "test": {}}))
    assert main([str(path)]) == 2
    assert capsys.readouterr().out == ""
    assert main([str(tmp_path / "missing.json")]) == 2


def test_it_prints_the_variant_or_an_empty_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "e.json"
    path.write_text(json.dumps(_result((80.0, 80.0), (80.7, 80.6))))
    assert main([str(path), "--variant", "3f"]) == 0
    assert capsys.readouterr().out == "3f\n"
    assert main([str(path), "--min", "0.7"]) == 0
    assert capsys.readouterr().out == "\n"
