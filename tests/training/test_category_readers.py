"""Readers of labelled aspect categories (training/category_readers.py): SemEval-2014 XML
and JSONL, bad records named by file and line, ``conflict`` dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.training.category_readers import categories_of, read_categories, read_many_categories
from absa.training.records import CategoryExample, DataError
from tests.helpers import data_dir

XML = """<?xml version="1.0" encoding="UTF-8"?>
<sentences>
    <sentence id="1">
        <text>The pizza was great but the staff was rude.</text>
        <aspectTerms><aspectTerm term="pizza" polarity="positive" from="4" to="9"/></aspectTerms>
        <aspectCategories>
            <aspectCategory category="food" polarity="positive"/>
            <aspectCategory category="service" polarity="negative"/>
        </aspectCategories>
    </sentence>
    <sentence id="2">
        <text>We went there on a Sunday.</text>
        <aspectCategories>
            <aspectCategory category="anecdotes/miscellaneous" polarity="neutral"/>
            <aspectCategory category="price" polarity="conflict"/>
        </aspectCategories>
    </sentence>
    <sentence id="3"><text>No categories here.</text></sentence>
</sentences>
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_xml(tmp_path: Path) -> None:
    res = read_categories(write(tmp_path / "r.xml", XML))
    path = str(tmp_path / "r.xml")
    assert res.examples == [
        CategoryExample(
            "The pizza was great but the staff was rude.", "food", "positive", f"{path}:1"
        ),
        CategoryExample(
            "The pizza was great but the staff was rude.", "service", "negative", f"{path}:1"
        ),
        CategoryExample(
            "We went there on a Sunday.", "anecdotes/miscellaneous", "neutral", f"{path}:2"
        ),
    ]  # conflict dropped, the sentence without categories skipped
    assert categories_of(res.examples) == ["anecdotes/miscellaneous", "food", "service"]


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (
            'category="food" polarity="great"',
            r"r\.xml: sentence 1 \(line 7\): unknown label 'great'",
        ),
        ('polarity="positive"', r"sentence 1 \(line 7\): missing or empty 'category'"),
        ('category="food"', r"sentence 1 \(line 7\): category 'food' has no label"),
    ],
)
def test_xml_bad_record(tmp_path: Path, bad: str, match: str) -> None:
    text = XML.replace('category="food" polarity="positive"', bad)
    with pytest.raises(DataError, match=match):
        read_categories(write(tmp_path / "r.xml", text))
    skipped = read_categories(write(tmp_path / "r.xml", text), skip_invalid=True)
    assert len(skipped.examples) == 2 and len(skipped.skipped) == 1


def test_malformed_xml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"r\.xml:3: malformed XML"):
        read_categories(write(tmp_path / "r.xml", "<sentences>\n<sentence>\n</sentences>"))


def test_jsonl(tmp_path: Path) -> None:
    rows = [
        {"text": "the screen is great", "category": "DISPLAY#QUALITY", "label": "positive"},
        {"text": "it died after a week", "category": "LAPTOP#QUALITY", "polarity": "-1"},
    ]
    path = write(tmp_path / "c.categories.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    res = read_categories(path)
    assert [(e.category, e.label) for e in res.examples] == [
        ("DISPLAY#QUALITY", "positive"),
        ("LAPTOP#QUALITY", "negative"),
    ]
    assert res.examples[1].source == f"{path}:2"


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ('{"text": "x", "label": "positive"}', r"c\.jsonl:2: missing or empty 'category'"),
        (
            '{"text": "", "category": "A", "label": "positive"}',
            r"c\.jsonl:2: missing or empty text",
        ),
        ('{"text": "x", "category": "A"', r"c\.jsonl:2: bad JSON"),
        ('["x"]', r"c\.jsonl:2: expected a JSON object"),
    ],
)
def test_jsonl_bad_line(tmp_path: Path, line: str, match: str) -> None:
    good = '{"text": "ok", "category": "A", "label": "neutral"}'
    with pytest.raises(DataError, match=match):
        read_categories(write(tmp_path / "c.jsonl", f"{good}\n{line}\n"))


def test_many_files_and_no_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.xml", XML)
    assert len(read_many_categories([a, a]).examples) == 6
    with pytest.raises(ValueError, match="no category files"):
        read_many_categories([])
    with pytest.raises(DataError, match="no such file"):
        read_categories(tmp_path / "missing.xml")


@pytest.mark.skipif(not (data_dir() / "semeval14").is_dir(), reason="benchmark data absent")
def test_the_restaurant_categories() -> None:
    """Wang et al.'s Table 1 (train): 2179 positive, 839 negative, 500 neutral."""
    res = read_categories(data_dir() / "semeval14" / "xml" / "Restaurants_Train_v2.xml")
    counts = {
        lab: sum(e.label == lab for e in res.examples)
        for lab in ("positive", "negative", "neutral")
    }
    assert counts == {"positive": 2179, "negative": 839, "neutral": 500}
    assert categories_of(res.examples) == [
        "ambience",
        "anecdotes/miscellaneous",
        "food",
        "price",
        "service",
    ]


