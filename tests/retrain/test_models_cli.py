"""``absa models`` refuses instead of guessing: a registry path that does not exist, a
pointer that is not valid, a version that fails verification (one line, exit 2, nothing
changed, nothing created)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.cli import main
from absa.model.registry import POINTER
from tests.helpers import staging_in
from tests.retrain.conftest import LockHolder
from tests.retrain.test_registry import corrupt, make_registry


@pytest.mark.parametrize("action", [["list"], ["rollback"], ["promote", "v1"], ["show", "v1"]])
def test_a_mistyped_registry_is_an_error_not_created(
    tmp_path: Path, action: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "regsitry"
    assert main(["models", *action, "--registry", str(typo)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not typo.exists()


@pytest.mark.parametrize("pointer", ["[1, 2]", '{"version": "../../etc"}', '{"vers'])
def test_a_bad_pointer_is_named_and_mended_from_the_cli(
    tmp_path: Path, pointer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """list, show and promote all failed on an unreadable pointer, so the operator could
    neither see the versions nor re-point the registry: list warns and lists, show shows,
    promote writes a good pointer (Registry.promote mends it); rollback, which cannot,
    says how (it said only what was wrong)."""
    reg = make_registry(tmp_path, 2)
    (reg.root / POINTER).write_text(pointer)
    at = ["--registry", str(reg.root)]
    assert main(["models", "list", *at]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("absa models: warning:") and POINTER in err and "Traceback" not in err
    assert err.rstrip().endswith("promote a version to mend it"), err
    assert main(["models", "rollback", *at]) == 2
    err = capsys.readouterr().err
    assert err.startswith("absa models: error:") and POINTER in err, err
    assert err.rstrip().endswith("promote a version to mend it"), err
    assert [line.split()[0] for line in out.splitlines()] == ["v1", "v2"]  # none marked
    assert main(["models", "show", "v2", *at]) == 0
    assert json.loads(capsys.readouterr().out)["version"]
    assert main(["models", "promote", "v2", *at]) == 0
    assert capsys.readouterr().out == "current: v2\n" and reg.current() == "v2"
    assert main(["models", "list", *at]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("* v2")


@pytest.mark.parametrize("action", ["list", "rollback"])
def test_a_version_given_where_none_is_taken_is_refused(
    tmp_path: Path, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    reg.promote("v2")
    with pytest.raises(SystemExit) as ex:  # argparse's own refusal, before any command runs
        main(["models", action, "v1", "--registry", str(reg.root)])
    assert ex.value.code == 2
    assert "unrecognized arguments: v1" in capsys.readouterr().err
    assert reg.current() == "v2"


@pytest.mark.parametrize("action", ["show", "promote"])
def test_a_version_missing_where_one_is_needed_is_refused(
    tmp_path: Path, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reg = make_registry(tmp_path, 1)
    with pytest.raises(SystemExit) as ex:
        main(["models", action, "--registry", str(reg.root)])
    assert ex.value.code == 2
    assert "the following arguments are required: VERSION" in capsys.readouterr().err
    assert reg.current() is None


def test_rollback_to_a_version_that_fails_verification_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    reg.promote("v2")
    corrupt(reg, "v1")
    before = (reg.root / POINTER).read_text()
    assert main(["models", "rollback", "--registry", str(reg.root)]) == 2
    assert "fails verification" in capsys.readouterr().err
    assert (reg.root / POINTER).read_text() == before
    assert main(["models", "promote", "v1", "--registry", str(reg.root)]) == 2
    assert json.loads((reg.root / POINTER).read_text())["version"] == "v2"


def test_list_shows_a_version_whose_record_is_odd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """created null, a score that is not a number: the listing says "?" where it has no
    number, instead of a traceback (it only reads the metadata; no checksum covers it)."""
    reg = make_registry(tmp_path, 2)
    meta_path = reg.root / "versions" / "v1" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta.update(created=None, eval={"a": {"accuracy": "high", "macro_f1": 0.5}, "b": 3})
    meta_path.write_text(json.dumps(meta))
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    out = capsys.readouterr().out
    assert "a=?/50.00 b=?/?" in out and "v2" in out


def test_a_version_whose_vocabulary_has_the_wrong_shape_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vocabulary that is not a list, its checksum recorded (a file another tool wrote):
    ``promote`` ended in a traceback (a TypeError from the pipeline, where the artifact's
    checks took only OSError, ValueError and KeyError for a bad pipeline)."""
    from absa.model import artifact as artifacts

    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    where = reg.path("v2")
    (where / "vocab.json").write_text('{"the": 2}')
    meta = artifacts.read_metadata(where)
    artifacts.record_checksums(meta, where)
    artifacts.write_metadata(where, meta)
    before = (reg.root / POINTER).read_text()
    assert main(["models", "promote", "v2", "--registry", str(reg.root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("absa models: error: version 'v2' fails verification: "), err
    assert str(where) in err and "text pipeline" in err and len(err.splitlines()) == 1
    assert (reg.root / POINTER).read_text() == before


def test_list_says_which_versions_cannot_serve_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A version with a file changed or gone was listed as a good one: only metadata that
    would not parse was marked. Each is listed with what promote would refuse it for."""
    reg = make_registry(tmp_path, 3)
    corrupt(reg, "v1")
    (reg.path("v2") / "model.onnx").unlink()
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "cannot serve: " in lines["v1"] and "vocab.json: sha256" in lines["v1"]
    assert f"cannot serve: {reg.path('v2') / 'model.onnx'}: missing" in lines["v2"]
    assert "cannot serve" not in lines["v3"] and "2024-01-03" in lines["v3"]


def test_list_names_a_version_directory_without_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory in versions/ without metadata.json (a copy in progress, or one cut short)
    was left out of the listing without a word: the operator never learnt of it (nor that
    prune never removes it). It is listed as incomplete, and warned of."""
    reg = make_registry(tmp_path, 2)
    half = reg.versions_dir / "v3"
    half.mkdir()
    (half / "model.onnx").write_bytes(b"half a graph")
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    got = capsys.readouterr()
    assert got.out.splitlines()[-1] == (
        f"  {'v3':<22} incomplete: no metadata.json (a copy in progress, or one cut short)"
    ), got.out
    assert [line.split()[0] for line in got.out.splitlines()] == ["v1", "v2", "v3"]
    assert got.err == (
        f"absa models: warning: {half} has no metadata.json (a copy in progress, or one cut "
        "short): not a version, and prune leaves it; finish it, or remove it\n"
    ), got.err


def test_a_symbolic_link_in_versions_is_no_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link in versions/ to a folder outside the registry was listed and promoted as a
    version: what served then hung on a folder anyone could change or remove. It is listed
    as a link and warned of; promote refuses it, and so does the rest (a link to the
    registry's own versions/ was listed as incomplete)."""
    outside = make_registry(tmp_path / "other", 1).path("v1")
    reg = make_registry(tmp_path / "reg", 1)
    reg.promote("v1")
    (reg.versions_dir / "ext").symlink_to(outside, target_is_directory=True)
    (reg.versions_dir / "self").symlink_to(".", target_is_directory=True)
    assert reg.versions() == ["v1"] and reg.incomplete() == [] and reg.links() == ["ext", "self"]
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    got = capsys.readouterr()
    assert got.out.splitlines()[1:] == [
        f"  {'ext':<22} a symbolic link: not a version",
        f"  {'self':<22} a symbolic link: not a version",
    ], got.out
    assert f"{reg.versions_dir / 'ext'} is a symbolic link, not a version" in got.err
    assert main(["models", "promote", "ext", "--registry", str(reg.root)]) == 2
    assert "is a symbolic link, not a version" in capsys.readouterr().err
    assert reg.current() == "v1"


def test_promote_says_it_waits_for_the_lock_another_process_holds(
    tmp_path: Path, hold_lock: LockHolder
) -> None:
    """A promote while another process held the registry's lock (a retraining job adding its
    version) waited without a word: an operator took it for hung. It says once that it
    waits, and for which lock file, and goes on when the lock is free."""
    import subprocess
    import sys
    import time

    reg = make_registry(tmp_path, 2)
    holder = hold_lock(reg.root)
    log = tmp_path / "promote.log"
    with log.open("w") as err:
        promote = subprocess.Popen(
            [sys.executable, "-m", "absa.cli", "models", "promote", "v2", "--registry",
             str(reg.root)], stdout=subprocess.PIPE, stderr=err, text=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "waiting" not in log.read_text() and promote.poll() is None:
            assert time.monotonic() < deadline, f"nothing said in 60 s: {log.read_text()!r}"
            time.sleep(0.05)
        assert promote.poll() is None, log.read_text()  # still waiting for the lock
        assert reg.current() is None
    finally:
        holder.communicate("", timeout=10)  # the lock released
    out, _ = promote.communicate(timeout=60)
    assert promote.returncode == 0 and out == "current: v2\n", log.read_text()
    said = [line for line in log.read_text().splitlines() if "waiting" in line]
    assert len(said) == 1 and said[0].endswith(
        f"INFO absa.model.registry: waiting for the lock held at {reg.root / '.lock'} "
        "(another process is changing the registry)"
    ), said
    assert reg.current() == "v2"


def test_list_leaves_out_a_killed_exports_directory_in_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A killed export into versions/ that had written metadata.json was listed as version
    '.export-xxxx', "unreadable": no name a version can have is ever listed."""
    import signal

    reg = make_registry(tmp_path, 2)
    meta = {"metadata.json": (reg.versions_dir / "v1" / "metadata.json").read_bytes()}
    killed, stale = staging_in(reg.versions_dir, "v3", meta)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert (stale / "metadata.json").is_file()
    assert main(["models", "list", "--registry", str(reg.root)]) == 0
    got = capsys.readouterr()
    assert [line.split()[0] for line in got.out.splitlines()] == ["v1", "v2"], got.out
    assert got.err == "", got.err


def test_predict_and_evaluate_take_a_registry_as_absa_load_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`absa predict --model REGISTRY` was refused ("not a model artifact") where
    absa.load(REGISTRY) serves its current version; serve names the flag that follows it."""
    reg = make_registry(tmp_path, 2)
    reg.promote("v1")
    argv = ["--model", str(reg.root)]
    assert main(["predict", *argv, "--text", "The food was great", "--aspect", "food"]) == 0
    assert json.loads(capsys.readouterr().out)["model"].endswith(":v1")
    data = tmp_path / "e.csv"
    data.write_text("text,aspect,label\nThe food was great,food,positive\n")
    assert main(["evaluate", *argv, "--data", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_identity"]["version"] == "v1"
    assert main(["serve", *argv, "--port", "1"]) == 2
    assert capsys.readouterr().err == (
        f"absa serve: error: {reg.root}: a model registry; serve it with --registry "
        "(ABSA_REGISTRY)\n"
    )


def test_rehash_mends_a_version_exported_before_file_checksums(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A registry of absa 1.2 or older could not be served, promoted or retrained on by a
    newer absa ("records no per-file checksums ... re-export it"), and a registry keeps no
    run to export again. rehash records its files as they are, where its graph still
    matches the sha256 its export recorded."""
    reg = make_registry(tmp_path, 2)
    for v in ("v1", "v2"):
        meta_path = reg.path(v) / "metadata.json"
        meta = json.loads(meta_path.read_text())
        del meta["files"]  # as absa 1.2 exported it
        meta_path.write_text(json.dumps(meta))
    (reg.path("v2") / "model.onnx").write_bytes(b"changed since")
    at = ["--registry", str(reg.root)]
    assert main(["models", "promote", "v1", *at]) == 2
    assert "absa models rehash VERSION" in capsys.readouterr().err
    assert main(["models", "rehash", "v1", *at]) == 0
    n = len(json.loads((reg.path("v1") / "metadata.json").read_text())["files"])
    assert capsys.readouterr().out == f"v1: recorded the sha256 of {n} files\n" and n >= 3
    assert main(["models", "promote", "v1", *at]) == 0 and reg.current() == "v1"
    assert main(["models", "rehash", "v1", *at]) == 2  # once is enough
    assert "records its files' sha256 already" in capsys.readouterr().err
    assert main(["models", "rehash", "v2", *at]) == 2
    assert "its graph's sha256 is not the one its export recorded" in capsys.readouterr().err
    assert "files" not in json.loads((reg.path("v2") / "metadata.json").read_text())


def test_models_list_marks_the_challenger_and_the_held_versions_passed_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Of the held versions, only the newest is the challenger (the one held follows, and
    prune spares): an older one is marked as passed, and so is one a newer version served
    after."""
    from tests.retrain.test_registry import held_artifact

    reg = make_registry(tmp_path, 1)
    reg.promote("v1")
    for i in (2, 3):
        reg.add(held_artifact(tmp_path, f"v{i}", f"2024-01-0{i}T00:00:00+00:00"), f"v{i}")

    def listed() -> dict[str, str]:
        assert main(["models", "--registry", str(reg.root), "list"]) == 0
        return {line[2:].split()[0]: line for line in capsys.readouterr().out.splitlines()}

    lines = listed()
    assert lines["v3"].endswith("  held: a challenger its job did not promote (promote = false)")
    assert lines["v2"].endswith("  held, passed by a newer held or served version")
    assert "held" not in lines["v1"]
    reg.add(held_artifact(tmp_path, "v4", "2024-01-04T00:00:00+00:00"), "v4")
    reg.promote("v4")
    lines = listed()
    assert "held" not in lines["v4"]  # it serves
    assert all(lines[v].endswith("passed by a newer held or served version") for v in ("v2", "v3"))
