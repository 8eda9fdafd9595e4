"""The retraining job end to end on a tiny model: promotion, the gate, drift, bad data,
the lock, a killed job, a failed export, and the ``absa models`` commands."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from absa.cli import main
from absa.model.registry import Registry, RegistryError
from absa.model.runtime import DEFAULT_MODEL_DIR
from absa.training.records import DataError
from absa.training.retrain import RetrainConfig, retrain
from tests.helpers import (
    main_after,
    sigint_as_ctrl_c,
    sigterm_after_block,
    synthetic_examples,
    write_jsonl,
)
from tests.retrain.conftest import EXAMPLES, FIRST_VERSION, ROOT, ConfigWriter, LockHolder


def state(root: Path) -> dict:
    """Everything a job must leave alone when it does not finish: the pointer, the versions
    and their files, the history."""
    versions = {}
    for d in sorted((root / "versions").iterdir()):
        versions[d.name] = {
            f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(d.iterdir())
        }
    history, pointer = root / "history.jsonl", root / "CURRENT"
    return {
        "CURRENT": pointer.read_text() if pointer.exists() else None,
        "versions": versions,
        "history": history.read_text() if history.exists() else "",
    }


def assert_whole_versions(root: Path) -> None:
    """Every directory under versions/ is a complete artifact whose checksum verifies."""
    for d in (root / "versions").iterdir():
        meta = json.loads((d / "metadata.json").read_text())
        onnx = d / meta["onnx"]["file"]
        assert hashlib.sha256(onnx.read_bytes()).hexdigest() == meta["onnx"]["sha256"], d
        assert (d / "pipeline.json").is_file(), d


def work_entries(root: Path) -> list[str]:
    work = root / ".work"
    return sorted(p.name for p in work.iterdir()) if work.is_dir() else []


def read_report(root: Path, version: str) -> tuple[dict, str]:
    rep = root / "reports"
    return json.loads((rep / f"{version}.json").read_text()), (rep / f"{version}.txt").read_text()


# --------------------------------------------------------------------------- promotion and gate


def test_first_job_promotes_and_reports_why(champion_registry: Path) -> None:
    reg = Registry(champion_registry)
    assert reg.current() == FIRST_VERSION
    assert reg.versions() == [FIRST_VERSION]
    report, text = read_report(champion_registry, FIRST_VERSION)
    assert report["promoted"] is True
    assert report["champion"] is None
    # no champion yet: compared with what the service serves meanwhile, the shipped model
    assert report["baseline"] == str(DEFAULT_MODEL_DIR)
    # which model that was, not its path alone (the path serves another one tomorrow); the
    # version's metadata says it too, where its parent is None
    shipped = json.loads((DEFAULT_MODEL_DIR / "metadata.json").read_text())
    assert report["baseline_model"] == {
        "path": str(DEFAULT_MODEL_DIR),
        "kind": "artifact",
        "name": shipped["name"],
        "version": shipped["version"],
        "onnx_sha256": shipped["onnx"]["sha256"],
    }
    assert set(report["champion_metrics"]) == {"synthetic"}
    assert report["gate"]["passed"] is True
    assert report["gate"]["reasons"] == [
        "passes: within tolerance of the served model (no champion yet)"
    ]
    assert set(report["challenger_metrics"]) == {"synthetic"}
    assert report["parity"]["prediction_mismatches"] == 0
    assert report["data"]["base"]["examples"] == len(EXAMPLES)
    assert "PROMOTED" in text and "no champion yet" in text
    meta = reg.metadata(FIRST_VERSION)
    # how it trained, kept by the report when a pruned version's metadata goes
    trained = report["training"]
    assert trained["environment"] == meta["train"]["environment"] and trained["environment"]
    assert [s["from_epoch"] for s in trained["sessions"]] == [1]
    assert trained["train_config"] == meta["train_config"]
    assert meta["version"] == FIRST_VERSION
    assert meta["parent"] is None
    assert meta["gated_against"] == report["baseline_model"]
    assert meta["gate"]["passed"] is True
    # what reproduces it: the config file and its values, the environment it trained in
    # (the run directory it came from is scratch space, gone once the job ends)
    config = report["config"]
    toml = champion_registry.parent / "retrain.toml"
    assert config["file"]["sha256"] == hashlib.sha256(toml.read_bytes()).hexdigest()
    # the network's file too: its values are the resolved train_config, its bytes were not
    model_file = Path(config["values"]["model_config"])
    assert config["model_config"] == {
        "path": str(model_file),
        "sha256": hashlib.sha256(model_file.read_bytes()).hexdigest(),
    }
    assert meta["train"]["data"]["config"] == [config["model_config"]]  # as absa train --config
    assert config["values"]["seed"] == 1 and config["values"]["gate"]["min_accuracy"] == 0.0
    assert not Path(meta["source_run"]).exists()
    assert meta["reproduce"] == f"absa retrain --config {toml}"  # the job trains it again
    card = (reg.path(FIRST_VERSION) / "README.md").read_text()
    assert f"absa retrain --config {toml}" in card
    assert {"python", "torch"} <= set(meta["train"]["environment"])
    # every file the run read, the dev file too (the version's card names them)
    data = meta["train"]["data"]
    assert data["train"] == report["data"]["base"]["files"]
    assert data["dev"] == report["data"]["dev"]["files"] and data["dev"]
    assert work_entries(champion_registry) == []
    assert_whole_versions(champion_registry)
    # readable by the other users of the registry volume, as the versions are (not 0600)
    for path in ("CURRENT", f"reports/{FIRST_VERSION}.json", f"reports/{FIRST_VERSION}.txt"):
        assert (champion_registry / path).stat().st_mode & 0o777 == 0o644, path


def test_the_gate_allows_a_drop_of_exactly_the_tolerance() -> None:
    """A drop of "no more than the allowed" one: 0.8 - 0.1 is 0.7000000000000001 in floats, so a
    challenger at 0.7 against a champion at 0.8 with a tolerance of 0.1 was refused; so
    was 9/200 against 10/200 under the default tolerance of 0.005 (one item in 200)."""
    from absa.training.retrain_config import Gate
    from absa.training.retrain_gate import check_gate

    def m(acc: float, f1: float) -> dict:
        return {"s": {"accuracy": acc, "macro_f1": f1, "n": 200}}

    gate = Gate(max_accuracy_drop=0.1, max_macro_f1_drop=0.1)
    assert check_gate(gate, m(0.7, 0.7), m(0.8, 0.8))[0]
    assert not check_gate(gate, m(0.69, 0.7), m(0.8, 0.8))[0]  # beyond it: refused
    assert not check_gate(gate, m(0.7, 0.69), m(0.8, 0.8))[0]
    assert check_gate(Gate(), m(9 / 200, 1.0), m(10 / 200, 1.0))[0]
    assert not check_gate(Gate(), m(8 / 200, 1.0), m(10 / 200, 1.0))[0]
    assert check_gate(Gate(min_accuracy=0.7), m(7 / 10, 1.0), None)[0]  # the floor itself


def test_a_report_that_cannot_be_written_says_the_version_was_promoted(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The served model changed: "error" alone would hide that from whoever reads it."""
    (registry / "reports" / "v2.json").mkdir()  # its report cannot take that name
    cfg = make_config(tmp_path / "r.toml", registry)  # v1's job again: the gate passes
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "v2 was promoted and serves; its report could not be written" in err, err
    assert Registry(registry).current() == "v2"


