"""The retraining job does not promote blindly and finishes what a killed run left:
before any champion the gate compares with the model being served, training data missing a
label is refused, and a run killed after adding or after promoting its version is repaired
by the next run (report written, promotion finished, pointer temporaries removed)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from absa.model.registry import POINTER, Registry
from absa.training import retrain as job
from absa.training.records import DataError
from absa.training.retrain import RetrainConfig, retrain
from absa.training.retrain_config import Gate
from tests.helpers import write_jsonl
from tests.retrain.conftest import EXAMPLES, FIRST_VERSION, ConfigWriter, Killed

ROTATE = {"negative": "neutral", "neutral": "positive", "positive": "negative"}


def test_one_class_training_data_is_refused(make_config: ConfigWriter, tmp_path: Path) -> None:
    positives = write_jsonl(tmp_path / "pos.jsonl", [e for e in EXAMPLES if e.label == "positive"])
    cfg = RetrainConfig.load(
        make_config(tmp_path / "r.toml", tmp_path / "registry", base=[positives])
    )
    with pytest.raises(DataError, match="no 'negative', 'neutral' examples"):
        retrain(cfg, version="v1")
    assert Registry(tmp_path / "registry").versions() == []
    assert Registry(tmp_path / "registry").current() is None


def test_first_model_worse_than_the_served_one_is_not_promoted(
    make_config: ConfigWriter, tmp_path: Path
) -> None:
    """No champion yet: the challenger still has to match the shipped model it replaces."""
    wrong = [dataclasses.replace(e, label=ROTATE[e.label]) for e in EXAMPLES]  # all 3 labels
    data = write_jsonl(tmp_path / "wrong.jsonl", wrong)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", tmp_path / "registry", base=[data]))
    report = retrain(cfg, version="v1")
    assert report["champion"] is None
    assert report["promoted"] is False, report["gate"]
    assert any("< the served model" in r for r in report["gate"]["reasons"])
    reg = Registry(tmp_path / "registry")
    assert reg.versions() == ["v1"] and reg.current() is None


def kill_at(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """The job dies at ``where``: "promote" (after adding its version), "history" (after
    promoting it, before its history line) or "report" (after promoting it, before its
    report)."""

    def die(*args: object, **kwargs: object) -> None:
        raise Killed(where)

    if where == "promote":
        monkeypatch.setattr(Registry, "promote", die)
    elif where == "history":
        monkeypatch.setattr(Registry, "_history", die)
    else:
        monkeypatch.setattr(job, "write_report", die)


@pytest.mark.parametrize("where", ["promote", "report"])
def test_the_next_run_finishes_a_killed_one(
    registry: Path,
    make_config: ConfigWriter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    kill_at(monkeypatch, where)
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    reg = Registry(registry)
    assert "v2" in reg.versions() and not (registry / "reports" / "v2.json").exists()
    assert reg.current() == (FIRST_VERSION if where == "promote" else "v2")
    (registry / f".{POINTER}.x1y2z3").write_text('{"version": "v')  # died mid-write
    # ... or mid-report (write_report's temporaries: hidden, never read, never removed)
    (registry / "reports" / ".v2.txt.a1b2c3").write_text("retrain v2: PRO")
    (registry / "reports" / ".v2.json.d4e5f6").write_text('{"version": "v')

    # the next run: repairs first, then does its own work (here: a gate it cannot pass)
    report = retrain(dataclasses.replace(cfg, gate=Gate(min_accuracy=1.01)), version="v3")
    action = "promoted and reported" if where == "promote" else "reported"
    assert report["repaired"] == [{"version": "v2", "action": action}]
    assert reg.current() == "v2" and reg.pointer()["previous"] == [FIRST_VERSION]
    assert report["champion"] == "v2" and report["promoted"] is False
    recovered = json.loads((registry / "reports" / "v2.json").read_text())
    assert recovered["recovered"] is True and recovered["promoted"] is True
    trained_on = recovered["trained_on"]  # provenance: seed, and each training file's sha256
    assert trained_on["seed"] == cfg.seed and all(f["sha256"] for f in trained_on["data"]["train"])
    assert recovered["gate"]["passed"] is True
    assert "killed" in (registry / "reports" / "v2.txt").read_text()
    assert not list(registry.glob(f".{POINTER}.*"))
    assert sorted(p.name for p in (registry / "reports").iterdir()) == [
        f"{v}.{ext}" for v in (FIRST_VERSION, "v2", "v3") for ext in ("json", "txt")
    ]
    assert (registry / "reports" / "v3.json").is_file()
    # the served model changed in this run: its text says so, not only its JSON
    assert f"repaired v2: {action}" in (registry / "reports" / "v3.txt").read_text()
    # nothing left to repair
    assert "repaired" not in retrain(dataclasses.replace(cfg, gate=Gate(min_accuracy=1.01)))


def test_a_promotion_killed_before_its_history_line_is_recorded_by_the_next_run(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between CURRENT and history.jsonl: the next run took v2 for promoted (it is
    current) and never wrote its line, so the audit trail lacked the change for good."""
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    kill_at(monkeypatch, "history")
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    reg = Registry(registry)
    assert reg.current() == "v2" and not reg.ever_served("v2")
    report = retrain(dataclasses.replace(cfg, gate=Gate(min_accuracy=1.01)), version="v3")
    assert report["repaired"] == [{"version": "v2", "action": "reported"}]
    rows = [json.loads(line) for line in (registry / "history.jsonl").read_text().splitlines()]
    assert [(r["action"], r["version"], r["from"]) for r in rows][-1] == (
        "promote",
        "v2",
        FIRST_VERSION,
    )
    assert rows[-1]["reason"].startswith("recorded by the next run")


