"""Dev F1 per source of an extractor (benchmarks/extraction_dev.py): each source's part of
dev scored alone, the mean leaving ACOS out, and the report's table of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.extraction import dev_table
from benchmarks.extraction_dev import dev_by_source
from tests.helpers import extraction_sentences

SOURCES = ("/d/semeval14/xml/Restaurants_Train_v2.xml", "/d/mams/train.xml",
           "/d/acos-laptop/train.jsonl")  # fmt: skip


def test_dev_f1_per_source_and_their_mean_without_acos(extractor_artifact: Path) -> None:
    sentences = [s for s in extraction_sentences() if s.spans]
    dev = [replace(s, source=f"{SOURCES[i % 3]}:{i}") for i, s in enumerate(sentences)]
    # the extractor finds every training span: drop gold spans from the ACOS part and one
    # Rest14 sentence, so those parts lose precision and MAMS alone stays perfect
    dev = [replace(s, spans=()) if "acos" in s.source else s for s in dev]
    dev[0] = replace(dev[0], spans=dev[0].spans[:1])
    rep = dev_by_source(extractor_artifact, dev)
    assert set(rep) == {"rest14", "mams", "acos", "mean"}
    assert rep["mams"]["f1"] == pytest.approx(100.0)
    assert rep["acos"]["f1"] == 0.0 and rep["acos"]["predicted"] > 0
    assert 0 < rep["rest14"]["f1"] < 100.0
    assert rep["mean"] == pytest.approx((rep["rest14"]["f1"] + 100.0) / 2)  # ACOS left out
    row = {"setup": "union-x", "seed": 1, "dev": {"f1": 12.5}, "dev_by_source": rep}
    table = dev_table([row, {"setup": "old", "seed": 1, "dev": {"f1": 1.0}}])
    assert len(table) == 3  # header, rule, the run that records its sources
    assert table[2].startswith("| union-x | 1 | ") and "| – |" in table[2]  # no Lap14 part
    assert table[2].endswith(f"**{rep['mean']:.2f}** | 12.50 |")
