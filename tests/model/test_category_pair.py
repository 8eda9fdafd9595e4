"""Sentence-pair category models (Sun et al. 2019): the encoder reads "[CLS] text [SEP]
category words [SEP]", the head attends over the text only, the graph takes
``token_type_ids`` and onnxruntime builds the same pair torch-free."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from absa.errors import ArtifactError
from absa.model import artifact
from absa.model.categories import category_words, encode_category
from absa.model.category_predictor import CategoryPredictor
from absa.model.config import ModelConfig
from absa.model.network import ABSANet
from absa.model.runtime import Runtime
from absa.model.text import TextError, WordPiecePipeline, collate
from absa.training.categories import category_preset
from absa.training.inference import encode_all, to_tensors
from absa.training.rundir import load_run, read_metrics
from tests.helpers import category_examples, tiny_pair_preset

EXAMPLES = category_examples()


@pytest.mark.parametrize(
    ("label", "words"),
    [
        ("food", "food"),
        ("anecdotes/miscellaneous", "anecdotes miscellaneous"),
        ("LAPTOP#PRICE", "laptop price"),
        ("DISPLAY#DESIGN_FEATURES", "display design features"),
    ],
)
def test_category_words(label: str, words: str) -> None:
    assert category_words(label) == words


def test_the_pair_is_text_then_category_words(tiny_transformer: Path) -> None:
    pipe = WordPiecePipeline(tiny_transformer / "tokenizer.json", max_len=12)
    text = "the pizza was great"
    e = encode_category(pipe, text, 2, "laptop price")
    pieces = [t.text for t in e.tokens]
    assert pieces == ["[CLS]", "the", "pizza", "was", "great", "[SEP]", "laptop", "price", "[SEP]"]
    assert e.token_types == [0] * 6 + [1] * 3 and e.category == 2
    assert [t.start == t.end for t in e.tokens] == [True] + [False] * 4 + [True] * 4
    long = encode_category(pipe, " ".join(["good"] * 30), 0, "laptop price")
    assert len(long.ids) == 12 and long.token_types == [0] * 9 + [1] * 3  # the text is cut
    with pytest.raises(TextError, match="empty"):
        encode_category(pipe, "  ", 0, "food")
    with pytest.raises(ValueError, match="mixes sentence-pair"):
        collate([e, encode_category(pipe, text, 0)])


def test_a_pair_needs_a_tokenizer_whose_pairs_carry_token_types(
    tiny_transformer: Path, tmp_path: Path
) -> None:
    """RoBERTa's and MPNet's pairs (``<s> a </s></s> b </s>``) are of token type 0 all
    through: the network, which tells the text from the category words by type, read the
    category words as text (attended over, never added to v_a), without a word."""
    import json

    tok = json.loads((tiny_transformer / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    tok["post_processor"] = {  # RoBERTa's: every token of a pair of type 0
        "type": "RobertaProcessing",
        "sep": ["[SEP]", vocab["[SEP]"]],
        "cls": ["[CLS]", vocab["[CLS]"]],
        "trim_offsets": True,
        "add_prefix_space": False,
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    pipe = WordPiecePipeline(tmp_path / "tokenizer.json", max_len=12)
    with pytest.raises(ArtifactError, match="token types"):
        encode_category(pipe, "the pizza was great", 2, "laptop price")
    assert encode_category(pipe, "the pizza was great", 2).token_types is None  # no pair: fine


def pair_net(tiny_transformer: Path) -> tuple[ModelConfig, ABSANet, WordPiecePipeline]:
    preset = category_preset(tiny_pair_preset(tiny_transformer), ("food", "service"))
    torch.manual_seed(0)
    net = ABSANet(preset.model, encoder_path=tiny_transformer, pretrained_encoder=True).eval()
    return preset.model, net, WordPiecePipeline(tiny_transformer / "tokenizer.json")


def test_padding_changes_nothing_and_only_the_text_is_attended(tiny_transformer: Path) -> None:
    cfg, net, pipe = pair_net(tiny_transformer)
    assert net.input_names == ("input_ids", "attention_mask", "category_ids", "token_type_ids")
    items = [
        encode_category(pipe, "the ramen broth was rich and the staff kind", 0, "food"),
        encode_category(pipe, "slow service", 1, "service"),
    ]
    inputs = to_tensors(items, pipe.pad_id)
    with torch.no_grad():
        logits, alpha, _ = net(**inputs)
        for i, e in enumerate(items):
            n = len(e.ids)
            alone = {
                k: v[i : i + 1, :n] if v.dim() == 2 else v[i : i + 1] for k, v in inputs.items()
            }
            lo, al, _ = net(**alone)
            torch.testing.assert_close(logits[i : i + 1], lo, atol=1e-5, rtol=0)
            torch.testing.assert_close(alpha[i : i + 1, :n], al, atol=1e-5, rtol=0)
            text_len = e.token_types.count(0)  # type: ignore[union-attr]
            assert float(alpha[i, text_len:].abs().sum()) == 0.0  # no weight on the words
            assert float(alpha[i, :text_len].sum()) == pytest.approx(1.0, abs=1e-5)


def test_the_category_words_move_the_answer(tiny_transformer: Path) -> None:
    """Same text, same category id: only the words after [SEP] differ."""
    cfg, net, pipe = pair_net(tiny_transformer)
    a = encode_category(pipe, "the pizza was great", 0, "food")
    b = encode_category(pipe, "the pizza was great", 0, "service")
    with torch.no_grad():
        la, _, _ = net(**to_tensors([a], pipe.pad_id))
        lb, _, _ = net(**to_tensors([b], pipe.pad_id))
    assert not torch.allclose(la, lb)
    with pytest.raises(ValueError, match="token_type_ids"):
        inputs = to_tensors([a], pipe.pad_id)
        del inputs["token_type_ids"]
        net(**inputs)


def test_a_pair_needs_a_transformer() -> None:
    with pytest.raises(ValueError, match="category_pair needs encoder='transformer'"):
        ModelConfig(category_pair=True)
    cfg = replace(ModelConfig(encoder="transformer", embed_dim=8), category_pair=True)
    assert not cfg.pair  # a term model carries the flag unused until made a category one


def test_the_tiny_pair_model_learns_the_synthetic_set(pair_category_run: Path) -> None:
    assert read_metrics(pair_category_run)["dev"]["accuracy"] == 1.0


def test_the_artifact_takes_token_type_ids_and_matches_torch(
    pair_category_run: Path, pair_category_artifact: Path
) -> None:
    meta = artifact.load(pair_category_artifact).metadata
    assert meta["onnx"]["inputs"] == [
        "input_ids",
        "attention_mask",
        "category_ids",
        "token_type_ids",
    ]
    assert meta["model_config"]["category_pair"] is True
    assert meta["parity"]["prediction_mismatches"] == 0
    run = load_run(pair_category_run)
    items = encode_all(run.pipeline, EXAMPLES, run.model_config.categories, pair=True)
    with torch.no_grad():
        logits, _, _ = run.net(**to_tensors(items, run.pipeline.pad_id))
    ref = torch.softmax(logits / meta["calibration"]["temperature"], -1).numpy()
    rt = Runtime.load(pair_category_artifact, device="cpu", threads=1, task="category")
    # the runtime builds the pair itself from the category's id (no torch on this path)
    built = [rt.encode_category(e.text, rt.categories.index(e.category)) for e in EXAMPLES]
    assert [b.ids for b in built] == [i.ids for i in items]
    got = np.stack([o.probs for o in rt.run(built)])  # batches of mixed lengths
    np.testing.assert_allclose(got, ref, atol=1e-5)
    p = CategoryPredictor(rt)
    assert [p(e.text, [e.category])[0].label for e in EXAMPLES] == [e.label for e in EXAMPLES]


def test_an_unknown_category_of_a_long_list_is_told_its_near_names_not_every_name() -> None:
    """ACOS's 61 categories were all listed in one message (a 413 answer's worth of text to
    find the one meant); a short list still is listed whole."""
    from absa.errors import InputError
    from absa.model.categories import category_id

    entities = ["LAPTOP", "BATTERY", "DISPLAY", "KEYBOARD", "SUPPORT", "OS", "CPU", "MEMORY"]
    attributes = ["GENERAL", "PRICE", "QUALITY", "DESIGN_FEATURES", "OPERATION_PERFORMANCE",
                  "USABILITY", "PORTABILITY", "CONNECTIVITY"]  # fmt: skip
    many = [f"{e}#{a}" for e in entities for a in attributes]
    with pytest.raises(InputError) as err:
        category_id(many, "laptop#prices")
    said = str(err.value)
    assert said.startswith("unknown category 'laptop#prices'; close: LAPTOP#PRICE"), said
    assert f"{len(many)} known" in said and "MEMORY#USABILITY" not in said
    with pytest.raises(InputError, match=r"; known: ambience, food, service$"):
        category_id(["ambience", "food", "service"], "drinks")
    with pytest.raises(InputError) as err:
        category_id(many, "zzz")
    assert "close" not in str(err.value) and f"{len(many)} known" in str(err.value)
