"""The benchmark data sets in ../shared/data (or $ABSA_DATA_DIR): train, optional dev, test."""

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


def data_dir() -> Path:
    return Path(os.environ.get("ABSA_DATA_DIR") or ROOT.parent / "shared" / "data")


def paths(name: str) -> dict[str, Path | None]:
    spec = DATASETS[name]
    return {k: (data_dir() / v if v else None) for k, v in spec.items()}
