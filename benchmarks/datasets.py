"""The benchmark data sets in ../shared/data (or $ABSA_DATA_DIR): train, optional dev, test.

``DATASETS`` have a test file; ``TRAIN_ONLY`` sets do not (their tests are withheld on
purpose): they are for training and for held-out parts of their own train files, never
reported as test numbers. ``union_files`` lists the training files of the "union" (the four
sets with a test) and of "union+new" (those plus the train-only sets).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# where the accuracy table's s/epoch comes from (accuracy.py --machine labels other places)
PROJECT_MACHINE = "project 2-core CPU"

DATASETS: dict[str, dict[str, str | None]] = {
    "rest14": {
        "train": "semeval14/Restaurants_Train.xml.seg",
        "dev": None,
        "test": "semeval14/Restaurants_Test_Gold.xml.seg",
    },
    "lap14": {
        "train": "semeval14/Laptops_Train.xml.seg",
        "dev": None,
        "test": "semeval14/Laptops_Test_Gold.xml.seg",
    },
    "twitter": {"train": "twitter/train.raw", "dev": None, "test": "twitter/test.raw"},
    "mams": {"train": "mams/train.xml", "dev": "mams/val.xml", "test": "mams/test.xml"},
}


#: sets without a test file: train (and ACOS's dev) only
TRAIN_ONLY: dict[str, dict[str, str | None]] = {
    "semeval15": {"train": "semeval15/restaurant_train.raw", "dev": None, "test": None},
    "television": {"train": "television/Television_Train.xml.seg", "dev": None, "test": None},
    "tshirt": {"train": "tshirt/Menstshirt_Train.xml.seg", "dev": None, "test": None},
    "yelp": {"train": "yelp/yelp.train.txt", "dev": None, "test": None},
    "acos-laptop": {
        "train": "acos-laptop/train.jsonl",
        "dev": "acos-laptop/dev.jsonl",
        "test": None,
    },
}


def data_dir() -> Path:
    return Path(os.environ.get("ABSA_DATA_DIR") or ROOT.parent / "shared" / "data")


def paths(name: str) -> dict[str, Path | None]:
    spec = DATASETS[name] if name in DATASETS else TRAIN_ONLY[name]
    return {k: (data_dir() / v if v else None) for k, v in spec.items()}


def union_files(new: bool = False, without: str | None = None) -> list[tuple[str, Path]]:
    """(set name, train file) of "union" (the sets with a test), with ``new`` of "union+new"
    (the train-only sets after them), less the set ``without``."""
    names = [*DATASETS, *(TRAIN_ONLY if new else ())]
    if without is not None and without not in names:
        raise ValueError(f"{without!r} is not one of {', '.join(names)}")
    return [(n, _train(n)) for n in names if n != without]


def train_more_args() -> list[str]:
    """``absa train --train-more`` with the train-only sets' training files, in order."""
    return ["--train-more", *(str(_train(n)) for n in TRAIN_ONLY)]


def _train(name: str) -> Path:
    train = paths(name)["train"]
    assert train is not None, f"{name} has no train file"
    return train


def test_files() -> dict[str, Path]:
    """The test file of every set that has one."""
    return {n: data_dir() / t for n, spec in DATASETS.items() if (t := spec["test"])}
