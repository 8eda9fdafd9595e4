"""benchmarks/truncate_encoder.py: the cut encoder is the source's bottom layers, loads as a
model directory of its own (tokenizer included), and a layer count it lacks is a one-line
error."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.truncate_encoder import RECORD, truncate


@pytest.fixture(scope="module")
def three_layers(tmp_path_factory: pytest.TempPathFactory, tiny_transformer: Path) -> Path:
    """The tiny test BERT, three layers deep (random weights, seeded)."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig.from_pretrained(str(tiny_transformer))
    cfg.num_hidden_layers = 3
    torch.manual_seed(1)
    out = tmp_path_factory.mktemp("transformers") / "bert-3"
    BertModel(cfg).save_pretrained(str(out))
    shutil.copy(tiny_transformer / "tokenizer.json", out / "tokenizer.json")
    return out


def test_keeps_the_bottom_layers(three_layers: Path, tmp_path: Path) -> None:
    from transformers import AutoModel

    out = tmp_path / "bert-2"
    record = truncate(three_layers, 2, out)
    assert record["layers"] == 2 and record["source_layers"] == 3
    assert json.loads((out / RECORD).read_text()) == record
    assert (out / "tokenizer.json").read_bytes() == (three_layers / "tokenizer.json").read_bytes()
    src = AutoModel.from_pretrained(str(three_layers)).eval()
    cut = AutoModel.from_pretrained(str(out)).eval()
    assert cut.config.num_hidden_layers == 2 and len(cut.encoder.layer) == 2
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        hidden = src(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        got = cut(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(got, hidden[2], atol=1e-6)  # the source's state after its layer 2
    assert not torch.allclose(got, hidden[3], atol=1e-3)


def test_more_layers_than_the_source_is_a_clear_error(
    three_layers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script's own exit (in this process: a subprocess spent 30 s importing torch)."""
    from benchmarks import truncate_encoder

    args = ["--source", str(three_layers), "--layers", "4", "--out", str(tmp_path / "x")]
    monkeypatch.setattr(sys, "argv", ["truncate_encoder.py", *args])
    with pytest.raises(SystemExit) as stopped:
        truncate_encoder.main()
    assert stopped.value.code == f"truncate_encoder: {three_layers}: has 3 layers; cannot keep 4"
    assert not (tmp_path / "x").exists()
