"""Static word vectors distilled from a transformer: the word list, the pooling, PCA and the
GloVe-format file a GloVe model then reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from absa.training import static_vectors as sv
from absa.training.embeddings import load_glove


def test_word_list_keeps_gloves_head_then_adds_the_texts_words() -> None:
    glove = ["the", "food", "was", "good", "rare"]
    words = sv.word_list(glove, ["The sushi was soggy , soggy !", "Great sushi"], top_k=3)
    assert words[:3] == ["the", "food", "was"]  # what glove_top_k takes from the file's head
    assert words[3:] == ["soggy", "sushi", "!", ",", "great"]  # most frequent first, then a-z
    assert len(set(words)) == len(words)


def test_encode_words_averages_each_words_own_pieces(tiny_transformer: Path) -> None:
    model, tok = sv.load_encoder(tiny_transformer)
    words = ["food", "unbelievably", "soggy", "a"]
    batched = sv.encode_words(model, tok, words, batch_size=3)  # mixed lengths, padded
    assert batched.shape == (4, 32) and np.isfinite(batched).all()
    for i, w in enumerate(words):
        enc = tok.encode(w)
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([enc.ids])).last_hidden_state[0]
        own = [j for j, s in enumerate(enc.special_tokens_mask) if not s]
        np.testing.assert_allclose(batched[i], hidden[own].mean(0).numpy(), atol=1e-5)
    assert not np.allclose(batched[0], batched[2])


def test_pca_keeps_the_directions_of_most_variance() -> None:
    rng = np.random.default_rng(0)
    signal = rng.normal(size=(200, 2)) * [10.0, 5.0]
    matrix = signal @ rng.normal(size=(2, 8)) + rng.normal(scale=0.01, size=(200, 8))
    reduced = sv.pca(matrix, 2)
    assert reduced.shape == (200, 2) and reduced.dtype == np.float32
    kept = reduced.var(0).sum() / (matrix - matrix.mean(0)).var(0).sum()
    assert kept > 0.999
    with pytest.raises(ValueError, match="dim"):
        sv.pca(matrix, 9)


def test_rescale_sets_the_spread() -> None:
    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert sv.rescale(m, 0.4).std() == pytest.approx(0.4)


def test_written_vectors_read_back_as_a_glove_file(tmp_path: Path) -> None:
    words = ["food", "soggy", "é"]
    matrix = np.array([[0.5, -1.25], [1e-3, 2.0], [3.0, -0.0625]], np.float32)
    path = tmp_path / "v" / "vectors.txt"
    sv.write_glove_text(path, words, matrix)
    got_words, got = load_glove(str(path))
    assert got_words == words
    np.testing.assert_allclose(got, matrix, rtol=1e-4)
    assert not list(path.parent.glob("*.tmp"))
    with pytest.raises(ValueError, match="white space"):
        sv.write_glove_text(tmp_path / "bad.txt", ["two words", "x", "y"], matrix)
    with pytest.raises(ValueError, match="3 words but 2"):
        sv.write_glove_text(tmp_path / "bad.txt", words, matrix[:2])
    assert not (tmp_path / "bad.txt").exists()


def test_load_encoder_refuses_what_is_not_an_encoder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="neither a training run"):
        sv.load_encoder(tmp_path)


def test_encode_in_context_sums_each_words_states_over_its_sentences(
    tiny_transformer: Path,
) -> None:
    model, tok = sv.load_encoder(tiny_transformer)
    texts = ["The sushi was unbelievably soggy", "Soggy fries .", "", "soggy", "soggy"]
    words = ["soggy", "sushi", "the", "unbelievably", "absent"]
    sums, counts = sv.encode_in_context(model, tok, texts, words, batch_size=2)  # padded
    assert counts.tolist() == [3, 1, 1, 1, 0]  # "soggy" given twice is read once
    assert not sums[4].any()

    def state(text: str, word: int) -> np.ndarray:  # the sentence alone, no padding
        enc = tok.encode([t.text for t in sv.tokenize(text)], is_pretokenized=True)
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([enc.ids])).last_hidden_state[0]
        own = [j for j, w in enumerate(enc.word_ids) if w == word]
        return hidden[own].mean(0).numpy()

    soggy = state(texts[0], 4) + state(texts[1], 0) + state(texts[3], 0)
    np.testing.assert_allclose(sums[0], soggy, atol=1e-4)
    np.testing.assert_allclose(sums[3], state(texts[0], 3), atol=1e-4)  # several pieces
    alone = sv.encode_words(model, tok, words)
    pooled = sv.pooled_vectors(alone, sums, counts)
    np.testing.assert_allclose(pooled[0], (soggy + alone[0]) / 4, atol=1e-4)
    np.testing.assert_allclose(pooled[4], alone[4])  # seen nowhere: encoded alone
    assert not np.allclose(pooled[1], alone[1])


def test_encode_in_context_reads_a_long_text_up_to_max_pieces(tiny_transformer: Path) -> None:
    model, tok = sv.load_encoder(tiny_transformer)
    text = " ".join(["food"] * 30 + ["soggy"])
    sums, counts = sv.encode_in_context(model, tok, [text], ["food", "soggy"], max_pieces=12)
    assert counts.tolist() == [10, 0]  # [CLS], 10 words, [SEP]: the rest is not read
    assert len(tok.encode(text).ids) == 34  # the tokenizer is given back untruncated


def test_a_failed_write_leaves_no_temporary_file_and_writes_over_none(tmp_path: Path) -> None:
    """The write goes through a new temporary name: a user's ``X.tmp`` is not written over,
    and a write that fails (here ``X`` is a directory) leaves no temporary file behind."""
    words, matrix = ["food", "soggy"], np.ones((2, 3), np.float32)
    (tmp_path / "v.txt.tmp").write_text("the user's\n")
    sv.write_glove_text(tmp_path / "v.txt", words, matrix)
    assert (tmp_path / "v.txt.tmp").read_text() == "the user's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.txt", "v.txt.tmp"]
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(IsADirectoryError):
        sv.write_glove_text(tmp_path / "d.txt", words, matrix)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt", "v.txt", "v.txt.tmp"]
    assert not list((tmp_path / "d.txt").iterdir())


def test_build_refuses_an_existing_out_before_any_work(tmp_path: Path) -> None:
    """Neither the GloVe file nor the encoder named here exists: the refusal comes first."""
    nothing = tmp_path / "nothing"
    out = tmp_path / "v.txt"
    out.write_text("the user's\n")
    with pytest.raises(FileExistsError, match=r"v\.txt exists; write the vectors file"):
        sv.build(nothing, ["the food"], out, dim=2, glove=str(nothing))
    assert out.read_text() == "the user's\n"
    (tmp_path / "w.txt.json").mkdir()  # where the record would go
    with pytest.raises(FileExistsError, match=r"w\.txt\.json exists and is not the record of"):
        sv.build(nothing, ["the food"], tmp_path / "w.txt", dim=2, glove=str(nothing))
    with pytest.raises(NotADirectoryError, match=r"v\.txt is not a directory"):
        sv.build(nothing, ["the food"], out / "x.txt", dim=2, glove=str(nothing))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.txt", "w.txt.json"]
