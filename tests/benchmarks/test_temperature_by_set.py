"""benchmarks/temperature_by_set.py: the NLL-best temperature of each dev part and test set."""

from __future__ import annotations

import pytest

from absa.model import artifact
from absa.model.runtime import DEFAULT_MODEL_DIR
from benchmarks.datasets import DATASETS, data_dir
from benchmarks.temperature_by_set import temperatures


def test_the_shipped_model_s_dev_gives_back_its_stored_temperature() -> None:
    if not (data_dir() / "mams" / "train.xml").is_file():
        pytest.skip("the benchmark data is absent")
    got = temperatures(DEFAULT_MODEL_DIR)
    stored = artifact.read_metadata(DEFAULT_MODEL_DIR)["calibration"]["temperature"]
    assert got["stored"] == stored
    # export fitted T on this dev split by NLL on the fp32 graph's logits; the served graph's
    # (int8 embeddings) are near enough to land within a hundredth of it
    assert got["dev"] == pytest.approx(stored, abs=0.01)
    parts = [k for k in got if k.startswith("dev ")]
    assert parts == [f"dev {name}" for name in sorted(DATASETS)]
    assert [*got][-5:] == [*DATASETS, "tests pooled"]
    assert all(0.5 < t < 2.0 for t in got.values())
    # dev's parts disagree: the laptops want it softer than the rest (docs/benchmarks.md)
    assert got["dev lap14"] > got["dev"] > got["dev mams"]