def test_the_same_command_again_finishes_its_killed_version_and_says_so(
    registry: Path,
    make_config: ConfigWriter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A job killed after adding v2 and rerun as it was (--version v2, what a retry or an
    operator does): the name was refused first, so v2 stayed added, not promoted and not
    reported, however often it ran; then the repair came first, and the name was refused
    after it (exit 2: a failed job to a CronJob's retry, its goal reached). Now the rerun
    finishes v2 and answers with its report (exit 0, promoted); a run after that is refused
    the name, as any taken one."""
    from absa.cli import main
    from absa.errors import RegistryError

    config = make_config(tmp_path / "r.toml", registry)
    cfg = RetrainConfig.load(config)
    kill_at(monkeypatch, "promote")
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    assert main(["retrain", "--config", str(config), "--version", "v2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("retrain v2: PROMOTED") and "repaired v2: promoted and reported" in out
    assert Registry(registry).current() == "v2"
    assert json.loads((registry / "reports" / "v2.json").read_text())["recovered"] is True
    with pytest.raises(RegistryError, match="'v2' exists already"):
        retrain(cfg, version="v2")


@pytest.mark.parametrize("code", ["EIO", "ENOSPC"])
def test_an_io_error_after_the_version_is_added_is_no_call_to_run_again(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    code: str,
) -> None:  # fmt: skip
    """The version is in and its training done: an I/O error while promoting it (EIO on
    the pointer) was exit 75 with the checkpoint kept, so the CronJob's retry repaired
    (promoted) it, then trained again on the same data and promoted a second version. Now
    it is a one-line error that says what is left to the next job, and nothing to resume.
    A full disk (ENOSPC, no error to retry) said only "No space left on device", so the
    operator who freed space did not know the next job would promote the version."""
    import errno
    import os

    from absa.errors import RegistryError, transient

    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    number = getattr(errno, code)

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError(number, os.strerror(number), str(registry / POINTER))

    monkeypatch.setattr(Registry, "promote", failing)
    with pytest.raises(RegistryError, match="v2 was added, not promoted") as caught:
        retrain(cfg, version="v2")
    monkeypatch.undo()
    assert not transient(caught.value)  # exit 2, not 75: no retry to train it again
    assert "the next job" in str(caught.value) and os.strerror(number) in str(caught.value)
    reg = Registry(registry)
    assert reg.versions()[-1] == "v2" and reg.current() == FIRST_VERSION
    assert not reg.resumable_dir.exists()
    report = retrain(dataclasses.replace(cfg, gate=Gate(min_accuracy=1.01)), version="v3")
    assert report["repaired"] == [{"version": "v2", "action": "promoted and reported"}]
    assert "resumed_after_epoch" not in report


def test_a_failing_volume_that_cannot_say_whether_the_version_is_in_is_no_call_to_run_again(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the I/O error, the look at whether the version was added met a stale handle
    too: its error went up (exit 75, the checkpoint kept), and a retry could train and add
    the version a second time. Unknown counts as added."""
    import errno
    import os
    import pathlib

    from absa.errors import RegistryError, transient

    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))

    failing: list[bool] = []  # from the promotion on

    def eio(*args: object, **kwargs: object) -> None:
        failing.append(True)
        raise OSError(errno.EIO, "Input/output error", str(registry / POINTER))

    real = os.stat
    v2 = Registry(registry).versions_dir / "v2"

    def stale(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if failing and pathlib.Path(path) == v2:  # type: ignore[arg-type]
            raise OSError(errno.ESTALE, "Stale file handle", str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Registry, "promote", eio)
    monkeypatch.setattr(os, "stat", stale)
    with pytest.raises(RegistryError, match="v2 may have been added, not promoted") as caught:
        retrain(cfg, version="v2")
    monkeypatch.undo()
    assert not transient(caught.value)  # exit 2, not 75
    assert not Registry(registry).resumable_dir.exists()


def test_a_killed_version_that_failed_its_gate_is_reported_not_promoted(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    cfg = dataclasses.replace(cfg, gate=Gate(min_accuracy=1.01))  # cannot pass
    kill_at(monkeypatch, "report")
    with pytest.raises(Killed):
        retrain(cfg, version="v2")
    monkeypatch.undo()
    report = retrain(cfg, version="v3")
    assert report["repaired"] == [{"version": "v2", "action": "reported"}]
    assert Registry(registry).current() == FIRST_VERSION
    assert json.loads((registry / "reports" / "v2.json").read_text())["promoted"] is False


def test_a_version_rolled_back_by_hand_is_not_promoted_again_by_the_next_run(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job promoted v2 and could not write its report (the error says v2 serves); the
    operator rolled v2 back. Rollback drops v2 from the pointer, so the next run took it
    for a version killed before its promotion and promoted it again."""
    from absa.cli import main

    (registry / "reports" / "v2.json").mkdir()  # its report cannot take that name
    toml = make_config(tmp_path / "r.toml", registry)
    assert main(["retrain", "--config", str(toml), "--version", "v2", "--quiet"]) == 2
    assert "v2 was promoted and serves" in capsys.readouterr().err
    assert main(["models", "rollback", "--registry", str(registry)]) == 0
    reg = Registry(registry)
    assert reg.current() == FIRST_VERSION
    (registry / "reports" / "v2.json").rmdir()

    cfg = dataclasses.replace(RetrainConfig.load(toml), gate=Gate(min_accuracy=1.01))
    report = retrain(cfg, version="v3")
    assert report["repaired"] == [{"version": "v2", "action": "reported"}]
    assert reg.current() == FIRST_VERSION  # the operator's rollback stands
    recovered = json.loads((registry / "reports" / "v2.json").read_text())
    assert recovered["promoted"] is True  # it did serve, until the rollback


def test_a_champion_whose_files_changed_is_named_with_what_to_do(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """The served version's file changed in place: the job failed "fails verification", no
    word of what to do; nothing trained, nothing changed."""
    from absa.errors import RegistryError
    from tests.retrain.test_registry import corrupt

    reg = Registry(registry)
    corrupt(reg, FIRST_VERSION)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    with pytest.raises(RegistryError) as refused:
        retrain(cfg, version="v2")
    said = str(refused.value)
    assert said.startswith("the champion (the version CURRENT names) cannot be gated against: ")
    assert f"'{FIRST_VERSION}' fails verification" in said and "restore its files" in said
    assert reg.versions() == [FIRST_VERSION] and reg.current() == FIRST_VERSION
