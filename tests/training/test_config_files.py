"""Config files as editors save them: a byte-order mark (Windows Notepad saves UTF-8 with
one) and an upper-case suffix are read, not refused as bad JSON or read as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from absa.training.presets import load_config
from absa.training.retrain_config import RetrainConfig

BOM = "\ufeff"


@pytest.mark.parametrize("name", ["c.json", "c.toml", "C.TOML", "c.Json"])
@pytest.mark.parametrize("bom", ["", BOM], ids=["plain", "bom"])
def test_a_training_config_is_read_with_a_bom_and_any_suffix_case(
    tmp_path: Path, name: str, bom: str
) -> None:
    path = tmp_path / name
    if name.lower().endswith(".toml"):
        text = 'preset = "atae-gru"\n[model]\nhidden_size = 6\n'
    else:
        text = json.dumps({"preset": "atae-gru", "model": {"hidden_size": 6}})
    path.write_text(bom + text, encoding="utf-8")
    preset = load_config(path, None)
    assert preset.model.cell == "gru" and preset.model.hidden_size == 6


def test_a_retrain_config_is_read_with_a_bom(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text("")
    path = tmp_path / "r.toml"
    path.write_text(
        BOM + 'registry = "reg"\n[data]\nbase = ["train.jsonl"]\n[eval]\ntest = "train.jsonl"\n',
        encoding="utf-8",
    )
    cfg = RetrainConfig.load(path)
    assert Path(cfg.registry) == (tmp_path / "reg").resolve()


def test_a_null_preset_is_the_default_as_an_absent_one(tmp_path: Path) -> None:
    """JSON null is no value: the default preset, as before the preset's type was checked
    (it was refused as "a NoneType")."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"preset": None, "about": None, "model": {"hidden_size": 6}}))
    preset = load_config(path, None)
    assert preset.name == load_config(None, None).name and preset.model.hidden_size == 6


def test_labels_that_are_not_a_list_of_names_are_refused(tmp_path: Path) -> None:
    """A string was split into letters ("neg": n, e, g) and passed the check."""
    for labels in ("neg", ["negative", 3]):
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"model": {"labels": labels}}))
        with pytest.raises(ValueError, match=f"{path}: .*labels"):
            load_config(path, None)


def test_a_model_config_file_with_labels_of_one_string_is_refused(tmp_path: Path) -> None:
    from absa.model.config import ModelConfig

    path = tmp_path / "model_config.json"
    path.write_text(json.dumps({"labels": "neg"}))
    with pytest.raises(ValueError, match=f"{path}: labels must be a list of names"):
        ModelConfig.load(path)


@pytest.mark.parametrize(
    "text",
    [
        '{"preset": "fast", "train": {"epochs": 1, "epochs": 2}}',
        '{"preset": "fast", "preset": "atae-lstm"}',
    ],
)
def test_a_json_config_that_gives_a_key_twice_is_refused_naming_file_and_key(
    tmp_path: Path, text: str
) -> None:
    """json.loads kept the last value: 2 epochs were trained where the file also said 1.
    TOML refuses a key given twice itself; data files refuse it too."""
    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"c\.json: the key '(epochs|preset)' is given twice"):
        load_config(path, None)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"model": {"hidden_size": -3}}, "hidden_size must be >= 1, not -3"),
        ({"model": {"embed_dim": 0}}, "embed_dim must be >= 1, not 0"),
        ({"model": {"attention_dim": 0}}, "attention_dim must be >= 1, not 0"),
        ({"model": {"self_attention_heads": -1}}, "self_attention_heads must be >= 0, not -1"),
        ({"model": {"positional_init": float("nan")}}, "positional_init must be a finite number"),
        ({"train": {"threads": 0}}, "threads must be >= 1, not 0"),
    ],
)
def test_a_size_out_of_range_is_refused_naming_the_file(
    tmp_path: Path, table: dict, says: str
) -> None:
    """They were found by torch, after the data and the vectors were read: "hidden_size must
    be greater than zero", "invalid shape dimension -300 at index 3", "set_num_threads
    expects a positive integer", none naming the file or the key as the file spells it."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"c\.json: {re.escape(says)}"):
        load_config(path, None)


def test_training_data_with_a_label_the_model_lacks_is_refused_naming_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """model.labels without one the data has: "absa train: error: negative" (a KeyError)."""
    from absa.cli import main

    data = tmp_path / "t.jsonl"
    rows = [{"text": "the pizza was bad", "aspect": "pizza", "label": "negative"}] * 3
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"model": {"labels": ["a", "b"]}}), encoding="utf-8")
    argv = ["train", "--train", str(data), "--dev", str(data), "--config", str(cfg)]
    assert main([*argv, "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{data}:1: label 'negative' is not one of the model's labels (a, b;" in err, err
