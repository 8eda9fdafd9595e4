"""Vocabulary expansion (training/vocab_expansion.py): words a run never trained on get rows
in its tuned table through a linear map fitted on the words it did train on."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from absa.cli import main
from absa.model.runtime import Runtime
from absa.training.embeddings import load_glove
from absa.training.evaluate import evaluate
from absa.training.exporting import export_run
from absa.training.rundir import load_run, read_dev_examples
from absa.training.train import fit
from absa.training.vocab_expansion import (
    apply_map,
    expand_vocabulary,
    fit_map,
    trained_rows,
)
from tests.helpers import ONNX_EXPORT_WARNINGS, synthetic_examples, tiny_preset

pytestmark = ONNX_EXPORT_WARNINGS

GREAT = "the food was great but the service was awful"
SUPERB = "the food was superb but the service was awful"  # "superb": never in training


def table(run_dir: Path) -> np.ndarray:
    return load_run(run_dir).net.encoder.table.weight.detach().numpy().copy()


def write_vectors(path: Path, words: list[str], rows: np.ndarray) -> Path:
    lines = [w + " " + " ".join(f"{x:.7f}" for x in r) for w, r in zip(words, rows, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tuned_with_synonym(run_dir: Path, path: Path) -> Path:
    """A vectors file of the run's own tuned rows, plus "superb" given the row of "great"."""
    run = load_run(run_dir)
    words, rows = run.pipeline.words[2:], table(run_dir)[2:]
    great = rows[words.index("great")]
    return write_vectors(path, [*words, "superb"], np.vstack([rows, great]))


def probs(artifact: Path, text: str) -> np.ndarray:
    start = text.index("food")
    return Runtime.load(artifact, device="cpu", threads=1).predict_proba(
        [(text, start, start + 4)]
    )[0]


# --------------------------------------------------------------------------- the parts


def test_trained_rows_are_those_that_left_their_start() -> None:
    rng = np.random.default_rng(0)
    start = rng.normal(size=(6, 4)).astype(np.float32)
    tuned = start.copy()
    tuned[2] *= 0.7  # weight decay alone: the same direction
    tuned[3] += 0.05 * rng.normal(size=4)  # moved by gradients
    tuned[5] = -start[5]  # reversed: moved
    tuned[1] += 1.0  # <unk> is never counted
    assert trained_rows(tuned, start).tolist() == [3, 5]


def test_the_map_recovers_a_linear_relation() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 5))
    w, b = rng.normal(size=(5, 3)), rng.normal(size=3)
    got, r2 = fit_map(x, x @ w + b, ridge=1e-8)
    assert r2 == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(got[:5], w, atol=1e-6)
    np.testing.assert_allclose(got[5], b, atol=1e-6)
    np.testing.assert_allclose(apply_map(x[:3], got), (x @ w + b)[:3], atol=1e-5)