def test_gate_that_cannot_pass_adds_but_does_not_promote(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = Registry(registry).pointer()
    # an eval set no model gets all right (one aspect twice, with two labels) and a floor
    # of 100 %: the gate cannot pass
    first = EXAMPLES[0]
    twice = replace(first, label="negative" if first.label != "negative" else "positive")
    unsure = write_jsonl(tmp_path / "unsure.jsonl", [*EXAMPLES, twice])
    cfg = make_config(tmp_path / "r.toml", registry, gate={"min_accuracy": 1.0})
    cfg.write_text(cfg.read_text().replace("synthetic = ", f'synthetic = "{unsure}"\n# '))
    code = main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"])
    assert code == 3
    assert "NOT promoted" in capsys.readouterr().out
    reg = Registry(registry)
    assert reg.pointer() == before  # CURRENT unchanged
    assert reg.versions() == [FIRST_VERSION, "v2"]
    assert reg.metadata("v2")["parent"] == FIRST_VERSION
    assert reg.metadata("v2")["gated_against"] == {
        "path": str(reg.path(FIRST_VERSION)),
        "kind": "artifact",
        "name": reg.metadata(FIRST_VERSION)["name"],
        "version": FIRST_VERSION,
        "onnx_sha256": reg.metadata(FIRST_VERSION)["onnx"]["sha256"],
    }
    report, text = read_report(registry, "v2")
    assert "baseline_model" not in report  # a champion: its version is the report's champion
    assert report["promoted"] is False and report["gate"]["passed"] is False
    assert any("floor 1.0000" in r for r in report["gate"]["reasons"])
    assert report["champion_metrics"] is not None  # compared on the same sets
    assert "NOT promoted" in text and "floor 1.0000" in text
    assert work_entries(registry) == []


def test_label_drift_warns(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    negatives = [e for e in EXAMPLES if e.label == "negative"] * 2  # 16 more negatives
    new = write_jsonl(tmp_path / "new.jsonl", negatives)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry, new=[new]))
    with caplog.at_level(logging.WARNING, logger="absa.training.retrain"):
        report = retrain(cfg, version="v2")
    d = report["drift"]
    assert d["warning"] is True
    assert d["tvd"] == pytest.approx(24 / 40 - 1 / 3)  # negative share 1/3 -> 24/40
    assert d["challenger"]["negative"] == pytest.approx(0.6)
    assert "drift" in caplog.text
    _, text = read_report(registry, "v2")
    assert "label drift (TVD) 0.267  WARNING" in text