@pytest.mark.parametrize(
    ("inner", "why"),
    [
        ("<text>the <b>x</b> food</text>", "markup inside <text>"),
        ("<text>the food</text><text>the wine</text>", "2 <text> elements"),
    ],
)
def test_xml_markup_inside_text_is_refused(tmp_path: Path, inner: str, why: str) -> None:
    """findtext("text") stopped at the first child element: the text read was 'the '."""
    text = XML.replace("<text>The pizza was great but the staff was rude.</text>", inner)
    path = write(tmp_path / "m.xml", text)
    with pytest.raises(DataError, match=rf"^{path}: sentence 1 \(line 3\): {why}"):
        read_categories(path)
    res = read_categories(path, skip_invalid=True)
    assert [e.source for e in res.examples] == [f"{path}:2"]  # sentence 1 refused once
    assert len(res.skipped) == 1


def test_jsonl_lone_surrogate_is_refused(tmp_path: Path) -> None:
    """A JSON "\\ud800" escape passed: no run could write it out as UTF-8."""
    line = '{"text": "the caf\\ud800 was ok", "category": "A", "label": "neutral"}\n'
    path = write(tmp_path / "s.jsonl", line)
    with pytest.raises(DataError, match=rf"^{path}:1: the text holds a lone surrogate"):
        read_categories(path)


def test_jsonl_null_label_falls_through_to_polarity(tmp_path: Path) -> None:
    """As the aspect-term reader picks keys: a null or blank 'label' was "has no label"."""
    rows = [
        {"text": "the screen is great", "category": "A", "label": None, "polarity": "positive"},
        {"text": "the keys are bad", "category": "B", "label": " ", "polarity": "-1"},
    ]
    path = write(tmp_path / "n.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert [e.label for e in read_categories(path).examples] == ["positive", "negative"]


def test_csv_category_file_is_read_as_csv(tmp_path: Path) -> None:
    """A .csv file was parsed as JSONL: 'bad JSON' on its header."""
    path = write(
        tmp_path / "c.csv",
        'text,category,polarity\n"the screen, bright",DISPLAY#QUALITY,positive\n'
        "it died,LAPTOP#QUALITY,-1\n",
    )
    res = read_categories(path)
    assert [(e.text, e.category, e.label, e.source) for e in res.examples] == [
        ("the screen, bright", "DISPLAY#QUALITY", "positive", f"{path}:2"),
        ("it died", "LAPTOP#QUALITY", "negative", f"{path}:3"),
    ]
    no_category = write(tmp_path / "t.csv", "text,aspect,label\nthe food,food,positive\n")
    with pytest.raises(DataError, match=rf"^{no_category}:1: the CSV header lacks .*category"):
        read_categories(no_category)


def test_jsonl_line_nested_too_deeply_names_the_file_and_line(tmp_path: Path) -> None:
    good = '{"text": "ok", "category": "A", "label": "neutral"}\n'
    path = write(tmp_path / "d.jsonl", good + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(DataError, match=rf"^{path}:2: bad JSON: nested too deeply"):
        read_categories(path)


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_a_3line_file_says_it_names_terms_not_categories(
    tmp_path: Path, skip_invalid: bool
) -> None:
    """A SemEval 3-line file (.seg, .raw) was read as JSONL: "bad JSON" on its first line
    (with --skip-invalid: every line skipped, then "no examples")."""
    path = write(tmp_path / "rest.seg", "the $T$ was great\nfood\n1\n")
    want = (
        rf"^{path}: a 3-line file \(its lines are not JSON\) names aspect terms, not "
        "categories: give categories as SemEval XML, JSONL or CSV"
    )
    with pytest.raises(DataError, match=want):
        read_categories(path, skip_invalid=skip_invalid)


def test_other_extensions_are_still_read_as_jsonl(tmp_path: Path) -> None:
    """Only SemEval's 3-line suffixes are refused as such: a .ndjson or .txt of JSON lines,
    a bad first line skipped with skip_invalid, is read as ever."""
    path = write(
        tmp_path / "c.ndjson", '# a comment\n{"text": "x", "category": "A", "label": "positive"}\n'
    )
    assert [e.category for e in read_categories(path, skip_invalid=True).examples] == ["A"]


def test_semeval_2016_opinions_are_read_as_categories(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One record per category of a sentence: its opinions (one per target) agree, or it is a
    conflict (dropped); a target NULL is a category as any other."""
    from tests.training.test_readers import XML_OPINIONS

    path = write(tmp_path / "restaurants.xml", XML_OPINIONS)
    with caplog.at_level("INFO", logger="absa.training.readers"):
        res = read_categories(path)
    assert [(e.category, e.label, e.source) for e in res.examples] == [
        ("FOOD#PRICES", "positive", f"{path}:r1:0"),
        ("FOOD#QUALITY", "negative", f"{path}:r1:0"),
        ("DRINKS#PRICES", "positive", f"{path}:r1:1"),
        ("DRINKS#QUALITY", "positive", f"{path}:r1:1"),
        ("SERVICE#GENERAL", "positive", f"{path}:r1:1"),
        ("RESTAURANT#GENERAL", "negative", f"{path}:r1:2"),
    ]
    assert "1 'conflict'" in caplog.text  # r1:4's SERVICE#GENERAL: negative and positive