def test_the_fit_of_targets_that_do_not_vary_has_a_finite_r2_and_no_warning() -> None:
    """One trained row (a vectors file that matches a single trained word) or rows all alike:
    R² is undefined; it was -inf, with numpy's divide-by-zero warning, in the report."""
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(4, 5)), rng.normal(size=(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fit_map(x[:1], y[:1], ridge=1.0)[1] == 0.0  # the ridge leaves a residual
        assert fit_map(x, np.tile(y[:1], (4, 1)), ridge=1.0)[1] == 0.0
        assert fit_map(x, np.zeros((4, 3)), ridge=1.0)[1] == 1.0  # fitted exactly: w = 0


# --------------------------------------------------------------------------- a real run


def test_malformed_lines_of_the_source_are_counted_and_logged(
    tiny_run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Lines cut short were passed over silently; with all but one trained word's cut, the
    map fitted on one row and numpy warned of a division by zero."""
    import logging

    run = load_run(tiny_run)
    words, rows = run.pipeline.words[2:], table(tiny_run)[2:]
    lines = ["400000 50"]  # a word2vec header is not malformed
    lines += [words[0] + " " + " ".join(f"{x:.7f}" for x in rows[0]), ""]  # nor a blank line
    lines += [f"{w} {r[0]:.7f}" for w, r in zip(words[1:], rows[1:], strict=True)]  # cut short
    lines += ["superb " + " ".join(f"{x:.7f}" for x in rows[words.index("great")])]
    source = tmp_path / "v.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _, report = expand_vocabulary(run, source)
    bad = len(words) - 1
    assert report["source_malformed_lines"] == bad and report["fitted_on"] == 1
    assert report["added"] == 1 and report["r2"] == 0.0
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"{source}: {bad} malformed lines skipped (the first is line 4)" in said[0]


def test_an_unseen_word_is_read_as_the_word_whose_vector_it_has(
    tiny_run: Path, tmp_path: Path
) -> None:
    source = tuned_with_synonym(tiny_run, tmp_path / "v.txt")
    plain, grown = tmp_path / "plain", tmp_path / "grown"
    export_run(tiny_run, plain, version="t")
    meta = export_run(tiny_run, grown, version="t", expand_vocab=source)
    report = meta["vocab_expansion"]
    assert report["added"] == 1 and report["remapped_untrained"] == 0
    assert report["fitted_on"] == len(load_run(tiny_run).pipeline.words) - 2
    assert report["r2"] > 0.95 and report["source_sha256"] is not None
    vocab = json.loads((grown / "vocab.json").read_text())
    assert vocab[-1] == "superb" and meta["model_config"]["vocab_size"] == len(vocab)
    card = (grown / "README.md").read_text()
    assert "1 words added at export" in card and "one unknown word" in card
    assert "any other word reads as one unknown word" in (plain / "README.md").read_text()
    # the trained words are untouched, so a sentence of them is answered as before
    np.testing.assert_allclose(probs(grown, GREAT), probs(plain, GREAT), atol=1e-6)
    # "superb" was <unk>; now it is read nearly as "great"
    before = np.abs(probs(plain, SUPERB) - probs(plain, GREAT)).max()
    after = np.abs(probs(grown, SUPERB) - probs(grown, GREAT)).max()
    assert after < 0.05 and after < before / 2, (before, after)


def test_the_card_gives_the_served_networks_dev_scores_where_export_changed_it(
    tiny_run: Path, tmp_path: Path
) -> None:
    """The card gave the run's dev and file scores as the artifact's; after a vocabulary
    expansion `absa evaluate` on the artifact answers others (a run on 300 Rest14 aspects:
    dev accuracy 41.25 in the card, 40.00 served). It says whose they are, and the served
    graph's dev scores: those `absa evaluate` gives."""
    art = tmp_path / "grown"
    export_run(
        tiny_run, art, version="t", expand_vocab=tuned_with_synonym(tiny_run, tmp_path / "v")
    )
    served = evaluate(art, read_dev_examples(tiny_run))
    card = (art / "README.md").read_text(encoding="utf-8")
    assert (
        "- The scores above are the trained network's, before the vocabulary expansion at "
        f"export; as served, this directory scores accuracy {served['accuracy'] * 100:.2f} %, "
        f"macro-F1 {served['macro_f1'] * 100:.2f} % on the {served['n']} dev aspects."
    ) in card


def test_rows_training_never_moved_are_remapped_unless_kept(
    small_glove: Path, tmp_path: Path
) -> None:
    # GloVe words absent from the training text ("okay", the category words): idle rows
    preset = tiny_preset("atae-lstm", small_glove)
    preset = replace(preset, train=replace(preset.train, glove_top_k=1000, epochs=3))
    examples = synthetic_examples(6, seed=0)
    fit(examples, examples, preset, tmp_path / "run", progress=False)
    tuned, words = table(tmp_path / "run"), load_run(tmp_path / "run").pipeline.words
    idle = sorted(set(range(2, len(words))) - set(trained_rows(tuned, _start(tmp_path / "run"))))
    assert "okay" in [words[i] for i in idle] and "great" not in [words[i] for i in idle]
    gw, gm = load_glove(str(small_glove))
    source = write_vectors(tmp_path / "v.txt", gw, gm)

    run, report = expand_vocabulary(load_run(tmp_path / "run"), source)
    after = run.net.encoder.table.weight.detach().numpy()
    assert report["remapped_untrained"] == len(idle) and report["added"] == 0
    moved = [i for i in range(2, len(words)) if i not in idle]
    np.testing.assert_array_equal(after[moved], tuned[moved])
    assert not np.allclose(after[idle], tuned[idle])

    kept, report = expand_vocabulary(load_run(tmp_path / "run"), source, keep_untrained=True)
    assert report["remapped_untrained"] == 0
    np.testing.assert_array_equal(kept.net.encoder.table.weight.detach().numpy(), tuned)


def _start(run_dir: Path) -> np.ndarray:
    from absa.training.embeddings import embedding_matrix

    run = load_run(run_dir)
    gw, gm = load_glove(run.train_config.glove)
    return embedding_matrix(run.pipeline.words, gw, gm, run.train_config.seed)[0]


# --------------------------------------------------------------------------- the CLI


def test_absa_export_expands_the_first_n_words(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tuned_with_synonym(tiny_run, tmp_path / "v.txt")
    with source.open("a", encoding="utf-8") as f:  # two more new words, after "superb"
        f.write("fabulous " + " ".join(["0.1"] * 50) + "\n")
        f.write("dreadful " + " ".join(["-0.1"] * 50) + "\n")
    n = len(source.read_text().splitlines())
    out = tmp_path / "a"
    rc = main(["export", "--run", str(tiny_run), "--out", str(out), "--expand-vocab", str(source),
               "--expand-top-k", str(n - 1)])  # fmt: skip
    assert rc == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["vocab_expansion"]["added"] == 2  # superb, fabulous; not dreadful
    assert json.loads((out / "vocab.json").read_text())[-2:] == ["superb", "fabulous"]


def test_expand_top_k_alone_is_refused(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["export", "--run", str(tiny_run), "--out", str(tmp_path / "a"), "--expand-top-k", "5"]
    )
    assert rc == 2 and "--expand-top-k needs --expand-vocab" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


# --------------------------------------------------------------------------- a tagger


def test_a_tagger_run_is_expanded_the_same_way(tagger_run: Path, tmp_path: Path) -> None:
    from absa.model.extractor import Extractor
    from absa.training.tagging_run import export_tag_run, load_tag_run

    run = load_tag_run(tagger_run)
    words = run.text.words.words[2:]
    rows = run.net.words.table.weight.detach().numpy()[2:]
    pizza = rows[words.index("pizza")]
    source = write_vectors(tmp_path / "v.txt", [*words, "lasagna"], np.vstack([rows, pizza]))
    out = tmp_path / "x"
    meta = export_tag_run(tagger_run, out, version="x", expand_vocab=source)
    assert meta["vocab_expansion"]["added"] == 1 and meta["vocab_expansion"]["r2"] > 0.95
    assert json.loads((out / "vocab.json").read_text())[-1] == "lasagna"
    text = "the lasagna was great but the service was awful"
    found = Extractor.load(out, device="cpu").extract([text])[0]
    assert [text[f.start : f.end] for f in found] == ["lasagna", "service"]


def test_a_transformer_run_is_refused_and_nothing_is_written(
    pair_category_run: Path, tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tuned_with_synonym(tiny_run, tmp_path / "v.txt")
    out = tmp_path / "a"
    rc = main(["export", "--run", str(pair_category_run), "--out", str(out), "--expand-vocab",
               str(source)])  # fmt: skip
    assert rc == 2 and "needs a word-table model" in capsys.readouterr().err
    assert not out.exists()


def test_an_expanded_tagger_can_keep_its_tables_in_int8(
    tagger_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quantize int8-embeddings on a tagger run: the lookup tables alone are int8 (no
    activation is quantised, so no answer depends on its batch), with the expansion."""
    from absa.model.extractor import Extractor
    from absa.training.tagging_run import load_tag_run

    run = load_tag_run(tagger_run)
    words = run.text.words.words[2:]
    rows = run.net.words.table.weight.detach().numpy()[2:]
    source = write_vectors(tmp_path / "v.txt", words, rows)
    fp32, int8 = tmp_path / "fp32", tmp_path / "int8"
    base = ["export", "--run", str(tagger_run), "--expand-vocab", str(source)]
    assert main([*base, "--out", str(fp32)]) == 0
    assert main([*base, "--out", str(int8), "--quantize", "int8-embeddings"]) == 0
    assert "int8:" in capsys.readouterr().out
    q = json.loads((int8 / "metadata.json").read_text())["quantization"]
    assert q["type"] == "int8-embeddings" and not q["per_channel"]
    assert q["bytes_fp32"] == (fp32 / "model.onnx").stat().st_size
    import onnx

    graph = onnx.load(int8 / "model.onnx").graph
    tables = [t for t in graph.initializer if t.data_type in (2, 3)]  # uint8 or int8
    vocab = len(json.loads((int8 / "vocab.json").read_text()))
    assert any(list(t.dims) == [vocab, rows.shape[1]] for t in tables)  # the word table, 8-bit
    assert q["max_abs_batch_dependence"] < 1e-6  # no dynamic activation scales
    assert q["windows_decoded_differently"] == 0
    assert "Quantised (int8-embeddings" in (int8 / "README.md").read_text()
    texts = ["the pizza was great but the service was awful"]
    # loading checks the checksums recorded for the quantised graph
    a, b = Extractor.load(fp32, device="cpu"), Extractor.load(int8, device="cpu")
    assert [(f.start, f.end) for f in a.extract(texts)[0]] == [
        (f.start, f.end) for f in b.extract(texts)[0]
    ]
