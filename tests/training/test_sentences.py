"""Sentence-level span data for extraction: XML keeps aspect-free sentences and conflict
terms, 3-line and JSONL records are grouped by sentence, splits hold out what they say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.training.records import DataError
from absa.training.sentences import (
    GoldSpan,
    Sentence,
    drop_sentences,
    keep_aspect_free,
    read_sentences,
    split,
)
from tests.helpers import data_dir

XML = """<?xml version="1.0" encoding="UTF-8"?>
<sentences>
  <sentence id="1"><text>The food was great but the wine list was short.</text>
    <aspectTerms>
      <aspectTerm term="food" polarity="positive" from="4" to="8"/>
      <aspectTerm term="wine list" polarity="conflict" from="27" to="36"/>
    </aspectTerms></sentence>
  <sentence id="2"><text>We went there on a Friday.</text></sentence>
  <sentence id="3"><text>Staff ok, staff rude.</text>
    <aspectTerms><aspectTerm term="staff" polarity="neutral" from="99" to="104"/></aspectTerms>
  </sentence>
</sentences>
"""


def test_xml_keeps_empty_sentences_and_conflict_terms(tmp_path: Path) -> None:
    path = tmp_path / "a.xml"
    path.write_text(XML, encoding="utf-8")
    got = read_sentences(path)
    assert [s.span_set for s in got] == [{(4, 8), (27, 36)}, set(), {(10, 15)}]
    assert [sp.label for sp in got[0].spans] == ["positive", "conflict"]
    assert got[1].source.endswith(":2")


def test_xml_term_not_in_text_names_the_sentence(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(XML.replace('term="food"', 'term="pasta"'), encoding="utf-8")
    with pytest.raises(
        DataError, match=r"bad.xml: sentence 1 \(line 5\): aspectTerm 'pasta'.* does not occur"
    ):
        read_sentences(path)


def test_3line_records_are_grouped_by_sentence(tmp_path: Path) -> None:
    path = tmp_path / "t.seg"
    path.write_text(
        "the $T$ was great but the wine was bad\nfood\n1\n"
        "the food was great but the $T$ was bad\nwine\n-1\n"
        "a $T$ here\nview\n0\n",
        encoding="utf-8",
    )
    got = read_sentences(path)
    assert [(s.text, s.span_set) for s in got] == [
        ("the food was great but the wine was bad", {(4, 8), (27, 31)}),
        ("a view here", {(2, 6)}),
    ]


def test_split_holds_out_empty_sentences_then_dev() -> None:
    sentences = [Sentence(f"s{i}", ()) for i in range(10)]
    sentences += [Sentence(f"t{i}", (GoldSpan(0, 1, "positive"),)) for i in range(20)]
    parts = split(sentences, 0.1, 4, seed=1)
    assert len(parts.empty_heldout) == 4 and all(not s.spans for s in parts.empty_heldout)
    assert len(parts.dev) == round(0.1 * 26)
    texts = [s.text for s in parts.train + parts.dev + parts.empty_heldout]
    assert sorted(texts) == sorted(s.text for s in sentences)  # a partition
    assert split(sentences, 0.1, 4, seed=1) == parts  # seeded


def test_drop_sentences_ignores_case_spaces_and_punctuation() -> None:
    kept, dropped = drop_sentences(
        [Sentence("The food , was great!", ()), Sentence("Other.", ())],
        [Sentence("the food, was great !", ())],
    )
    assert ([s.text for s in kept], dropped) == (["Other."], 1)


@pytest.mark.skipif(not (data_dir() / "semeval14").is_dir(), reason="benchmark data absent")
def test_semeval_test_files_rebuild_the_sentences() -> None:
    rest = read_sentences(data_dir() / "semeval14" / "Restaurants_Test_Gold.xml.seg")
    assert sum(len(s.spans) for s in rest) == 1120  # every labelled aspect, once
    assert all(s.spans for s in rest)
    train = read_sentences(data_dir() / "semeval14" / "xml" / "Restaurants_Train_v2.xml")
    assert len(train) == 3041 and sum(not s.spans for s in train) == 1020


def test_sentence_jsonl_written_by_a_run_reads_back(tmp_path: Path) -> None:
    from absa.training.tagging import write_sentences

    sentences = [
        Sentence("the food was great", (GoldSpan(4, 8, "positive"),)),
        Sentence("we went there", ()),
    ]
    path = tmp_path / "dev.jsonl"
    write_sentences(path, sentences)
    assert [(s.text, s.spans) for s in read_sentences(path)] == [
        (s.text, s.spans) for s in sentences
    ]
    path.write_text('{"text": "abc", "spans": [[1, 9, "positive"]]}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"dev.jsonl:1: spans\[0\]: .*\[1, 9\) is outside the text"):
        read_sentences(path)


def test_keep_aspect_free_keeps_every_aspect_and_a_seeded_share_of_the_rest() -> None:
    sentences = [Sentence(f"s{i}", ()) for i in range(10)]
    sentences += [Sentence(f"t{i}", (GoldSpan(0, 1, "positive"),)) for i in range(6)]
    kept, dropped = keep_aspect_free(sentences, 0.3, seed=1)
    assert dropped == 7 and len(kept) == 9
    assert [s for s in kept if s.spans] == sentences[10:]  # every sentence with an aspect
    assert kept == [s for s in sentences if s in kept]  # the order of the file
    assert keep_aspect_free(sentences, 0.3, seed=1) == (kept, 7)  # seeded
    assert keep_aspect_free(sentences, 0.3, seed=2)[0] != kept
    assert keep_aspect_free(sentences, 1.0, seed=1) == (sentences, 0)
    assert keep_aspect_free(sentences, 0.0, seed=1) == (sentences[10:], 10)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        keep_aspect_free(sentences, 1.5, seed=1)


@pytest.mark.parametrize("first", ['{"text": "Fine.", "spans": []}\n', ""])
def test_a_sentence_jsonl_that_is_not_utf8_names_the_file_and_line(
    tmp_path: Path, first: str
) -> None:
    """``absa evaluate --data`` with an extractor said only ``'utf-8' codec can't decode
    byte 0xe9 ...``, whichever line the byte was on; the sentiment readers name both."""
    path = tmp_path / "latin1.jsonl"
    rest = '{"text": "The caf\xe9 was fine.", "spans": [[4, 8, "positive"]]}\n'
    path.write_bytes(first.encode() + rest.encode("latin-1"))
    line = 2 if first else 1
    with pytest.raises(DataError, match=rf"^{path}:{line}: not valid UTF-8 \(byte 0xe9 "):
        read_sentences(path)


def test_a_missing_sentence_jsonl_is_no_such_file(tmp_path: Path) -> None:
    """It was ``[Errno 2] No such file or directory: ...``, as other commands do not say."""
    with pytest.raises(DataError, match=rf"^{tmp_path / 'gone.jsonl'}: no such file$"):
        read_sentences(tmp_path / "gone.jsonl")


def test_a_sentence_jsonl_with_a_byte_order_mark_is_read_as_sentences(tmp_path: Path) -> None:
    """Read as the record readers read it, the mark is dropped: the first line is a sentence
    record (it used to fail to parse, and the file was read as aspect records instead)."""
    path = tmp_path / "bom.jsonl"
    path.write_text('\ufeff{"text": "We went there.", "spans": []}\n', encoding="utf-8")
    (got,) = read_sentences(path)
    assert got.text == "We went there." and got.spans == ()


def _one_sentence_xml(text: str, terms: str) -> str:
    return (
        '<?xml version="1.0"?>\n<sentences>\n  <sentence id="s1">\n'
        f"    <text>{text}</text>\n    <aspectTerms>\n{terms}    </aspectTerms>\n"
        "  </sentence>\n</sentences>\n"
    )


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ('from="" to=""', r"aspectTerm 'food': from='' to='' do not mark it .* occurs 2 times"),
        ('from="abc" to="8"', r"aspectTerm 'food': from='abc' to='8' do not mark it"),
    ],
)
def test_xml_offsets_that_are_no_numbers_name_the_file_and_sentence(
    tmp_path: Path, offsets: str, message: str
) -> None:
    """int("") and int("abc") were bare ValueErrors without the file."""
    term = f'      <aspectTerm term="food" polarity="positive" {offsets}/>\n'
    path = tmp_path / "n.xml"
    path.write_text(_one_sentence_xml("food and more food", term), encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{path}: sentence s1 \(line 6\): {message}"):
        read_sentences(path)


@pytest.mark.parametrize(
    ("term", "message"),
    [
        # no term, no offsets: text[-1:-1] == "" made a span (-1, -1)
        ('<aspectTerm polarity="positive"/>', "aspectTerm without a 'term'"),
        # no polarity: the span was labelled ""
        ('<aspectTerm term="food" from="0" to="4"/>', "aspectTerm 'food' has no 'polarity'"),
        # a label the sentiment readers refuse was kept as it was
        ('<aspectTerm term="food" polarity="POS" from="0" to="4"/>', "unknown label 'POS'"),
        # twice in the text, no offsets: both took the first occurrence, (0, 4)
        ('<aspectTerm term="food" polarity="positive"/>', "'food'.* occurs 2 times"),
    ],
)
def test_xml_aspect_terms_are_checked_as_the_aspect_reader_checks_them(
    tmp_path: Path, term: str, message: str
) -> None:
    path = tmp_path / "t.xml"
    terms = f"      {term}\n      <aspectTerm term='more' polarity='neutral' from='9' to='13'/>\n"
    path.write_text(_one_sentence_xml("food and more food", terms), encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{path}: sentence s1 \(line 6\): .*{message}"):
        read_sentences(path)


def test_xml_offsets_outside_the_text_are_not_kept(tmp_path: Path) -> None:
    """text[-4:11] and text[7:99] are "food" too: the spans were (-4, 11) and (7, 99).
    Offsets that do not mark the term are mended where it occurs once, as the aspect reader
    mends them; a label is normalised as the sentiment readers normalise it."""
    terms = (
        '      <aspectTerm term="food" polarity="Positive" from="-4" to="11"/>\n'
        '      <aspectTerm term="food" polarity="conflict" from="7" to="99"/>\n'
    )
    path = tmp_path / "o.xml"
    path.write_text(_one_sentence_xml("I like food", terms), encoding="utf-8")
    (got,) = read_sentences(path)
    assert got.spans == (GoldSpan(7, 11, "positive"), GoldSpan(7, 11, "conflict"))


@pytest.mark.parametrize(
    "inner",
    ["<text>the <b>x</b> food</text>", "<text>the food</text><text>the wine</text>"],
)
def test_xml_markup_inside_text_is_refused(tmp_path: Path, inner: str) -> None:
    """findtext("text") stopped at the first child element: the sentence was 'the '."""
    path = tmp_path / "m.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<sentences>\n<sentence id="9">{inner}</sentence>\n</sentences>',
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=rf"^{path}: sentence 9 \(line 3\): .*<text>"):
        read_sentences(path)


@pytest.mark.parametrize(
    ("span", "message"),
    [
        ('[true, 3, "positive"]', r"start True is not an integer offset"),
        ('[0, 4.7, "positive"]', r"end 4.7 is not an integer offset"),
        ('[3, 4, "positive"]', r"aspect span \[3, 4\) holds only whitespace"),
        ('[0, 3, "POS"]', r"unknown label 'POS'"),
        ('[0, 3, ""]', r"unknown label ''"),
    ],
)
def test_sentence_jsonl_offsets_and_labels_are_checked(
    tmp_path: Path, span: str, message: str
) -> None:
    """true was read as 1, 4.7 as 4; a blank span and any label string were kept."""
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"text": "the food", "spans": []}\n'
        f'{{"text": "the food", "spans": [[4, 8, "neutral"], {span}]}}\n',
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=rf"^{path}:2: spans\[1\]: {message}"):
        read_sentences(path)


def test_sentence_jsonl_labels_are_normalised_and_conflict_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"text": "the food and wine", "spans": [[4, 8, "Positive"], [13, 17, "conflict"]]}\n',
        encoding="utf-8",
    )
    (got,) = read_sentences(path)
    assert got.spans == (GoldSpan(4, 8, "positive"), GoldSpan(13, 17, "conflict"))


def test_a_sentence_jsonl_starting_with_blank_lines_is_read_as_sentences(tmp_path: Path) -> None:
    """The format was decided by line 1 alone: a blank first line sent the file to the
    per-aspect reader, which refused every line."""
    path = tmp_path / "b.jsonl"
    path.write_text(
        '\n  \n{"text": "the food was good", "spans": [[4, 8, "positive"]]}\n'
        '{"text": "we went there", "spans": []}\n',
        encoding="utf-8",
    )
    got = read_sentences(path)
    assert [(s.text, s.span_set, s.source) for s in got] == [
        ("the food was good", {(4, 8)}, f"{path}:3"),
        ("we went there", set(), f"{path}:4"),
    ]


@pytest.mark.parametrize("line", [1, 2])
def test_a_jsonl_line_nested_too_deeply_names_the_file_and_line(tmp_path: Path, line: int) -> None:
    """json.loads raised a bare RecursionError (the first line decides the format too)."""
    good = '{"text": "the food", "spans": [[4, 8, "positive"]]}\n'
    deep = "[" * 100_000 + "]" * 100_000 + "\n"
    path = tmp_path / "d.jsonl"
    path.write_text(deep + good if line == 1 else good + deep, encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{path}:{line}: bad JSON: nested too deeply"):
        read_sentences(path)


@pytest.mark.parametrize("name", ["t.seg", "t.jsonl", "t.csv"])
def test_per_aspect_files_keep_conflict_spans(tmp_path: Path, name: str) -> None:
    """As the module says and the XML reader does: read_many dropped them, so a sentence's
    conflict aspect was missing from its gold spans."""
    rows = [("the food was great but the wine was bad", "food", 4, "positive")]
    rows.append(("the food was great but the wine was bad", "wine", 27, "conflict"))
    path = tmp_path / name
    if name.endswith(".seg"):
        path.write_text(
            "".join(f"{t[:s]}$T${t[s + len(a) :]}\n{a}\n{lab}\n" for t, a, s, lab in rows),
            encoding="utf-8",
        )
    elif name.endswith(".jsonl"):
        path.write_text(
            "".join(
                json.dumps({"text": t, "aspect": a, "start": s, "end": s + len(a), "label": lab})
                + "\n"
                for t, a, s, lab in rows
            ),
            encoding="utf-8",
        )
    else:
        path.write_text(
            "text,aspect,label\n" + "".join(f"{t},{a},{lab}\n" for t, a, _, lab in rows),
            encoding="utf-8",
        )
    (got,) = read_sentences(path)
    assert got.spans == (GoldSpan(4, 8, "positive"), GoldSpan(27, 31, "conflict"))


def test_semeval_2016_opinion_targets_are_a_sentences_spans(tmp_path: Path) -> None:
    """Each target once (a target of two disagreeing opinions is a conflict span, kept as the
    3-line files' conflicts are); a sentence whose opinions have no target (NULL) or none at
    all names no aspect term."""
    from tests.training.test_readers import XML_OPINIONS

    path = tmp_path / "restaurants.xml"
    path.write_text(XML_OPINIONS, encoding="utf-8")
    got = read_sentences(path)
    assert [s.span_set for s in got] == [
        {(4, 9)},
        {(6, 15), (29, 36)},
        set(),
        set(),
        {(4, 9), (27, 34)},
    ]
    assert [sp.label for sp in got[0].spans] == ["conflict"]
    assert [sp.label for sp in got[1].spans] == ["positive", "positive"]
