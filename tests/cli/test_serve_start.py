"""`absa serve` refuses, in one line and with exit status 2, what would stop its workers or
make no sense, before uvicorn starts. Each test holds the port it names: a check that is
missing ends at the port check (a different line), never in a running server."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from absa.cli import main


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _serve(capsys: pytest.CaptureFixture[str], artifact: Path, port: int, *argv: str) -> str:
    """``absa serve`` on ``artifact``: its exit status must be 2; returns its one line."""
    code = main(["serve", "--model", str(artifact), "--port", str(port), *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_the_port_check_is_what_the_others_end_at(
    artifact: Path, busy_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "cannot listen on" in _serve(capsys, artifact, busy_port)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("name", ["PROMETHEUS_MULTIPROC_DIR", "ABSA_RUN_DIR"])
def test_a_shared_directory_that_is_not_one_is_refused(
    name: str,
    workers: str,
    artifact: Path,
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A PROMETHEUS_MULTIPROC_DIR that did not exist passed the checks: with --workers 2
    every worker died at start-up in a traceback (FileNotFoundError: .../histogram_PID.db)
    and uvicorn started another, for ever; with one, a line naming a .db file. A missing
    ABSA_RUN_DIR failed only at the first /admin/reload, after that worker had swapped."""
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for where in (tmp_path / "missing", a_file):
        monkeypatch.setenv(name, str(where))
        err = _serve(capsys, artifact, busy_port, "--workers", workers)
        assert err.startswith(f"absa serve: error: {name} {where}: not a directory"), err