def test_label_drift_is_judged_at_its_threshold(
    registry: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A warning just past the threshold and none just under it, nor for data with the
    champion's label mix (the job's test above sits far past it, so a warning on any
    drift, or at twice the threshold, passed it)."""
    from absa.training.retrain_gate import check_drift

    reg = Registry(registry)
    negatives = [e for e in EXAMPLES if e.label == "negative"] * 2
    tvd = 24 / 40 - 1 / 3
    with caplog.at_level(logging.WARNING, logger="absa.training.retrain"):
        under = check_drift(reg, FIRST_VERSION, [*EXAMPLES, *negatives], tvd + 0.001)
        same = check_drift(reg, FIRST_VERSION, list(EXAMPLES), 0.001)
    assert under is not None and under["warning"] is False and caplog.text == ""
    assert same is not None and same["tvd"] == pytest.approx(0) and same["warning"] is False
    over = check_drift(reg, FIRST_VERSION, [*EXAMPLES, *negatives], tvd - 0.001)
    assert over is not None and over["warning"] is True and "drift" in caplog.text


# --------------------------------------------------------------------------- bad data


def write_bad(path: Path) -> Path:
    """The synthetic set with line 3 carrying an unknown label."""
    lines = write_jsonl(path, EXAMPLES[:6]).read_text().splitlines()
    row = json.loads(lines[2])
    row["label"] = "great"
    lines[2] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bad_data_fails_naming_file_and_line(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write_bad(tmp_path / "bad.jsonl")
    before = state(registry)
    cfg = make_config(tmp_path / "r.toml", registry, new=[bad])
    with pytest.raises(DataError, match=rf"{bad}:3: unknown label 'great'"):
        retrain(RetrainConfig.load(cfg), version="v2")
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 2
    assert f"absa retrain: error: {bad}:3: unknown label" in capsys.readouterr().err
    assert state(registry) == before
    assert not (registry / "reports" / "v2.json").exists()
    assert work_entries(registry) == []


@pytest.mark.parametrize(
    ("top", "extra", "words"),
    [
        ({"keep": "three"}, "", "keep: input should be a valid integer"),
        ({"keep": 0}, "", "keep must be >= 1"),
        ({"epochs": "2"}, "", "epochs: input should be a valid integer"),
        ({"epochs": 0}, "", "epochs must be >= 1"),
        ({"seed": True}, "", "seed: input should be a valid integer"),
        ({"seed": -5}, "", "seed must be in [0, 2**32), not -5"),
        ({}, "[gate]\nmax_accuracy_drop = nan\n", "gate.max_accuracy_drop must be a share in"),
        ({}, "[gate]\nmax_macro_f1_drop = -0.01\n", "gate.max_macro_f1_drop must be a share"),
        ({}, "[gate]\nmin_accuracy = 1.5\n", "gate.min_accuracy must be a share in [0, 1]"),
        ({}, '[gate]\nmin_accuracy = "0.5"\n', "gate.min_accuracy: input should be a valid"),
        ({}, "[gate]\nmax_acc_drop = 0.1\n", "unknown keys ['max_acc_drop'] in [gate]"),
        ({"gate": 5}, "", "[gate] is a int, not a table"),
        ({"eval": "x"}, "", "[eval] is a str, not a table"),
        # the key, where it named the table and showed the whole of it
        ({}, "b = 5\n", "eval.b: input should be a valid string, not 5"),  # in [eval], last
        ({"nwe": ["x.jsonl"]}, "", "unknown keys ['nwe'] in the top level"),
        # the preset and its overrides were read only after the registry's repair and the
        # data: an unknown name or a missing file failed the job there
        ({"preset": "nonesuch"}, "", "unknown preset 'nonesuch'"),
        ({"model_config": "absent.json"}, "", "absent.json: no such file"),
        ({"name": "a:b"}, "", "name must be a non-empty name without ':', not 'a:b'"),
        ({"name": " "}, "", "name must be a non-empty name without ':'"),
    ],
)
def test_a_bad_config_is_refused_before_any_work(
    registry: Path,
    make_config: ConfigWriter,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    top: dict,
    extra: str,
    words: str,
) -> None:
    """Every key and value is checked when the file is read: a wrong type used to train,
    promote, and then fail (keep = "three" in prune), the served model changed by a job
    that reported failure. Exit 2 with the file named; the registry untouched."""
    before = state(registry)
    gate = top.pop("gate", None)
    eval_ = top.pop("eval", None)
    cfg = make_config(tmp_path / "r.toml", registry, **top)
    text = cfg.read_text()
    if gate is not None:
        text = f"gate = {gate}\n" + text
    if eval_ is not None:  # the writer's own [eval] table replaced by a string
        text = f"eval = {json.dumps(eval_)}\n" + text.split("[eval]")[0]
    cfg.write_text(text + extra)
    with pytest.raises(ValueError, match=re.escape(words)):
        RetrainConfig.load(cfg)
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"absa retrain: error: {cfg}: ") and words in err, err
    assert state(registry) == before and work_entries(registry) == []


@pytest.mark.parametrize("value", ['""', '"  "'])
def test_an_empty_registry_path_is_refused(
    make_config: ConfigWriter, tmp_path: Path, value: str
) -> None:
    """registry = "" read as the config file's own folder, and the job made a registry
    there (among the config and its data files)."""
    cfg = make_config(tmp_path / "r.toml", tmp_path / "registry")
    text = re.sub(r"(?m)^registry = .*$", f"registry = {value}", cfg.read_text())
    cfg.write_text(text)
    with pytest.raises(ValueError, match="registry is empty"):
        RetrainConfig.load(cfg)
    assert not (tmp_path / "versions").exists() and not (tmp_path / "registry").exists()


def test_a_folder_that_is_not_a_registry_and_not_empty_is_refused_before_any_work(
    make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """registry = a folder that holds other things (a home directory, a mistyped path to
    the data folder): the job made versions/, .work/ and reports/ among them. Now exit 2
    naming it, nothing created there; a new folder, or an empty one that holds only a mounted
    volume's lost+found, is still made a registry."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    cfg = make_config(tmp_path / "r.toml", home)
    assert main(["retrain", "--config", str(cfg), "--version", "v1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{home} is not a model registry and holds other files (notes.txt)" in err, err
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt"]
    volume = tmp_path / "volume"
    (volume / "lost+found").mkdir(parents=True)
    (volume / ".snapshot").mkdir()  # a NAS's: what the service also takes for an empty one
    assert Registry(volume).init().versions() == []
    assert Registry(tmp_path / "new").init().versions() == []


def test_a_category_model_config_is_refused_before_any_work(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """The job reads aspect-term data: a category preset read it so, trained, and failed
    only then ("a category model needs category_ids")."""
    model = {"model": {"aspect_source": "category", "categories": ["food", "service"]}}
    (tmp_path / "categories.json").write_text(json.dumps(model))
    cfg = make_config(tmp_path / "r.toml", registry, model_config="categories.json")
    with pytest.raises(ValueError, match="trains aspect-term models: .* a category model"):
        RetrainConfig.load(cfg)


def test_paths_under_the_home_directory_are_the_users_not_the_configs(
    make_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``registry = "~/absa/models"`` read as a path relative to the config file: the job
    would have made a registry in a directory named ``~`` beside it."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", Path("~/absa/models")))
    assert cfg.registry == home / "absa" / "models"


def test_a_data_path_that_is_not_a_string_is_named_by_its_place_and_a_config_folder_so(
    make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """base = ["train.jsonl", 3] said "data.base: input should be a valid string, not
    ('train.jsonl', 3)"; --config naming a folder said "no such file"."""
    cfg = make_config(tmp_path / "r.toml", tmp_path / "registry")
    text = re.sub(r"(?m)^base = \[(.*)\]$", r"base = [\1, 3]", cfg.read_text())
    cfg.write_text(text)
    said = r"r\.toml: data\.base\[1\]: input should be a valid string, not 3"
    with pytest.raises(ValueError, match=said):
        RetrainConfig.load(cfg)
    assert main(["retrain", "--config", str(tmp_path), "--quiet"]) == 2
    assert f"--config {tmp_path}: is a directory, not a config file" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["base and new", "base twice", "a link in new"])
def test_a_data_file_named_twice_is_refused_before_any_work(
    make_config: ConfigWriter, retrain_files: dict[str, Path], tmp_path: Path, where: str
) -> None:
    """A file in both base and new (or twice in one) trained on every aspect twice, and the
    dev set then agreed with everything; absa train refuses this, naming the file."""
    train = retrain_files["train"]
    link = tmp_path / "same.jsonl"
    link.symlink_to(train)
    kw = {
        "base and new": {"base": [train], "new": [train]},
        "base twice": {"base": [train, train]},
        "a link in new": {"base": [train], "new": [link]},
    }[where]
    cfg = make_config(tmp_path / "r.toml", tmp_path / "registry", **kw)
    with pytest.raises(ValueError, match=r"r\.toml: \[data\] .*: given twice"):
        RetrainConfig.load(cfg)


def test_the_model_configs_preset_is_trained_where_the_job_names_none(
    make_config: ConfigWriter, retrain_files: dict[str, Path], tmp_path: Path
) -> None:
    """A model_config naming its preset (as `absa train --config` reads one) was trained as
    "fast", the job's default, in silence; a preset the job names wins, as --preset does."""
    override = json.loads(retrain_files["model_config"].read_text())
    (tmp_path / "own.json").write_text(json.dumps({"preset": "atae-lstm", **override}))
    cfg = make_config(tmp_path / "r.toml", tmp_path / "registry", model_config="own.json")
    cfg.write_text(cfg.read_text().replace('preset = "atae-lstm"\n', ""))
    assert RetrainConfig.load(cfg).preset == "atae-lstm"
    named = make_config(tmp_path / "n.toml", tmp_path / "registry", model_config="own.json",
                        preset="fast")  # fmt: skip
    assert RetrainConfig.load(named).preset == "fast"
    assert not (tmp_path / "registry").exists()  # reading a config creates nothing


def test_unknown_data_keys_and_a_string_for_a_list_are_refused(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """A misspelt [data] key used to be ignored: a model promoted without the new data."""
    cfg = make_config(tmp_path / "r.toml", registry)
    cfg.write_text(cfg.read_text().replace("[data]\n", '[data]\nnwe = ["x.jsonl"]\n'))
    with pytest.raises(ValueError, match=re.escape("unknown keys ['nwe'] in [data]")):
        RetrainConfig.load(cfg)
    cfg = make_config(tmp_path / "s.toml", registry, base=[])
    cfg.write_text(cfg.read_text().replace("base = []", 'base = "train.jsonl"'))
    with pytest.raises(ValueError, match="data.base: input should be a valid tuple"):
        RetrainConfig.load(cfg)


def test_a_top_map_needs_a_dev_split_of_500(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """Refused before any training when the dev split is too small (the registry untouched);
    with a dev file of 600 aspects the new version serves T and the map."""
    before = state(registry)
    cfg = make_config(tmp_path / "r.toml", registry, calibration="top_map")
    with pytest.raises(DataError, match="needs at least 500 dev items; .* about 24"):
        retrain(RetrainConfig.load(cfg), version="v2")
    assert state(registry) == before and work_entries(registry) == []
    held_out = make_config(tmp_path / "h.toml", registry, calibration="top_map", dev=[])
    with pytest.raises(DataError, match="needs at least 500 dev items"):  # no dev file: held out
        retrain(RetrainConfig.load(held_out), version="v2")
    assert state(registry) == before and work_entries(registry) == []
    bad = make_config(tmp_path / "b.toml", registry, calibration="isotonic")
    with pytest.raises(ValueError, match="calibration must be one of temperature, top_map"):
        RetrainConfig.load(bad)
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_examples(300, seed=5))
    cfg = make_config(tmp_path / "d.toml", registry, calibration="top_map", dev=[dev])
    retrain(RetrainConfig.load(cfg), version="v2")
    cal = Registry(registry).metadata("v2")["calibration"]
    assert cal["method"] == "temperature+top_map" and cal["dev"]["n"] == 600


def test_skip_invalid_counts_skipped_rows(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    bad = write_bad(tmp_path / "bad.jsonl")
    cfg = make_config(tmp_path / "r.toml", registry, new=[bad])
    argv = ["retrain", "--config", str(cfg), "--version", "v2", "--skip-invalid", "--quiet"]
    assert main(argv) in (0, 3)  # promoted or not: the job ran to the end
    report, text = read_report(registry, "v2")
    assert report["data"]["new"]["skipped"] == 1
    assert report["data"]["new"]["examples"] == 5
    (reason,) = report["data"]["new"]["skipped_reasons"]
    assert reason.startswith(f"{bad}:3: unknown label 'great'")
    assert "1 invalid records skipped" in text
    assert "v2" in Registry(registry).versions()


@pytest.mark.parametrize("where", ["data", "pointer", "report"])
def test_a_transient_io_error_inside_the_job_exits_75(
    registry: Path,
    make_config: ConfigWriter,
    retrain_files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    """A stale NFS handle or the volume's I/O error, met where the job names what it could
    not read or write (a data file, CURRENT, the report), exited 2: the CronJob fails on 2
    at once, where 75 is retried (README: any command exits 75 on those). Not once the
    version is in: an I/O error writing the report then exits 2, as a retry would train and
    add another version (the next job writes the report)."""
    from absa.training import retrain as job

    cfg = make_config(tmp_path / "r.toml", registry)
    real_bytes, real_text = Path.read_bytes, Path.read_text

    def read_bytes(self: Path) -> bytes:
        if self == retrain_files["train"]:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_bytes(self)

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self == registry / "CURRENT":
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE))
        return real_text(self, *args, **kwargs)  # type: ignore[arg-type]

    def write_report(reg: Registry, report: dict) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(reg.root / "reports"))

    before = state(registry)
    if where == "data":
        monkeypatch.setattr(Path, "read_bytes", read_bytes)
    elif where == "pointer":
        monkeypatch.setattr(Path, "read_text", read_text)
    else:  # after the promotion: the version serves, its report is for the next job
        monkeypatch.setattr(job, "write_report", write_report)
    code = main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"])
    err = capsys.readouterr().err
    monkeypatch.undo()
    if where == "report":  # done: a retry (75) would train and add another version
        assert code == 2 and "may succeed if run again" not in err, err
        assert "v2 was promoted and serves" in err and Registry(registry).current() == "v2"
        return
    assert code == 75 and "may succeed if run again" in err, err
    assert state(registry) == before and work_entries(registry) == []  # met before any work


def test_the_configs_name_is_the_models(make_config: ConfigWriter, tmp_path: Path) -> None:
    """Every version a job made was named for its preset ("atae-lstm:v1" in each answer):
    the config's name is the model's, in its metadata and so in answers and /v1/model."""
    registry = tmp_path / "named"
    cfg = make_config(tmp_path / "r.toml", registry, name="hotel-reviews")
    assert main(["retrain", "--config", str(cfg), "--version", "v1", "--quiet"]) == 0
    assert Registry(registry).metadata("v1")["name"] == "hotel-reviews"


# ------------------------------------------------------------------ concurrency and crashes


def test_second_job_fails_fast_while_one_holds_the_lock(
    registry: Path,
    make_config: ConfigWriter,
    hold_lock: LockHolder,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = make_config(tmp_path / "r.toml", registry)
    before = state(registry)
    holder = hold_lock(registry, "job_lock")
    try:
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="has a retraining job running"):
            retrain(RetrainConfig.load(cfg), version="v2")
        assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 2
        assert time.monotonic() - t0 < 5  # no waiting, no training
        assert "has a retraining job running" in capsys.readouterr().err
    finally:
        holder.communicate("", timeout=10)
    assert state(registry) == before


def test_killed_job_leaves_the_registry_as_it_was(
    registry: Path, make_config: ConfigWriter, retrain_files: dict[str, Path], tmp_path: Path
) -> None:
    before = state(registry)
    # no early stopping and many epochs: surely still training when killed
    override = json.loads(retrain_files["model_config"].read_text())
    override["train"].update(epochs=100_000, patience=100_000)
    (tmp_path / "slow.json").write_text(json.dumps(override))
    slow = make_config(tmp_path / "slow.toml", registry, model_config=tmp_path / "slow.json")
    log = (tmp_path / "job.log").open("w")
    job = subprocess.Popen(
        [sys.executable, "-m", "absa.cli", "retrain", "--config", str(slow), "--quiet"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        work = registry / ".work"
        while not any(work.glob("resumable/run/*")):  # training has started writing its run
            assert job.poll() is None, (tmp_path / "job.log").read_text()
            assert time.monotonic() < deadline, "the job did not start training in 60 s"
            time.sleep(0.05)
        # a second job while this one trains: refused at once, nothing touched
        second = RetrainConfig.load(make_config(tmp_path / "second.toml", registry))
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="has a retraining job running"):
            retrain(second, version="v3")
        assert time.monotonic() - t0 < 5
        # an operator's promote (here of the current version: nothing changes) does not
        # wait for the job's training, which would never end (100,000 epochs): the job
        # holds the change lock only to change the registry
        assert main(["models", "promote", FIRST_VERSION, "--registry", str(registry)]) == 0
        assert job.poll() is None  # it returned while the job still trains
        time.sleep(0.2)
        assert job.poll() is None
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
        log.close()
    assert job.returncode == -signal.SIGKILL
    assert state(registry) == before  # pointer, versions, history untouched
    assert_whole_versions(registry)
    assert "resumable" in work_entries(registry)  # the dead job's scratch space is still there ...

    # ... until the next job cleans it (its config differs: the checkpoint is not its own)
    report = retrain(second, version="v2")
    assert work_entries(registry) == []
    assert Registry(registry).versions() == [FIRST_VERSION, "v2"]
    assert report["gate"]["passed"] == report["promoted"]
    assert_whole_versions(registry)


def test_an_eval_set_left_empty_by_skip_invalid_is_refused_before_training(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its accuracy of 0 against the champion's 0 let any challenger through the gate."""
    bad = tmp_path / "garbage.jsonl"
    bad.write_text('{"text": "x"}\nnot json\n')
    before = state(registry)
    for key in ("eval", "dev"):
        cfg = make_config(tmp_path / f"{key}.toml", registry)
        text = cfg.read_text()
        text = (
            text.replace("synthetic = ", f'synthetic = "{bad}"\n# ')
            if key == "eval"
            else text.replace("dev = ", f'dev = ["{bad}"]\n# ')
        )
        cfg.write_text(text)
        t0 = time.monotonic()
        argv = ["retrain", "--config", str(cfg), "--version", "v2", "--skip-invalid", "--quiet"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{bad}: no examples left after validation ({key}" in err, err
        assert "2 skipped as invalid" in err
        assert time.monotonic() - t0 < 10  # before any training
    assert state(registry) == before and work_entries(registry) == []


@pytest.mark.parametrize("key", ["base", "new", "dev"])
def test_a_training_or_dev_file_left_empty_by_skip_invalid_is_refused_before_training(
    registry: Path,
    make_config: ConfigWriter,
    retrain_files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
) -> None:
    """A file of the wrong format (every record skipped) next to good ones was passed over:
    a base set all skipped trained on the new data alone and promoted it, and a new or dev
    file all skipped beside another one was dropped, the job reporting success."""
    bad = tmp_path / "garbage.jsonl"
    bad.write_text('{"text": "x"}\nnot json\n')
    train = retrain_files["train"]
    files = {"base": [train], "new": [], "dev": [train]}
    more = tmp_path / "more.jsonl"  # not train itself: a file in base and new is refused
    shutil.copy(train, more)
    files[key] = [bad] if key == "base" else [more if key == "new" else train, bad]
    if key == "base":
        files["new"] = [train]  # training data all the same: the base file alone is empty
    before = state(registry)
    cfg = make_config(tmp_path / "r.toml", registry, **files)
    t0 = time.monotonic()
    argv = ["retrain", "--config", str(cfg), "--version", "v2", "--skip-invalid", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}: no examples left after validation ({key}; 2 skipped as invalid)" in err, err
    assert time.monotonic() - t0 < 10  # before any training
    assert state(registry) == before and work_entries(registry) == []


def test_a_baseline_that_cannot_be_read_is_refused_before_training(
    make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to be found after training and export, and the checkpoint thrown away."""
    registry = tmp_path / "fresh"  # no champion yet: the gate compares with the baseline
    for baseline, words in [
        (tmp_path / "nowhere", "neither a training run"),
        (DEFAULT_MODEL_DIR.parent / "category", "is a category model"),  # another task
    ]:
        cfg = make_config(tmp_path / "r.toml", registry, baseline=baseline)
        t0 = time.monotonic()
        assert main(["retrain", "--config", str(cfg), "--version", "v1", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"baseline {baseline}" in err and words in err, err
        assert time.monotonic() - t0 < 10
        assert Registry(registry).versions() == [] and work_entries(registry) == []


def test_a_lost_pointer_stops_the_job_before_training(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CURRENT gone while the history says v1 serves: the job took the registry for a new
    one, gated its challenger against the shipped baseline and promoted it with nothing to
    roll back to."""
    (registry / "CURRENT").unlink()
    before = state(registry)
    cfg = make_config(tmp_path / "r.toml", registry)
    t0 = time.monotonic()
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "CURRENT is missing" in err and FIRST_VERSION in err, err
    assert time.monotonic() - t0 < 10
    assert state(registry) == before and work_entries(registry) == []


def _staged(reg: Registry, name: str) -> Path:
    """A copy of the champion's artifact beside the registry, to register as a new one."""
    staging = reg.root.parent / name
    shutil.copytree(reg.path(FIRST_VERSION), staging)
    return staging


def _passed() -> dict:
    """What a job's report holds when it registers a version whose gate passed."""
    return {
        "challenger_metrics": {"synthetic": {"accuracy": 1.0, "macro_f1": 1.0, "n": 24}},
        "gate": {"passed": True, "reasons": ["passes: within tolerance of champion"]},
    }


def test_a_version_promoted_by_hand_during_the_job_is_not_overridden(registry: Path) -> None:
    """The gate compared with the champion of the job's start: if an operator promoted or
    rolled back meanwhile, the job adds its version and leaves the pointer to them."""
    from absa.training.retrain import register

    reg = Registry(registry)
    staging, report = _staged(reg, "staging"), _passed()
    assert not register(reg, staging, "v2", "v0", report, {})  # the job began under v0
    assert reg.current() == FIRST_VERSION and "v2" in reg.versions()
    assert "changed while the job ran (v0 -> v1)" in report["not_promoted"]
    again = _staged(reg, "again")
    assert register(reg, again, "v3", FIRST_VERSION, dict(report), {})  # unchanged: promoted
    assert reg.current() == "v3"


def test_a_job_told_not_to_promote_holds_a_version_that_passes(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``promote = false``: the version that passes its gate is added and held, a
    challenger to score beside the champion (ABSA_SHADOW_MODEL) before it is promoted by
    hand; the job did what it was asked (exit 0), and its report and text say what next."""
    reg = Registry(registry)
    cfg = make_config(tmp_path / "r.toml", registry, promote=False)
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 0
    out = capsys.readouterr().out
    report, text = read_report(registry, "v2")
    assert report["gate"]["passed"] and report["held"] and not report["promoted"]
    assert reg.current() == FIRST_VERSION and reg.versions() == [FIRST_VERSION, "v2"]
    assert reg.metadata("v2")["held"] is True
    assert text.startswith("retrain v2: HELD") and out.startswith("retrain v2: HELD")
    assert f"ABSA_SHADOW_MODEL={reg.path('v2')}" in text
    # the same command again (a Job's pod retried after a success it never saw): its goal
    # reached, its report and exit status again, nothing trained; it was an exit 2
    before = state(registry)
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 0
    again = capsys.readouterr().out.splitlines()
    assert [x for x in again if "run again at" not in x] == out.splitlines()
    assert read_report(registry, "v2") == (report, text) and state(registry) == before
    # whatever else the job's repair meets (a version an operator broke): the same answer
    shutil.copytree(registry / "versions" / FIRST_VERSION, registry / "versions" / "vbad")
    (registry / "versions" / "vbad" / "metadata.json").write_text("{")
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--skip-invalid"]) == 0
    assert "repaired vbad: left: unreadable" in capsys.readouterr().out
    shutil.rmtree(registry / "versions" / "vbad")
    other = make_config(tmp_path / "r2.toml", registry, promote=False, epochs=1)
    assert main(["retrain", "--config", str(other), "--version", "v2", "--quiet"]) == 2
    assert "records another config or other data" in capsys.readouterr().err
    assert "`absa models promote v2`" in text
    assert main(["models", "--registry", str(registry), "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[-1].startswith("  v2") and listed[-1].endswith(
        "held: a challenger its job did not promote (promote = false)"
    )
    assert "held" not in listed[0]
    assert main(["models", "--registry", str(registry), "promote", "v2"]) == 0
    assert reg.current() == "v2"
    assert main(["models", "--registry", str(registry), "list"]) == 0
    assert "held" not in capsys.readouterr().out  # it serves now


def test_a_recovered_report_is_no_record_to_answer_a_rerun_with(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report a later job's repair wrote records neither config nor data: a second rerun
    is refused saying so (it said "records another config or other data", untrue)."""
    cfg = make_config(tmp_path / "r.toml", registry, promote=False)
    run = ["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]
    assert main(run) == 0
    for suffix in (".json", ".txt"):  # killed before its report
        (registry / "reports" / f"v2{suffix}").unlink()
    assert main(run) == 0  # its repair writes the report: the goal reached
    assert read_report(registry, "v2")[0]["recovered"] is True
    capsys.readouterr()
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "written by a later job's repair" in err and "another config" not in err


def test_a_killed_jobs_held_version_is_reported_and_left_held(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """The next job finishes a killed job's version (its report), promoting one that passed
    its gate: not one its config held."""
    from absa.training.retrain import register, repair

    reg = Registry(registry)
    staging, report = _staged(reg, "staging"), _passed()
    assert not register(reg, staging, "v2", FIRST_VERSION, report, {}, promote=False)
    with reg.lock():  # killed before its report: the next job's repair
        done = repair(reg)
    assert done == [{"version": "v2", "action": "reported"}]
    assert reg.current() == FIRST_VERSION
    recovered, _ = read_report(registry, "v2")
    assert recovered["held"] is True and recovered["promoted"] is False
    # one that failed its gate is not held (exit 3 when its job is run again, "NOT promoted")
    failed = _staged(reg, "failed")
    gate = {"passed": False, "reasons": ["fails: accuracy 0.1000 under the floor 1.0000"]}
    assert not register(reg, failed, "v3", FIRST_VERSION, {**report, "gate": gate}, {}, False)
    assert "held" not in reg.metadata("v3")
    with reg.lock():
        repair(reg)
    recovered, text = read_report(registry, "v3")
    assert "held" not in recovered and text.startswith("retrain v3: NOT promoted")


def test_a_job_not_promoted_for_a_changed_champion_says_why_in_its_text(
    registry: Path,
    make_config: ConfigWriter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The text (and the job's output) said "NOT promoted" under "gate: passes" and no
    reason: only the JSON had ``not_promoted``."""
    from absa.training import retrain as job

    reg = Registry(registry)
    staging = registry.parent / "staging"
    shutil.copytree(reg.path(FIRST_VERSION), staging)
    reg.add(staging, "v0")
    evaluate_on = job.evaluate_on

    def operator_promotes_meanwhile(model_dir: Path, evals: dict) -> dict:
        if Path(model_dir) == reg.path(FIRST_VERSION):  # the champion, after the training
            reg.promote("v0", reason="by hand")
        return evaluate_on(model_dir, evals)

    monkeypatch.setattr(job, "evaluate_on", operator_promotes_meanwhile)
    cfg = make_config(tmp_path / "r.toml", registry)  # v1's job again: the gate passes
    assert main(["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]) == 3
    out = capsys.readouterr().out
    report, text = read_report(registry, "v2")
    assert report["gate"]["passed"] and not report["promoted"] and reg.current() == "v0"
    assert f"the current version changed while the job ran ({FIRST_VERSION} -> v0)" in text
    assert "changed while the job ran" in out


def test_an_unreadable_version_blocks_neither_jobs_nor_the_listing(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from absa.training.retrain import repair

    reg = Registry(registry)
    staging = registry.parent / "staging"
    shutil.copytree(reg.path(FIRST_VERSION), staging)
    reg.add(staging, "v2")
    (reg.path("v2") / "metadata.json").write_text('{"truncated": ')
    with reg.lock():
        done = repair(reg)
    assert [d["version"] for d in done] == ["v2"] and done[0]["action"].startswith("left: unread")
    assert reg.current() == FIRST_VERSION
    assert main(["models", "list", "--registry", str(registry)]) == 0
    lines = sorted(capsys.readouterr().out.splitlines(), key=lambda ln: ln[2:])
    assert lines[0].startswith(f"* {FIRST_VERSION} ") and "synthetic=" in lines[0]
    assert lines[1].startswith("  v2 ") and "unreadable" in lines[1]


def test_failed_export_leaves_no_half_version(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import absa.model.export

    monkeypatch.setattr(absa.model.export, "PARITY_ATOL", -1.0)  # every export now fails parity
    before = state(registry)
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry))
    with pytest.raises(absa.model.export.ParityError):
        retrain(cfg, version="v2")
    assert state(registry) == before
    assert work_entries(registry) == []
    assert not (registry / "reports" / "v2.json").exists()


# --------------------------------------------------------------------------- absa models


def test_models_commands(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = Registry(registry)
    # a second version: a copy of v1 under another name, created later
    staging = registry.parent / "staging"
    shutil.copytree(reg.path(FIRST_VERSION), staging)
    meta = json.loads((staging / "metadata.json").read_text())
    meta.update(version="v2", created="2999-01-01T00:00:00+00:00", parent=FIRST_VERSION)
    (staging / "metadata.json").write_text(json.dumps(meta))
    reg.add(staging, "v2")
    args = ["--registry", str(registry)]

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["models", *argv, *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, _ = run("list")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].startswith(f"* {FIRST_VERSION} ") and "synthetic=" in lines[0]
    assert lines[1].startswith("  v2 ") and f"parent={FIRST_VERSION}" in lines[1]

    code, out, _ = run("show", "v2")
    assert code == 0 and json.loads(out)["version"] == "v2"

    assert run("promote", "v2")[:2] == (0, "current: v2\n")
    assert reg.current() == "v2" and reg.pointer()["previous"] == [FIRST_VERSION]
    assert run("list")[1].splitlines()[1].startswith("* v2 ")

    assert run("rollback")[:2] == (0, f"current: {FIRST_VERSION}\n")
    assert reg.current() == FIRST_VERSION

    code, _, err = run("rollback")  # nothing before v1
    assert code == 2 and "no previous version" in err
    code, _, err = run("promote", "nope")
    assert code == 2 and "no version 'nope'" in err
    code, _, err = run("show", "../x")
    assert code == 2 and "no version '../x'" in err
    assert reg.current() == FIRST_VERSION
    history = [json.loads(ln) for ln in (registry / "history.jsonl").read_text().splitlines()]
    assert [(h["action"], h["version"]) for h in history[-2:]] == [
        ("promote", "v2"),
        ("rollback", FIRST_VERSION),
    ]


def test_models_needs_a_registry(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ABSA_REGISTRY", raising=False)
    assert main(["models", "list"]) == 2
    assert "--registry" in capsys.readouterr().err


@pytest.mark.parametrize("name", [FIRST_VERSION, "../escape", "v 2"])
def test_a_taken_or_bad_version_name_is_refused_before_training(
    registry: Path, make_config: ConfigWriter, tmp_path: Path, name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    before = state(registry)
    cfg = make_config(tmp_path / "r.toml", registry)
    assert main(["retrain", "--config", str(cfg), "--version", name, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "exists already" in err or "bad version name" in err, err
    assert state(registry) == before and work_entries(registry) == []
    assert not (registry / ".work").exists() or not any((registry / ".work").iterdir())


def test_an_eval_set_that_shares_sentences_with_the_training_data_is_warned_of(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """The gate compared challenger and champion on sentences the challenger trained on, and
    nothing said so: the report and its text now count them per eval set."""
    apart = write_jsonl(tmp_path / "apart.jsonl", synthetic_examples(6, seed=9))
    shared = write_jsonl(tmp_path / "shared.jsonl", [*EXAMPLES[:4], *synthetic_examples(3, seed=9)])
    cfg = make_config(tmp_path / "r.toml", registry, evals={"apart": apart, "shared": shared})
    report = retrain(RetrainConfig.load(cfg), version="v2")
    assert report["eval_overlap"] == {"shared": {"sentences": 2, "of": 5}}
    _, text = read_report(registry, "v2")
    assert "WARNING eval shared: 2 of its 5 sentences are in the training or dev data" in text
    assert "eval apart" not in text


def test_the_text_report_names_the_versions_pruned(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """Pruned versions were in the JSON alone: an operator reading the text did not learn
    that a version was deleted."""
    cfg = RetrainConfig.load(make_config(tmp_path / "r.toml", registry, keep=1))
    for version in ("v2", "v3"):
        report = retrain(
            replace(cfg, gate=replace(cfg.gate, max_accuracy_drop=1.0)), version=version
        )
    assert report["pruned"] == [FIRST_VERSION], report
    _, text = read_report(registry, "v3")
    assert f"pruned: {FIRST_VERSION}" in text


def test_a_seed_in_the_model_config_is_trained_where_the_job_names_none(
    make_config: ConfigWriter, retrain_files: dict[str, Path], tmp_path: Path
) -> None:
    """model_config's seed 7 (read as `absa train --config` reads it) was replaced by the
    job's default, 1, without a word: the same file trained another model under retrain.
    A seed the job names wins, as --seed does."""
    from absa.training.retrain import job_preset

    override = json.loads(retrain_files["model_config"].read_text())
    train = {**override.get("train", {}), "seed": 7}
    (tmp_path / "own.json").write_text(json.dumps({**override, "train": train}))
    cfg = make_config(tmp_path / "r.toml", tmp_path / "registry", model_config="own.json")
    assert job_preset(RetrainConfig.load(cfg)).train.seed == 7
    named = make_config(tmp_path / "n.toml", tmp_path / "registry", model_config="own.json",
                        seed=3)  # fmt: skip
    assert job_preset(RetrainConfig.load(named)).train.seed == 3
    plain = make_config(tmp_path / "p.toml", tmp_path / "registry")
    assert job_preset(RetrainConfig.load(plain)).train.seed == 1  # as before: the default


def test_the_summary_calls_the_served_model_so_where_there_is_no_champion() -> None:
    """ "NOT promoted (champion before: None)" then "| champion acc 85.00": a champion in a
    registry that has none (the gate compared with the served model)."""
    from absa.training.retrain_report import summary

    metrics = {"test": {"accuracy": 0.59, "macro_f1": 0.5}}
    report = {"version": "r1", "promoted": False, "champion": None, "data": {},
              "challenger_metrics": metrics, "champion_metrics": metrics}  # fmt: skip
    assert "| served model acc 59.00" in summary(report)
    served = {"path": "/models/x", "kind": "artifact", "name": "absa-default", "version": "1.8.0"}
    assert "served model: absa-default 1.8.0 (/models/x)" in summary(
        {**report, "baseline_model": served}
    )
    assert "| champion acc 59.00" in summary({**report, "champion": "v1"})
    # the config's baseline need not be what is served: it was called the served model
    chosen = {**report, "baseline_model": served, "baseline_name": "the config's baseline"}
    assert "  config's baseline: absa-default 1.8.0 (/models/x)" in summary(chosen)
    assert "| config's baseline acc 59.00" in summary(chosen)


def test_a_job_whose_data_does_not_read_makes_no_registry(
    make_config: ConfigWriter, tmp_path: Path
) -> None:
    """A typo'd data path was refused (exit 2) after the registry folder was made
    (versions/, .work, locks), which `absa models list` then listed as an empty registry
    where a mistyped path is an error."""
    registry = tmp_path / "typo_reg"
    cfg = make_config(tmp_path / "r.toml", registry, base=[tmp_path / "nope.jsonl"])
    with pytest.raises(DataError, match="nope.jsonl"):
        retrain(RetrainConfig.load(cfg), version="v1")
    assert not registry.exists()


@pytest.mark.parametrize(("key", "value", "warned"), [
    ("max_accuracy_drop", 1, True), ("max_macro_f1_drop", 0.5, True),
    ("max_accuracy_drop", 0.05, False), ("min_accuracy", 1.0, False),
])  # fmt: skip
def test_a_gate_drop_of_half_or_more_is_warned_of(
    make_config: ConfigWriter,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    key: str,
    value: float,
    warned: bool,
) -> None:
    """max_accuracy_drop = 1 ("one point" meant) let every challenger through without a
    word: a drop of 100 points. Still taken (a gate turned off on purpose), but said."""
    gate = {"min_accuracy": 0.0, key: value} if key != "min_accuracy" else {key: value}
    cfg = make_config(tmp_path / "r.toml", tmp_path / "registry", gate=gate)
    with caplog.at_level("WARNING", logger="absa.training.retrain_config"):
        loaded = RetrainConfig.load(cfg)
    assert getattr(loaded.gate, key) == value
    assert (f"gate.{key} = {value}" in caplog.text) is warned, caplog.text
    if warned:
        assert "0.01 is one point" in caplog.text


def _signalled_while_training(
    registry: Path,
    make_config: ConfigWriter,
    retrain_files: dict[str, Path],
    tmp_path: Path,
    signum: int,
) -> tuple[int, str]:
    """``absa retrain`` of a job that trains for ever, sent ``signum`` once its first
    checkpoint is written: its exit status and output."""
    override = json.loads(retrain_files["model_config"].read_text())
    override["train"].update(epochs=100_000, patience=100_000)
    (tmp_path / "slow.json").write_text(json.dumps(override))
    slow = make_config(tmp_path / "slow.toml", registry, model_config=tmp_path / "slow.json")
    job = subprocess.Popen(
        [sys.executable, "-m", "absa.cli", "retrain", "--config", str(slow), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        preexec_fn=sigint_as_ctrl_c,  # Ctrl-C as a terminal sends it, in any test run
    )
    try:
        deadline = time.monotonic() + 60
        while not any((registry / ".work").glob("resumable/run/checkpoint.pt")):
            assert job.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        job.send_signal(signum)
        out, _ = job.communicate(timeout=60)
    finally:
        job.kill()
    return job.returncode, out


def test_ctrl_c_says_what_the_job_left(
    registry: Path, make_config: ConfigWriter, retrain_files: dict[str, Path], tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) ended absa retrain with 130 and no word of what it left."""
    before = state(registry)
    code, out = _signalled_while_training(
        registry, make_config, retrain_files, tmp_path, signal.SIGINT
    )
    assert code == 130, out
    assert f"absa retrain: interrupted: its checkpoint is kept in {registry}; the same " in out
    assert state(registry) == before


def test_sigterm_once_the_job_returned_says_its_report_not_interrupted(
    registry: Path, make_config: ConfigWriter, tmp_path: Path
) -> None:
    """SIGTERM once the job had returned and train's handler was put back: absa's handler
    stopped the command before its summary, and it said "interrupted: no checkpoint is kept
    ... the same command goes on", which starts another job. Sent as the block that held
    train's handler ends, so it lands in that window every time."""
    cfg = make_config(tmp_path / "retrain.toml", registry)
    argv = ["retrain", "--config", str(cfg), "--version", "v2", "--quiet"]
    done = main_after(sigterm_after_block("retrain"), argv, cwd=ROOT)
    assert done.returncode == 143, done.stderr
    assert "retrain v2: " in done.stdout, done.stdout + done.stderr
    assert "interrupted" not in done.stderr, done.stderr
    assert "v2" in Registry(registry).versions()


def test_sigterm_stops_the_job_after_a_batch_with_its_checkpoint(
    registry: Path, make_config: ConfigWriter, retrain_files: dict[str, Path], tmp_path: Path
) -> None:
    """A pod evicted mid-training: exit 75 (a retry goes on from the checkpoint), the
    registry as it was; the job exited 143 at once, its epoch in progress lost."""
    before = state(registry)
    code, out = _signalled_while_training(
        registry, make_config, retrain_files, tmp_path, signal.SIGTERM
    )
    assert code == 75, out
    assert "(SIGTERM): no version added" in out and "the same command goes on" in out, out
    assert state(registry) == before
    assert (Registry(registry).resumable_dir / "run" / "checkpoint.pt").is_file()
