"""The app factory under plain uvicorn (as a supervisor or `uvicorn
absa.service.app:create_app --factory` starts it): a worker that cannot start says why in
one line on stderr, no traceback, with uvicorn's start-up failure status; a variable that is
no setting is warned of."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_FAILURE = 3  # uvicorn's exit status when the app's start-up failed


def start(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Plain uvicorn on the app factory, with ``env`` over this environment."""
    argv = [sys.executable, "-m", "uvicorn", "--factory", "absa.service.app:create_app"]
    return subprocess.run(
        [*argv, "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        env={**os.environ, "ABSA_DEVICE": "cpu", "ABSA_THREADS": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_model_dir_that_is_not_an_artifact_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-model"
    bad.mkdir()
    (bad / "metadata.json").write_text(json.dumps({"kind": "something else"}))
    done = start(tmp_path, ABSA_MODEL_DIR=str(bad))
    assert done.returncode == STARTUP_FAILURE, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "cannot start" in line]
    assert lines == [
        f"ERROR:    cannot start: {bad}/metadata.json: kind 'something else' is not 'absa-artifact'"
    ], done.stderr


@pytest.mark.parametrize("which", ["term", "category"])
def test_a_missing_model_is_one_line_whichever_model_it_is(
    which: str, artifact: Path, tmp_path: Path
) -> None:
    """The category model loads before anything starts, as the term model does."""
    gone = tmp_path / "gone"
    env = {"ABSA_MODEL_DIR": str(gone)}
    if which == "category":
        env = {"ABSA_MODEL_DIR": str(artifact), "ABSA_CATEGORY_MODEL": str(gone)}
    done = start(tmp_path, **env)
    assert done.returncode == STARTUP_FAILURE, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    refused = [line for line in done.stderr.splitlines() if "cannot start" in line]
    assert len(refused) == 1 and str(gone) in refused[0], done.stderr


def test_a_variable_that_is_no_setting_is_warned_of_under_plain_uvicorn(
    artifact: Path, tmp_path: Path
) -> None:
    """`absa serve` warned of ABSA_MODLE_DIR (ignored: the shipped model served); the app
    factory under plain uvicorn said nothing."""
    done = start(tmp_path, ABSA_MODEL_DIR=str(tmp_path / "gone"), ABSA_MODLE_DIR=str(artifact))
    assert "ABSA_MODLE_DIR is not a setting (ignored): did you mean ABSA_MODEL_DIR?" in (
        done.stderr
    ), done.stderr