def test_a_shared_directory_that_exists_is_taken(
    artifact: Path,
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setenv("ABSA_RUN_DIR", str(tmp_path))
    assert "cannot listen on" in _serve(capsys, artifact, busy_port, "--workers", "2")


@pytest.mark.parametrize(
    "name", ["ABSA_MAX_WAIT_MS", "ABSA_SHED_DELAY_S", "ABSA_RELOAD_INTERVAL_S"]
)
def test_an_endless_duration_is_refused(
    name: str,
    artifact: Path,
    busy_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ABSA_MAX_WAIT_MS=inf (or 1e400) was taken: a batch then waits for ever to fill, and
    a request of fewer aspects than a batch is never answered; ABSA_SHED_DELAY_S=inf held
    every refused request's connection for ever."""
    for value in ("inf", "1e400"):
        monkeypatch.setenv(name, value)
        err = _serve(capsys, artifact, busy_port)
        assert err.startswith(f"absa serve: error: {name}: input should be a finite number"), err


def test_an_endless_wait_given_as_a_flag_is_named_as_the_flag(
    artifact: Path, busy_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _serve(capsys, artifact, busy_port, "--max-wait-ms", "inf")
    assert err.startswith("absa serve: error: --max-wait-ms: input should be a finite number"), err


@pytest.mark.parametrize("token", [" padded", "padded ", "pass\u00e9", "ctl\x01"])
def test_an_admin_token_no_header_can_carry_is_refused_unshown(
    token: str,
    artifact: Path,
    busy_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """/admin/* was on, and no request could ever pass: the token a request sends is read
    stripped, as bytes read as Latin-1 (a header takes no control character), so a token
    with an outer space, a non-ASCII or a control character never matched. Refused in one
    line, never echoed (a space or a tab inside a token is carried, and stays allowed)."""
    monkeypatch.setenv("ABSA_ADMIN_TOKEN", token)
    err = _serve(capsys, artifact, busy_port)
    assert err.startswith("absa serve: error: ABSA_ADMIN_TOKEN: "), err
    assert token.strip() not in err


def test_a_category_model_that_is_a_term_model_is_refused(
    artifact: Path, category_artifact: Path, busy_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _serve(capsys, artifact, busy_port, "--category-model", str(artifact))
    assert "cannot listen" not in err, err
    err = _serve(capsys, category_artifact, busy_port)
    assert "cannot listen" not in err, err


def test_an_admin_token_with_a_space_inside_is_taken(
    artifact: Path,
    busy_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ABSA_ADMIN_TOKEN", "two words")
    assert "cannot listen on" in _serve(capsys, artifact, busy_port)


@pytest.mark.parametrize(
    ("key", "value"),
    [("model_config", []), ("calibration", "1.3"), ("categories", {}), ("labels", [1, 2, 3])],
)
def test_metadata_the_runtime_cannot_read_is_refused_in_one_line(
    artifact: Path,
    busy_port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: object,
) -> None:
    """No checksum covers metadata.json: a ``model_config`` that is a list passed the check
    before the server, and every worker ended in a traceback ('list' object has no
    attribute 'get')."""
    import json
    import shutil

    copy = shutil.copytree(artifact, tmp_path / "a")
    meta = json.loads((copy / "metadata.json").read_text())
    meta[key] = value
    (copy / "metadata.json").write_text(json.dumps(meta))
    err = _serve(capsys, copy, busy_port)
    assert f"{copy / 'metadata.json'}:" in err and "cannot listen" not in err, err


def test_an_answer_sample_that_cannot_be_written_is_refused(
    artifact: Path,
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ABSA_SAMPLE_PATH in a directory that is not there, or that is a directory itself, or
    a device."""
    for where, why in (
        (tmp_path / "missing" / "s.jsonl", "no such directory"),
        (tmp_path, "a directory"),
        (Path("/dev/null"), "not a regular file"),
    ):
        monkeypatch.setenv("ABSA_SAMPLE_PATH", str(where))
        err = _serve(capsys, artifact, busy_port)
        assert err.startswith(f"absa serve: error: ABSA_SAMPLE_PATH {where}: "), err
        assert why in err, err
    monkeypatch.setenv("ABSA_SAMPLE_PATH", str(tmp_path / "s.jsonl"))
    assert "cannot listen on" in _serve(capsys, artifact, busy_port)
    assert not (tmp_path / "s.jsonl").exists()  # checked, not made, before the server starts


def test_a_training_run_given_to_serve_is_one_line_saying_to_export_it(
    tiny_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--model", str(tiny_run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"absa serve: error: {tiny_run} is a training run"), err
    assert f"`absa export --run {tiny_run} --out ARTIFACT_DIR`" in err and err.count("\n") == 1


def test_a_graph_onnxruntime_cannot_open_is_refused_in_one_line(
    artifact: Path, busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model.onnx cut short whose sha256 was recorded again passed the check before the
    server: 45 lines of uvicorn's startup traceback (InvalidProtobuf) and exit 3."""
    import json
    import shutil

    from absa.model import artifact as artifacts

    copy = shutil.copytree(artifact, tmp_path / "a")
    onnx = copy / "model.onnx"
    onnx.write_bytes(onnx.read_bytes()[: onnx.stat().st_size // 2])
    meta = json.loads((copy / "metadata.json").read_text())
    artifacts.record_files(meta, copy)
    artifacts.record_onnx(meta, copy)
    (copy / "metadata.json").write_text(json.dumps(meta))
    err = _serve(capsys, copy, busy_port)
    assert "onnxruntime cannot open" in err and str(onnx) in err, err


def test_a_foreign_db_file_in_the_multiprocess_directory_is_refused(
    artifact: Path,
    busy_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A file in PROMETHEUS_MULTIPROC_DIR that is not prometheus_client's but ends in .db
    (a database of the operator's: the directory was shared) was left there as the
    directory was emptied, and every scrape of /metrics, which reads every *.db there,
    answered 500. absa serve refuses to start, naming it; a file of another suffix stays."""
    (tmp_path / "notes.db.txt").write_text("the operator's")
    (tmp_path / "counter_123.db").write_bytes(b"")  # prometheus_client's: emptied at start
    (tmp_path / "cache.db").write_bytes(b"SQLite format 3\0")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    err = _serve(capsys, artifact, busy_port)
    assert err.startswith(
        f"absa serve: error: PROMETHEUS_MULTIPROC_DIR {tmp_path}: cache.db is not "
        "prometheus_client's"
    ), err
    assert (tmp_path / "cache.db").exists()  # the operator's file is left alone
    (tmp_path / "cache.db").unlink()
    assert "cannot listen on" in _serve(capsys, artifact, busy_port)


def test_a_shadow_model_that_cannot_be_one_is_warned_of_in_one_line(
    artifact: Path, category_artifact: Path, busy_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """ABSA_SHADOW_MODEL / --shadow-model is checked as the model is: a path that is none,
    or a category model, is one warning line (a challenger only: the service starts without
    it, as far as the port here); a share over 1 is refused."""
    for shadow, why in (
        ("nope", "nope: no such model directory"),
        (str(category_artifact), "aspect-category model"),
    ):
        code = main(["serve", "--model", str(artifact), "--port", str(busy_port),
                     "--shadow-model", shadow])  # fmt: skip
        warning, refusal = capsys.readouterr().err.splitlines()
        assert code == 2 and "cannot listen on" in refusal, refusal
        assert warning.startswith("absa serve: warning: ABSA_SHADOW_MODEL / --shadow-model: ")
        assert why in warning and warning.endswith("; the service starts without a shadow")
    err = _serve(capsys, artifact, busy_port, "--shadow-model", str(artifact), "--shadow-rate", "2")
    assert err == (
        "absa serve: error: --shadow-rate: input should be less than or equal to 1, not 2.0\n"
    )
    err = _serve(capsys, artifact, busy_port, "--shadow-model", str(artifact))
    assert "cannot listen on" in err, err  # a term model: taken, as far as the port


def test_a_held_shadow_needs_a_registry_to_follow(
    artifact: Path, busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--shadow-model held`` follows a registry's held versions: without a registry it can
    never be one, a mistake refused at once; with one that holds none yet (an empty volume
    here), it is no warning: the next version a job holds is scored."""
    err = _serve(capsys, artifact, busy_port, "--shadow-model", "held")
    assert err == (
        "absa serve: error: ABSA_SHADOW_MODEL / --shadow-model held follows a registry's held "
        "versions: serve a registry (ABSA_REGISTRY / --registry), or name the shadow's "
        "directory\n"
    )
    (tmp_path / "registry").mkdir()
    code = main(["serve", "--registry", str(tmp_path / "registry"), "--port", str(busy_port),
                 "--shadow-model", "HELD"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "warning" not in err and "cannot listen on" in err, err


def test_a_held_shadow_that_cannot_be_loaded_is_warned_of_in_one_line(
    artifact: Path, busy_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``held`` names the registry's newest held version: one whose graph is damaged is
    checked as a named one is, a warning line, and the service starts without it."""
    from absa.model import artifact as artifacts
    from absa.model.registry import Registry

    reg = Registry(tmp_path / "registry").init()
    reg.add(shutil.copytree(artifact, tmp_path / "staging" / "v1"), "v1")
    reg.promote("v1")
    held = shutil.copytree(artifact, tmp_path / "staging" / "v2")
    meta = artifacts.read_metadata(held)
    meta.update(version="v2", created="2099-01-01T00:00:00+00:00", held=True, gate={"passed": True})
    artifacts.write_metadata(held, meta)
    reg.add(held, "v2")
    (reg.path("v2") / "model.onnx").write_bytes(b"not a graph")
    code = main(["serve", "--registry", str(reg.root), "--port", str(busy_port),
                 "--shadow-model", "held"])  # fmt: skip
    warning, refusal = capsys.readouterr().err.splitlines()
    assert code == 2 and "cannot listen on" in refusal, refusal
    assert warning.startswith("absa serve: warning: ABSA_SHADOW_MODEL / --shadow-model: ")
    assert "model.onnx" in warning and warning.endswith(
        "; the service starts without a shadow (it follows the registry: a version held later "
        "is scored)"
    )
