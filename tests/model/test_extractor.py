"""The aspect extractor: BIO decoding, span scores, the exported tagger under onnxruntime,
and the artifact kind that keeps taggers and sentiment models apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from absa.errors import ArtifactError
from absa.model.spans import B, I, O, decode, overlaps_any, span_scores, spans_of, viterbi
from absa.model.text import tokenize
from tests.helpers import EMPTY_SENTENCES, extraction_sentences


def test_bio_tags_round_trip_to_the_same_spans() -> None:
    from absa.model.spans import bio_tags

    text = "the wine list and the pizza were fine"
    tokens = tokenize(text)
    spans = {(4, 13), (22, 27)}
    tags = bio_tags(tokens, spans)
    assert tags == [O, B, I, O, O, B, O, O]
    assert {(s, e) for _, _, s, e in spans_of(tags, tokens)} == spans


def test_viterbi_keeps_spans_well_formed_and_apart() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        probs = rng.dirichlet(np.ones(3), size=int(rng.integers(1, 9)))
        path = viterbi(probs)
        assert len(path) == len(probs)
        for prev, tag in zip([O, *path], path, strict=False):
            assert not (tag == I and prev == O), path  # a span starts with B
            assert not (tag == B and prev != O), path  # two spans never touch


def test_two_touching_spans_are_decoded_as_one_or_apart() -> None:
    tokens = tokenize("live entertainment")
    probs = np.array([[0.1, 0.8, 0.1], [0.1, 0.5, 0.4]])  # per word: B, then B (or I)
    assert [(f.start, f.end) for f in decode(probs, tokens)] == [(0, 18)]


@pytest.mark.parametrize(
    ("text", "tags", "term"),
    [
        ('the "wine" was', [O, B, I, O, O], "wine"),  # the opening quote taken in
        ('the "wine list" was', [O, B, I, I, I, O], '"wine list"'),  # a pair stays
        ("the (screen) is", [O, O, B, I, O], "screen"),  # the closing bracket alone
        ("host (owner) was", [B, I, I, I, O], "host (owner)"),
        ('a 15" screen', [O, B, I, I], '15" screen'),  # inches
        ('the wine" was', [O, B, I, O], "wine"),
        ('the " was', [O, B, O], None),  # nothing but the quote: no term
        ("the chef 's special", [O, B, I, I], "chef 's special"),  # a clitic stays
        ("the pasta\xad was", [O, B, O], "pasta"),  # an invisible soft hyphen at the end
        ("the \u200dpasta\u200d was", [O, B, O], "pasta"),  # joiners, in its token, left out
        ("the pasta\xad, was", [O, B, O, O], "pasta"),  # a joiner does not take the comma in
        ("(\u200dpasta was", [B, I, O], "pasta"),
        ("the \U0001f600 was", [O, B, O], None),  # no letter or digit: no term
    ],
)
def test_a_quote_or_bracket_without_its_partner_leaves_the_term(
    text: str, tags: list[int], term: str | None
) -> None:
    """The shipped tagger took the opening quote of '"wine" was' into the term (\"wine);
    annotated terms hold quotes and brackets in pairs only, so an unpaired one at an edge
    is left out, and the confidence is still that of the span the tagger chose."""
    check_decoded(text, tokenize(text), tags, term)


@pytest.mark.parametrize(
    ("text", "tags", "term"),
    [
        ("wifi \U0001f4f6 is bad", [B, I, O, O], "wifi"),
        ("\U0001f354 burger was", [B, I, O], "burger"),
        ("the service\U0001f44e was", [O, B, I, O], "service"),
        ("the coffee \u2615\ufe0f was", [O, B, I, O], "coffee"),  # with its emoji selector
        ("the \U0001f44d\U0001f3fd pizza", [O, B, I], "pizza"),  # with its skin tone: one token
        ("the screen\u2122 is", [O, B, I, O], "screen"),
        ("the $ price", [O, B, I], "$ price"),  # a currency sign is no pictograph
        ("a 1\ufe0f\u20e3 pizza", [O, B, I], "1\ufe0f\u20e3 pizza"),  # a keycap digit stays
    ],
)
def test_an_emoji_or_symbol_at_an_edge_leaves_the_term(
    text: str, tags: list[int], term: str
) -> None:
    """The shipped tagger took an emoji beside a term into it ('wifi 📶', 'service👎',
    'coffee ☕'); none of the 24,172 annotated terms of the training data starts or ends
    with a pictograph, so one at an edge is left out, as an unpaired quote is."""
    check_decoded(text, tokenize(text), tags, term)


@pytest.mark.parametrize(
    ("text", "tags", "term"),
    [
        ("the check-in was", [O, B, O, O, O], "check-in"),  # stopped at the hyphen
        ("the self-service kiosk", [O, O, O, B, I], "self-service kiosk"),  # began after it
        ("the check-in-desk was", [O, B, O, O, O, O, O], "check-in-desk"),
        ("a pizza - tasty", [O, B, O, O], "pizza"),  # a dash between spaced words: not one
        ("the wi-fi was", [O, B, I, I, O], "wi-fi"),
        ("the check-in was", [O, B, I, O, O], "check-in"),  # the hyphen at its end
        ("the check-in was", [O, O, B, I, O], "check-in"),  # the hyphen at its start
        ("the wi\u2011fi was", [O, B, O, O, O], "wi\u2011fi"),  # a non-breaking hyphen
        ("the check\u2013in was", [O, B, O, O, O], "check"),  # an en dash joins no word
    ],
)
def test_a_term_is_never_cut_inside_a_hyphenated_word(
    text: str, tags: list[int], term: str
) -> None:
    """The word tokenizer makes a hyphen a word of its own, and the shipped tagger stopped
    at one: "check" of "The check-in was slow", "service kiosk" of "self-service kiosk"."""
    check_decoded(text, tokenize(text), tags, term)


@pytest.mark.parametrize(
    ("text", "tags", "terms"),
    [
        ("the food-quality was", [O, B, O, B, O], ["food-quality"]),  # both halves widened
        ("self-service kiosk", [B, O, B, I], ["self-service kiosk"]),  # a half in the whole
    ],
)
def test_widened_halves_of_one_word_are_one_term(
    text: str, tags: list[int], terms: list[str]
) -> None:
    """Each half of a hyphenated word the tagger marked widened to the whole word, and the
    service answered it twice ("Price-Value" twice in a review of the training data)."""
    probs = np.full((len(tags), 3), 0.05)
    probs[np.arange(len(tags)), tags] = 0.9
    found = decode(probs, tokenize(text))
    assert [text[f.start : f.end] for f in found] == terms


def test_the_shipped_extractor_leaves_emoji_out_of_terms() -> None:
    from absa import load

    clf = load(extractor="shipped", device="cpu")
    for text, term in [
        ("wifi \U0001f4f6 is bad", "wifi"),
        ("the coffee \u2615 was hot", "coffee"),
        ("the service\U0001f44e was slow", "service"),
        ("\U0001f354 burger was great", "burger"),
    ]:
        assert [(p.term, text[p.start : p.end]) for p in clf(text)] == [(term, term)], text


@pytest.mark.parametrize(
    ("text", "tags", "term"),
    [
        ("the \x00food was", [O, B, I, O], "food"),  # a NUL before the term
        ("the food\x07 was", [O, B, I, O], "food"),  # a bell after it
        ("\x1b\x7ffood was", [B, I, I, O], "food"),  # escape and delete, both
        ("the \x00 was", [O, B, O], None),  # nothing but the control character: no term
    ],
)
def test_a_control_character_at_an_edge_leaves_the_term(
    text: str, tags: list[int], term: str | None
) -> None:
    """A control character (Unicode Cc: NUL, bell, escape, delete) beside a term stayed in
    it ('\x00food'): only the format characters (Cf) were invisible to the trim."""
    check_decoded(text, tokenize(text), tags, term)


def test_the_shipped_extractor_leaves_control_characters_out_of_terms() -> None:
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR, Extractor

    ext = Extractor.load(DEFAULT_EXTRACTOR_DIR, device="cpu", threads=1)
    texts = ["The \x00food was great", "\x1bfood was great", "The \x00\x00food was great"]
    for text, found in zip(texts, ext.extract(texts), strict=True):
        assert [text[f.start : f.end] for f in found] == ["food"], text


@pytest.mark.parametrize(
    ("version", "tags", "term"),
    [
        (1, [O, B, O, O], "pasta"),  # version 1 reads "'pasta": the glued quote leaves
        (1, [O, B, I, O], "'pasta'"),  # its partner inside: a pair stays
        (2, [O, B, I, O, O], "pasta"),  # version 2 reads ' and pasta: the quote leaves
        (2, [O, B, I, I, O], "'pasta'"),
        (2, [O, O, B, O, O], "pasta"),
    ],
)
def test_a_quoted_word_under_either_word_tokenizer(
    version: int, tags: list[int], term: str
) -> None:
    text = "the 'pasta' was"
    check_decoded(text, tokenize(text, version), tags, term)


def check_decoded(text: str, tokens: list, tags: list[int], term: str | None) -> None:
    assert len(tokens) == len(tags)
    probs = np.full((len(tags), 3), 0.05)
    probs[np.arange(len(tags)), tags] = 0.9
    found = decode(probs, tokens)
    assert [text[f.start : f.end] for f in found] == ([term] if term else [])
    if term:
        after = 0.95 if tags[-1] == O else 1.0  # the word after the span is not I
        assert found[0].confidence == pytest.approx(0.9 ** (len(tags) - tags.count(O)) * after)


def test_decode_confidence_is_the_span_probability() -> None:
    text = "the wine list was fine"
    tokens = tokenize(text)
    probs = np.array(
        [[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.2, 0.1, 0.7], [0.6, 0.1, 0.3], [0.9, 0.05, 0.05]]
    )
    (found,) = decode(probs, tokens)
    assert (text[found.start : found.end], found.confidence) == (
        "wine list",
        pytest.approx(0.8 * 0.7 * (1 - 0.3)),
    )


def test_overlaps_any_needs_a_shared_character() -> None:
    assert overlaps_any((4, 9), [(0, 2), (8, 12)])
    assert overlaps_any((4, 9), [(5, 6)])  # inside
    assert not overlaps_any((4, 9), [(0, 4), (9, 12)])  # touching ends share none
    assert not overlaps_any((4, 9), [])


def test_span_scores_count_exact_matches_only() -> None:
    rep = span_scores([{(0, 4), (10, 15)}, set()], [{(0, 4), (10, 14)}, {(1, 2)}])
    assert (rep["true_positives"], rep["gold"], rep["predicted"]) == (1, 2, 3)
    assert rep["precision"] == pytest.approx(100 / 3)
    assert rep["recall"] == pytest.approx(50.0)
    assert rep["f1"] == pytest.approx(40.0)


def test_extractor_finds_the_trained_aspects_and_nothing_else(extractor_artifact: Path) -> None:
    from absa.model.extractor import Extractor

    ext = Extractor.load(extractor_artifact, device="cpu")
    sentences = extraction_sentences()
    found = ext.extract([s.text for s in sentences])
    assert [{(f.start, f.end) for f in spans} for spans in found] == [s.span_set for s in sentences]
    assert all(0.0 < f.confidence <= 1.0 for spans in found for f in spans)
    assert ext.extract(list(EMPTY_SENTENCES)) == [[], [], []]


def test_batches_and_windows_do_not_change_the_answer(extractor_artifact: Path) -> None:
    from absa.model.extractor import Extractor

    ext = Extractor.load(extractor_artifact, device="cpu")
    texts = [s.text for s in extraction_sentences()]
    alone = [ext.extract([t])[0] for t in texts]
    assert ext.extract(texts, max_batch=7) == alone  # padding to other lengths changes nothing
    long = " . ".join(texts[:20])  # more words than a window holds: tagged window by window
    assert len(tokenize(long)) > ext.text.max_len
    spans = ext.extract([long])[0]
    assert len(spans) >= 30  # both aspects of most of the 20 sentences, past the first window
    assert max(f.start for f in spans) > tokenize(long)[ext.text.max_len].start


def test_training_decodes_a_long_text_as_the_served_extractor_does(
    tagger_run: Path, extractor_artifact: Path
) -> None:
    """Dev scoring (torch) decoded a text of several windows window by window, where the
    served extractor stitches them: an aspect across the seam was two terms in one and one
    in the other, so a run and its artifact disagreed, and epochs were chosen on the wrong
    decoder."""
    from absa.cli.extract import predict_spans

    texts = [s.text for s in extraction_sentences()][:4]
    assert "wine list" in texts[3]  # its 7th and 8th words
    longs = ["and " * filler + " . ".join(texts[3::-1]) for filler in range(118, 126)]
    served = predict_spans(extractor_artifact, longs, by_sentence=False)  # windows, not cuts
    assert predict_spans(tagger_run, longs, by_sentence=False) == served
    across = [(t, a, b) for t, spans in zip(longs, served, strict=True) for a, b in spans
              if a < tokenize(t)[128].start < b]  # fmt: skip
    assert [t[a:b] for t, a, b in across] == ["wine list"]  # the case they differed on


def test_export_records_parity_and_a_kind_of_its_own(extractor_artifact: Path) -> None:
    from absa.model import artifact

    meta = artifact.read_metadata(extractor_artifact, artifact.EXTRACTOR_KIND)
    assert meta["parity"]["prediction_mismatches"] == 0
    assert meta["parity"]["max_abs_diff"] <= artifact.PARITY_ATOL
    assert meta["labels"] == ["O", "B", "I"]
    assert "chars.json" in meta["files"]
    assert (extractor_artifact / "README.md").read_text().startswith("# absa-extractor x1")


def test_a_sentiment_model_and_a_tagger_are_never_swapped(
    extractor_artifact: Path, artifact: Path
) -> None:
    from absa.model.extractor import Extractor
    from absa.model.runtime import Runtime

    # each error says what the directory is and where it goes instead
    with pytest.raises(ArtifactError) as e:
        Runtime.load(extractor_artifact, device="cpu")
    assert str(e.value) == (
        f"{extractor_artifact}: is an aspect extractor (kind 'absa-extractor'), but a "
        "sentiment model is needed here (give it as ABSA_EXTRACTOR, --extractor, "
        "absa.load(extractor=path))"
    )
    with pytest.raises(ArtifactError) as e:
        Extractor.load(artifact, device="cpu")
    assert str(e.value) == (
        f"{artifact}: is a sentiment model (kind 'absa-artifact'), but an aspect extractor "
        "is needed here (give it as ABSA_MODEL_DIR, --model, absa.load(path))"
    )


def test_a_changed_character_list_is_refused(extractor_artifact: Path, tmp_path: Path) -> None:
    from absa.model.extractor import Extractor

    copy = tmp_path / "x"
    shutil.copytree(extractor_artifact, copy)
    (copy / "chars.json").write_text('["<pad>", "<unk>", "a"]', encoding="utf-8")
    with pytest.raises(ArtifactError, match="chars.json: sha256"):
        Extractor.load(copy, device="cpu")


def test_a_character_list_without_a_checksum_is_refused(
    extractor_artifact: Path, tmp_path: Path
) -> None:
    """The model reads chars.json: metadata that leaves it out of ``files`` would let it change
    unseen, so such an artifact is refused (as one whose model file has no checksum is)."""
    from absa.model import artifact
    from absa.model.extractor import Extractor

    copy = tmp_path / "x"
    shutil.copytree(extractor_artifact, copy)
    meta = artifact.read_metadata(copy, artifact.EXTRACTOR_KIND)
    del meta["files"]["chars.json"]
    artifact.write_metadata(copy, meta)
    chars = json.loads((copy / "chars.json").read_text(encoding="utf-8"))
    chars[2], chars[3] = chars[3], chars[2]  # as many characters: only a checksum sees it
    (copy / "chars.json").write_text(json.dumps(chars), encoding="utf-8")
    with pytest.raises(ArtifactError, match="chars.json' has no checksum"):
        Extractor.load(copy, device="cpu")


def test_the_shipped_extractor_finds_aspects_and_stays_small() -> None:
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR, Extractor
    from absa.model.runtime import DEFAULT_MODEL_DIR

    if not DEFAULT_EXTRACTOR_DIR.is_dir():
        pytest.skip("no shipped extractor in this checkout")
    ext = Extractor.load(DEFAULT_EXTRACTOR_DIR, device="cpu")
    text = "The fries were soggy but the burger was great."
    assert {text[f.start : f.end] for f in ext.extract([text])[0]} == {"fries", "burger"}
    size = sum(f.stat().st_size for f in DEFAULT_EXTRACTOR_DIR.iterdir())
    shipped = size + sum(f.stat().st_size for f in DEFAULT_MODEL_DIR.iterdir())
    assert size < 8_000_000 and shipped < 25_000_000


@pytest.mark.parametrize("filler", [124, 126, 127, 200])
def test_an_aspect_across_a_window_seam_is_one_term(filler: int) -> None:
    """The shipped extractor reads 128 words a window; back-to-back windows cut "battery
    life" in two where the seam fell between its words (126 filler words)."""
    from absa import load

    text = "word " * filler + "the battery life is great but the goat cheese salad was bland ."
    found = load(extractor="shipped").predictor.extractor.extract([text])[0]
    terms = [text[f.start : f.end] for f in found]
    assert "battery life" in terms and "goat cheese salad" in terms, terms
    assert all(0.0 <= f.confidence <= 1.0 for f in found)


def test_no_extracted_term_is_longer_than_a_term_may_be() -> None:
    """The shipped extractor tagged 'food food food ...' (300 words) as one term of 1,499
    characters, which /v1/predict would refuse if sent back as an aspect (200 at most)."""
    from absa.api import load
    from absa.model.aspects import MAX_TERM_CHARS
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR

    clf = load(extractor=DEFAULT_EXTRACTOR_DIR, device="cpu")
    found = clf("food " * 300)
    assert all(len(p.term) <= MAX_TERM_CHARS for p in found)
    assert [p.term for p in clf("The wine list was great.")] == ["wine list"]


def test_accents_composed_or_not_find_the_same_terms() -> None:
    """The character CNN read "crème" (NFC) and "cre\u0300me" (NFD) differently: the
    shipped extractor found "crème brûlée" in one form only."""
    import unicodedata

    from absa import load

    ext = load(extractor="shipped").predictor.extractor
    for text in ("The crème brûlée was great", "the jalapeño poppers and the café au lait"):
        forms = [unicodedata.normalize(f, text) for f in ("NFC", "NFD")]
        assert forms[0] != forms[1]
        found = ext.extract(forms)
        terms = [
            [(unicodedata.normalize("NFC", t[f.start : f.end]), round(f.confidence, 5)) for f in fs]
            for t, fs in zip(forms, found, strict=True)
        ]
        assert terms[0] == terms[1], terms


def test_tagger_outputs_that_are_not_numbers_fail_parity() -> None:
    """NaN probabilities (a run trained at temperature 0 wrote NaN weights): "nan > atol" is
    False, so "max |diff| nan, 0 decoded differently" passed and the artifact never loaded."""
    from absa.errors import ParityError
    from absa.model.tagger_export import _check_parity
    from absa.model.tagtext import Window

    tokens = tokenize("the wine list")
    window = Window(tokens, [1, 2, 3], [])
    good = np.full((3, 3), 1 / 3)
    for bad in (np.full((3, 3), np.nan), np.array([[np.nan, 0.5, 0.5], [1, 0, 0], [1, 0, 0]])):
        # NaN in a later window too: Python's max() kept the first number it saw
        with pytest.raises(ParityError, match="max \\|diff\\| nan"):
            _check_parity([good, bad], [good, bad.copy()], [window, window])


def test_evaluate_tags_a_sentence_at_a_time_as_the_service_does(
    tagger_run: Path, extractor_artifact: Path
) -> None:
    """``absa evaluate`` (``predict_spans``) tagged a text of several sentences whole where
    the service cuts it into sentences first: it scored an extraction other than the one
    served. A run (torch) and its artifact now both cut as the service does."""
    from absa.cli.extract import predict_spans
    from absa.model.extractor import Extractor

    texts = [s.text for s in extraction_sentences()]
    said = [f"{t[0].upper()}{t[1:]} ." for t in texts]  # sentences the splitter cuts apart
    reviews = [" ".join(said[i : i + 6]) for i in range(0, len(said) - 5, 3)]
    found = Extractor.load(extractor_artifact, device="cpu").extract(reviews, by_sentence=True)
    served = [{(f.start, f.end) for f in spans} for spans in found]
    assert predict_spans(extractor_artifact, reviews) == served
    assert predict_spans(tagger_run, reviews) == served
    whole = predict_spans(extractor_artifact, reviews, by_sentence=False)
    assert whole != served  # the texts are ones where tagging whole finds other spans
