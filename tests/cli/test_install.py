"""What a user sees from the CLI in an install that lacks something, or pointed at the
wrong directory: one line saying what to do, never a traceback (issue #13, item 15)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import synthetic_examples, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
# a serve-only install: `import torch` fails as it does where torch is not installed
NO_TORCH = "import sys; sys.modules['torch'] = None; from absa.cli import main; sys.exit(main())"


def absa(*argv: str, torch: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    code = "import sys; from absa.cli import main; sys.exit(main())" if torch else NO_TORCH
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    logged = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (INFO|WARNING) ")  # progress logs are fine
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not logged.match(line)]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("data") / "d.jsonl", synthetic_examples(6, seed=0))


def test_training_commands_without_torch_say_to_install_the_train_extra(
    tiny_run: Path, data: Path, tmp_path: Path
) -> None:
    retrain = tmp_path / "retrain.toml"
    retrain.write_text(
        f'registry = "{tmp_path / "registry"}"\npreset = "fast"\n'
        f'[data]\nbase = ["{data}"]\n[eval]\ntest = "{data}"\n'
    )
    commands = {
        "train": ["train", "--train", str(data), "--out", str(tmp_path / "run")],
        "export": ["export", "--run", str(tiny_run), "--out", str(tmp_path / "a")],
        "evaluate": ["evaluate", "--model", str(tiny_run), "--data", str(data)],
        "retrain": ["retrain", "--config", str(retrain)],
    }
    for name, argv in commands.items():
        line = one_line(absa(*argv, torch=False))
        assert line.startswith(f"absa {name}: error: "), line
        assert "pip install '.[train]' in absa's checkout" in line and "torch" in line, line
        assert "--extra-index-url https://download.pytorch.org/whl/cpu" in line, line


def test_serve_on_a_training_run_points_at_absa_export(tiny_run: Path) -> None:
    line = one_line(absa("serve", "--model", str(tiny_run), "--port", "1", timeout=30))
    assert line.startswith("absa serve: error: ") and "training run" in line, line
    assert f"absa export --run {tiny_run}" in line, line


def test_serve_on_a_directory_that_is_no_model_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    line = one_line(absa("serve", "--model", str(tmp_path), "--port", "1", timeout=30))
    assert "not a model artifact" in line and "absa export" in line, line
    line = one_line(absa("serve", "--model", str(tmp_path / "missing"), timeout=30))
    assert "no such model directory" in line, line
    line = one_line(absa("serve", "--registry", str(tmp_path / "typo"), timeout=30))
    assert line.startswith("absa serve: error: registry "), line  # not the fallback, quietly
    assert "is not a directory" in line, line
    line = one_line(absa("serve", "--registry", str(tmp_path), "--port", "1", timeout=30))
    assert "is not a model registry" in line and "notes.txt" in line, line


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_checks_what_would_stop_every_worker_first(
    artifact: Path, tmp_path: Path, workers: str
) -> None:
    """With two workers uvicorn ended with status 0 when they failed to start, with one it
    printed a page of traceback: an extractor that is no extractor, a model of the other
    task, CUDA on a machine without it, a host that is no address. Each is one line and
    status 2 before uvicorn."""
    import onnxruntime as ort

    common = ["serve", "--model", str(artifact), "--port", "1", "--workers", workers]
    line = one_line(absa(*common, "--extractor", str(artifact), timeout=30))
    assert line.startswith("absa serve: error: ABSA_EXTRACTOR / --extractor: "), line
    assert "is a sentiment model" in line and "an aspect extractor is needed" in line, line
    assert line.endswith("(give it as ABSA_MODEL_DIR, --model, absa.load(path))"), line
    line = one_line(absa(*common, "--extractor", "nope", timeout=30))  # named as the others
    assert line == "absa serve: error: ABSA_EXTRACTOR / --extractor: nope: no such model directory"
    graph = artifact / "model.onnx"  # the file given for its folder: said so, not "no such"
    line = one_line(absa("serve", "--model", str(graph), "--port", "1", timeout=30))
    assert line == (
        f"absa serve: error: {graph}: is a file; a model is the directory `absa export` writes"
    )
    shipped_category = ROOT / "model" / "artifacts" / "category"
    wrong_task = ["serve", "--model", str(shipped_category), "--port", "1", "--workers", workers]
    line = one_line(absa(*wrong_task, timeout=30))
    assert "is an aspect-category model" in line and "ABSA_CATEGORY_MODEL" in line, line
    line = one_line(absa(*common, "--category-model", str(artifact), timeout=30))
    assert "is an aspect-term model" in line, line
    line = one_line(absa(*common, "--host", "not..a..host", timeout=30))
    assert "--host 'not..a..host': not an address" in line, line
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        line = one_line(absa(*common, "--device", "cuda", timeout=30))
        assert "--device: device cuda asked for" in line, line


def test_predict_and_serve_still_work_without_torch(artifact: Path) -> None:
    """The serving commands need no torch: the one-line message is not for them."""
    proc = absa(
        "predict", "--model", str(artifact), "--text", "good food", "--aspect", "food", torch=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["term"] == "food"


def _scoring(
    tmp_path: Path, hangup: str, stderr: int = subprocess.PIPE, quiet: bool = True
) -> tuple[subprocess.Popen[bytes], Path]:
    """`absa predict --input` on a file long enough to be stopped while it writes, started
    with SIGHUP's action ``hangup`` ("SIG_DFL", or "SIG_IGN" as under nohup); returned once
    its .part exists."""
    import time

    src = tmp_path / "in.jsonl"
    row = json.dumps({"text": "the food was great but the service was slow", "aspect": "food"})
    src.write_text((row + "\n") * 200_000)
    out = tmp_path / "out.jsonl"
    code = (
        f"import signal, sys; signal.signal(signal.SIGHUP, signal.{hangup}); "
        "from absa.cli import main; sys.exit(main())"
    )
    argv = ["predict", "--input", str(src), "--output", str(out), *(["--quiet"] * quiet)]
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], cwd=ROOT, stderr=stderr)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("out.jsonl.*.part")):  # the run's own .part
        assert proc.poll() is None and time.monotonic() < deadline, "never started writing"
        time.sleep(0.05)
    return proc, out


@pytest.mark.parametrize(("signame", "status"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_stop_file_scoring_cleanly(
    tmp_path: Path, signame: str, status: int
) -> None:
    """A supervisor's SIGTERM, or a closed terminal's SIGHUP, killed `absa predict --input` on
    the spot, leaving OUT.part; it now unwinds as Ctrl-C does: 128 + the signal, no .part, no
    output."""
    import signal

    proc, out = _scoring(tmp_path, "SIG_DFL")
    proc.send_signal(getattr(signal, signame))
    proc.send_signal(getattr(signal, signame))  # a closed terminal sends SIGHUP twice
    assert proc.wait(timeout=60) == status
    assert not list(tmp_path.glob("*.part")) and not out.exists()


def test_a_hangup_with_the_progress_bar_on_the_gone_terminal_still_cleans_up(
    tmp_path: Path,
) -> None:
    """The progress bar draws on a terminal; once it is gone, each write fails (EIO): the
    unwinding after SIGHUP met that, and ended with another status."""
    import os
    import pty
    import signal

    master, terminal = pty.openpty()
    try:
        proc, out = _scoring(tmp_path, "SIG_DFL", stderr=terminal, quiet=False)
    finally:
        os.close(terminal)
    proc.send_signal(signal.SIGHUP)
    os.close(master)  # the terminal hangs up: writes to it fail from here on
    assert proc.wait(timeout=60) == 129
    assert not list(tmp_path.glob("*.part")) and not out.exists()


def test_under_nohup_a_hangup_does_not_stop_file_scoring(tmp_path: Path) -> None:
    """`nohup absa predict ...` sets SIGHUP ignored: it stays ignored, and the run goes on."""
    import signal
    import time

    proc, out = _scoring(tmp_path, "SIG_IGN")
    proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGTERM)  # no need to score 200,000 rows to the end
    assert proc.wait(timeout=60) == 143
    assert not list(tmp_path.glob("*.part")) and not out.exists()


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        (["--port", "99999"], {}, "--port: "),
        (["--workers", "0"], {}, "--workers: "),
        ([], {"ABSA_PORT": "99999"}, "ABSA_PORT: "),  # set in the environment: named so
    ],
)
def test_a_bad_setting_is_named_as_the_user_gave_it(
    argv: list[str], env: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`absa serve --port 99999` said "ABSA_PORT: ...", a variable the user never set."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    line = one_line(absa("serve", *argv, timeout=30))
    assert line.startswith(f"absa serve: error: {named}"), line


@pytest.mark.parametrize(
    ("name", "value"), [("ABSA_PORT", "abc"), ("ABSA_WORKERS", "0"), ("ABSA_CORS_ORIGINS", "x")]
)
def test_a_bad_server_setting_fails_absa_serve_only(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ABSA_PORT=abc failed `absa predict` ("absa predict: error: ABSA_PORT: ..."), a command
    that starts no server: it reads the settings it uses, and absa serve still refuses the
    value, naming the variable."""
    monkeypatch.setenv(name, value)
    done = absa("predict", "--text", "the food was great", "--aspect", "food", timeout=120)
    assert done.returncode == 0, done.stderr
    assert [r["term"] for r in json.loads(done.stdout)["results"]] == ["food"]
    line = one_line(absa("serve", timeout=30))
    assert line.startswith(f"absa serve: error: {name}: "), line


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_line_before_the_model_loads(workers: str) -> None:
    """It came after the model had loaded: nine lines with one worker, and with two an
    "[Errno 98] Address already in use" that named no address."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = absa("serve", "--port", str(port), "--workers", workers, timeout=30)
    line = one_line(done)
    assert line.startswith(f"absa serve: error: cannot listen on 127.0.0.1:{port} ("), line
    assert "loaded" not in done.stderr  # refused before any model was opened


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["predict", "--text", "  ", "--aspect", "food"], "--text is empty"),
        (
            ["retrain", "--config", "/nonexistent/retrain.toml"],
            "--config /nonexistent/retrain.toml: no such file",
        ),
    ],
)
def test_empty_text_and_missing_config_are_named(argv: list[str], words: str) -> None:
    line = one_line(absa(*argv, timeout=30))
    assert line.startswith(f"absa {argv[0]}: error: {words}"), line


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--input", "{src}"], "--input needs --output"),
        ([], "give --text (with --aspect, or extracted), or --input and --output"),
        (["--input", "{tmp}/gone.jsonl", "--output", "{tmp}/o.jsonl"], "{tmp}/gone.jsonl: no"),
        (["--input", "{src}", "--output", "{tmp}/o.txt"], "{tmp}/o.txt: use a .jsonl, .csv"),
        (["--input", "{tmp}/in.txt", "--output", "{tmp}/o.jsonl"], "{tmp}/in.txt: use a .jsonl"),
        (["--input", "{src}", "--output", "{tmp}/no/o.jsonl"], "{tmp}/no/o.jsonl: no such dir"),
    ],
)
def test_predict_says_what_is_wrong_before_the_model_loads(
    tmp_path: Path, argv: list[str], words: str
) -> None:
    """These came after the shipped model had loaded (a second's wait, and a log line
    about a model that was never going to be used)."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "good food", "aspect": "food"}\n')
    (tmp_path / "in.txt").write_text("good food\n")
    fill = {"src": str(src), "tmp": str(tmp_path)}
    done = absa("predict", *(a.format(**fill) for a in argv), timeout=30)
    line = one_line(done)
    assert line.startswith(f"absa predict: error: {words.format(**fill)}"), line
    assert "loaded" not in done.stderr
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o.txt").exists()


def test_python_started_in_the_checkout_finds_the_mapped_packages() -> None:
    """After `pip install ".[serve]"` (not editable), Python started in the repository's
    root imports ``absa`` from the checkout, where model/, training/ and service/ are beside
    it, not in it: `from absa import load; load()` failed with "No module named
    'absa.model'". Here without site-packages (-S), so no install maps them."""
    code = "import absa.model, absa.training, absa.service; print(absa.model.__file__)"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "model" / "__init__.py"
