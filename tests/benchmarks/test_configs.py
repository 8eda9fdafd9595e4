"""Every config in benchmarks/configs loads as the command that reads it would load it: a key
misspelt in a config that trains for hours must fail here, not at the start of a chain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.cli.extract import _config
from absa.model.tagger_config import TaggerConfig
from absa.training.presets import load_config
from absa.training.tagging import TagTrainConfig

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "benchmarks" / "configs").glob("*.json"))


def test_there_are_configs() -> None:
    assert len(CONFIGS) > 50


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_the_config_loads(path: Path) -> None:
    if path.name.startswith("extract-"):  # absa train --task extract --config
        model, train = _config(str(path))
        TaggerConfig.from_dict(model)
        TagTrainConfig.from_dict(train)
    else:  # absa train --config, benchmarks/distill.py
        load_config(path, None)


def test_a_misspelt_key_is_caught(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"preset": "fast", "train": {"teachers_mroe": ["a"]}}))
    with pytest.raises(ValueError, match="teachers_mroe"):
        load_config(bad, None)


@pytest.mark.parametrize("net", ["fast", "card-lite"])
def test_the_three_teacher_configs_are_the_four_teacher_ones_less_the_last_draw(net: str) -> None:
    """-3t (a lend that trains two draws) must differ from -4t in nothing but the draw."""
    name = f"{net}-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-%s.json"
    three, four = (
        load_config(ROOT / "benchmarks" / "configs" / (name % v), None) for v in ("3t", "4t")
    )
    assert three.train.teachers_more == four.train.teachers_more[:2]
    assert three.model == four.model
    assert {**vars(three.train), "teachers_more": ()} == {**vars(four.train), "teachers_more": ()}
