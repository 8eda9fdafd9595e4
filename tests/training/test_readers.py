"""Tests for training.readers: every format, its errors, and the real benchmark files."""

from __future__ import annotations

import codecs
import gzip
import json
import logging
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from absa.model.text import WordPipeline, tokenize
from absa.training.readers import (
    FORMATS,
    detect_format,
    label_counts,
    parse_label,
    read_examples,
    read_many,
)
from absa.training.records import DataError, Example, ReadResult
from tests.helpers import data_dir

DATA = data_dir()


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def spans(result: ReadResult) -> list[tuple[str, str, str]]:
    return [(ex.text, ex.term, ex.label) for ex in result.examples]


# --------------------------------------------------------------------------- parse_label


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("negative", "negative"),
        ("Negative", "negative"),
        ("NEUTRAL", "neutral"),
        ("POSITIVE", "positive"),
        (" positive\r", "positive"),
        ("-1", "negative"),
        ("0", "neutral"),
        ("1", "positive"),
        ("+1", "positive"),
        (-1, "negative"),
        (0, "neutral"),
        (1, "positive"),
    ],
)
def test_parse_label_variants(value: str | int, label: str) -> None:
    assert parse_label(value) == label


@pytest.mark.parametrize("value", ["great", "", "2", 2, -2, True, None, 1.5, "conflict", "pos"])
def test_parse_label_rejects(value: object) -> None:
    with pytest.raises(ValueError):
        parse_label(value)  # type: ignore[arg-type]


def test_parse_label_conflict_message() -> None:
    with pytest.raises(ValueError, match="conflict.*not a supported label"):
        parse_label("Conflict")


def test_label_counts() -> None:
    exs = [
        Example("a b", 0, 1, "positive"),
        Example("a b", 2, 3, "positive"),
        Example("a b", 0, 1, "negative"),
    ]
    assert label_counts(exs) == {"negative": 1, "neutral": 0, "positive": 2}
    assert list(label_counts([])) == ["negative", "neutral", "positive"]


# --------------------------------------------------------------------------- format detection


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.xml", "xml"),
        ("a.XML", "xml"),
        ("a.jsonl", "jsonl"),
        ("a.json", "jsonl"),
        ("a.csv", "csv"),
        ("Restaurants_Train.xml.seg", "3line"),
        ("train.raw", "3line"),
        ("a.txt", "3line"),
        ("noext", "3line"),
    ],
)
def test_detect_format(name: str, fmt: str) -> None:
    assert detect_format(name) == fmt
    assert fmt in FORMATS


def test_explicit_format_overrides_extension(tmp_path: Path) -> None:
    path = write(tmp_path, "data.txt", '{"text": "good food", "aspect": "food", "label": 1}\n')
    res = read_examples(path, "jsonl")
    assert spans(res) == [("good food", "food", "positive")]
    res = read_examples(str(path), fmt="JSONL")
    assert len(res.examples) == 1


def test_unknown_format(tmp_path: Path) -> None:
    path = write(tmp_path, "a.txt", "x $T$\ny\n1\n")
    with pytest.raises(ValueError, match="unknown format 'yaml'"):
        read_examples(path, "yaml")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.seg"
    with pytest.raises(DataError, match="nope.seg: no such file"):
        read_examples(path)


def test_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=re.escape(str(tmp_path))):
        read_examples(tmp_path, "3line")


# --------------------------------------------------------------------------- 3-line


def test_3line_good(tmp_path: Path) -> None:
    content = (
        "The $T$ was great .\n"
        "food\n"
        "1\n"
        "The $T$ was slow but the waiter was nice .\n"
        "kitchen staff\n"
        "-1\n"
        "Le $T$ était délicieux .\n"
        "café\n"
        "0\n"
    )
    path = write(tmp_path, "train.seg", content)
    res = read_examples(path)
    assert res.skipped == []
    assert spans(res) == [
        ("The food was great .", "food", "positive"),
        ("The kitchen staff was slow but the waiter was nice .", "kitchen staff", "negative"),
        ("Le café était délicieux .", "café", "neutral"),
    ]
    assert [ex.source for ex in res.examples] == [f"{path}:1", f"{path}:4", f"{path}:7"]
    assert res.examples[1].start == 4 and res.examples[1].end == 17
    assert res.examples[2].label_id == 1


def test_3line_repeated_aspect_word_uses_placeholder(tmp_path: Path) -> None:
    # "food" also occurs before the placeholder: the span must be the $T$ position.
    path = write(tmp_path, "a.seg", "the food was ok but the $T$ here was cold\nfood\nnegative\n")
    (ex,) = read_examples(path).examples
    assert ex.text == "the food was ok but the food here was cold"
    assert ex.start == ex.text.index("food", 5) == 24
    assert ex.term == "food"


def test_3line_every_placeholder_replaced_span_on_first(tmp_path: Path) -> None:
    path = write(tmp_path, "a.raw", "$T$ fans love $T$ !\nlady gaga\n0\n")
    (ex,) = read_examples(path).examples
    assert ex.text == "lady gaga fans love lady gaga !"
    assert (ex.start, ex.end) == (0, 9)


@pytest.mark.parametrize(
    "labels",
    [
        ("-1", "0", "1"),
        ("Negative", "Neutral", "Positive"),
        ("NEGATIVE", "neutral", "POSITIVE"),
        ("negative ", " neutral", "positive\t"),
    ],
)
def test_3line_label_variants(tmp_path: Path, labels: tuple[str, str, str]) -> None:
    content = "".join(f"s $T$ {i}\nt\n{lab}\n" for i, lab in enumerate(labels))
    res = read_examples(write(tmp_path, "a.seg", content))
    assert [ex.label for ex in res.examples] == ["negative", "neutral", "positive"]


def test_3line_crlf_trailing_whitespace_and_blank_eof(tmp_path: Path) -> None:
    content = "The $T$ is good .  \r\nfood \r\n1\r\nBad $T$ .\r\nservice\r\n-1\r\n\r\n\n  \n"
    res = read_examples(write(tmp_path, "a.txt", content))
    assert spans(res) == [
        ("The food is good .", "food", "positive"),
        ("Bad service .", "service", "negative"),
    ]


def test_3line_no_trailing_newline(tmp_path: Path) -> None:
    res = read_examples(write(tmp_path, "a.raw", "a $T$\nb\n1\nc $T$\nd\n0"))
    assert len(res.examples) == 2


def test_3line_bom_is_ignored(tmp_path: Path) -> None:
    res = read_examples(write(tmp_path, "a.seg", "\ufeffThe $T$ .\nfood\n1\n"))
    assert res.examples[0].text == "The food ."


@pytest.mark.parametrize("name", ["a.seg", "a.jsonl", "a.csv"])
def test_a_bom_inside_a_file_is_dropped_and_named(
    tmp_path: Path, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Files joined with ``cat`` keep the second one's byte-order mark at the start of a line:
    it is no part of the text (an invisible character at the start of a sentence, a JSON
    line that does not parse, a CSV field with it), so it goes, with a warning."""
    bom = "\ufeff"
    first, second = {
        "a.seg": ("The $T$ .\nfood\n1\n", "Bad $T$ .\nservice\n-1\n"),
        "a.jsonl": (
            '{"text": "The food .", "aspect": "food", "label": "positive"}\n',
            '{"text": "Bad service .", "aspect": "service", "label": "negative"}\n',
        ),
        "a.csv": (
            "text,aspect,label\nThe food .,food,positive\n",
            "Bad service .,service,negative\n",
        ),
    }[name]
    path = write(tmp_path, name, bom + first + bom + second)
    with caplog.at_level(logging.WARNING, logger="absa.training.readers"):
        res = read_examples(path)
    assert spans(res) == [
        ("The food .", "food", "positive"),
        ("Bad service .", "service", "negative"),
    ]
    line = first.count("\n") + 1
    assert f"{path}:{line}: a byte-order mark" in caplog.text


XML = (
    '<?xml version="1.0"?>\n'
    '<sentences><sentence id="1"><text>The food .</text></sentence></sentences>\n'
)


@pytest.mark.parametrize(
    ("name", "content", "hint"),
    [
        ("a.txt", XML, "it looks like XML: name it .xml"),
        ("a.csv", XML, "it looks like XML: name it .xml"),
        ("a.jsonl", XML, "it looks like XML: name it .xml"),
        ("a.txt", '{"text": "The food .", "aspect": "food", "label": 1}\n', "name it .jsonl"),
        ("a.xml", "The $T$ .\nfood\n1\n", "it does not look like XML"),
        # a table named .txt or .tsv was read as 3-line: "no $T$ placeholder", no hint
        (
            "a.txt",
            "text,aspect,label\nThe food .,food,1\n",
            "looks like a CSV header: name it .csv",
        ),
        ("a.tsv", "Text\tAspect\tLabel\nThe food .\tfood\t1\nx\n", "save it as CSV named .csv"),
    ],
)
def test_a_file_named_for_another_format_says_which_suffix(
    tmp_path: Path, name: str, content: str, hint: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The format follows the suffix: a file whose content is another format's gets its
    first error with the suffix to give it; with --skip-invalid, where every record was
    skipped, a warning says it."""
    with pytest.raises(DataError, match=re.escape(hint)):
        read_examples(write(tmp_path, name, content))
    with caplog.at_level(logging.WARNING, logger="absa.training.readers"):
        try:
            res = read_examples(write(tmp_path, name, content), skip_invalid=True)
        except DataError as e:  # a file that cannot be read at all (malformed XML)
            assert hint in str(e)
        else:
            assert not res.examples and hint in caplog.text


def test_3line_missing_placeholder(tmp_path: Path) -> None:
    path = write(tmp_path, "a.seg", "ok $T$\nx\n1\nno placeholder here\nfood\n1\n")
    with pytest.raises(DataError) as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:4: ")
    assert "$T$" in str(err.value)


def test_3line_unknown_label_points_at_label_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a.seg", "ok $T$\nx\n1\nalso $T$\nfood\ngreat\n")
    with pytest.raises(DataError, match=r"a\.seg:6: unknown label 'great'") as err:
        read_examples(path)
    assert str(path) in str(err.value)


def test_3line_empty_term(tmp_path: Path) -> None:
    path = write(tmp_path, "a.seg", "ok $T$\nx\n1\nalso $T$\n   \n1\n")
    with pytest.raises(DataError, match="empty aspect term") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:5: ")


def test_3line_truncated(tmp_path: Path) -> None:
    path = write(tmp_path, "a.seg", "ok $T$\nx\n1\nb $T$\ny\n0\ncut $T$\nz\n\n\n")
    with pytest.raises(DataError, match="truncated record") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:7: ")


def test_3line_skip_invalid(tmp_path: Path) -> None:
    content = (
        "good $T$\nfood\n1\n"  # 1: ok
        "no placeholder\nfood\n1\n"  # 4: missing $T$
        "bad $T$\nwine\nmeh\n"  # 7: label (line 9)
        "fine $T$\nbread\nNeutral\n"  # 10: ok
        "x $T$\n\n0\n"  # 13: empty term
        "last $T$\ncut\n"  # 16: truncated
    )
    path = write(tmp_path, "a.seg", content)
    res = read_examples(path, skip_invalid=True)
    assert [ex.source for ex in res.examples] == [f"{path}:1", f"{path}:10"]
    # the line at fault, as the error names it: the label's, the empty term's
    assert [s.source for s in res.skipped] == [f"{path}:{n}" for n in (4, 9, 14, 16)]
    reasons = [s.reason for s in res.skipped]
    assert "$T$" in reasons[0]
    assert "unknown label 'meh'" in reasons[1]
    assert "empty aspect term" in reasons[2]
    assert "truncated" in reasons[3]


def test_3line_blank_lines_between_records_are_passed_over(tmp_path: Path) -> None:
    """Records set apart by blank lines (as people write them by hand): each blank line
    shifted every later record by one, so the first was read whole and the rest as bad
    records (the error named a blank line "no $T$ placeholder"), and --skip-invalid dropped
    good records and counted them as bad."""
    content = (
        "\ngood $T$\nfood\n1\n\n"  # 2
        "no placeholder\nfood\n1\n\n\n"  # 6: missing $T$
        "fine $T$\nbread\nNeutral\n\n"  # 11
        "rude $T$\nwaiter\n-1\n\n"  # 15
    )
    path = write(tmp_path, "a.seg", content)
    res = read_examples(path, skip_invalid=True)
    assert [ex.source for ex in res.examples] == [f"{path}:{n}" for n in (2, 11, 15)]
    assert spans(res) == [
        ("good food", "food", "positive"),
        ("fine bread", "bread", "neutral"),
        ("rude waiter", "waiter", "negative"),
    ]
    assert [s.source for s in res.skipped] == [f"{path}:6"]
    with pytest.raises(DataError, match="placeholder") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:6: ")


def test_a_pipe_is_refused_naming_it(tmp_path: Path) -> None:
    """A named pipe (or `<(cat f)`) was read, and the run then recorded the sha256 of no
    bytes (the pipe was empty by the time provenance read it again); with no writer,
    evaluate hung. Refused as predict refuses it: write it to a file first."""
    import os

    fifo = tmp_path / "data.seg"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="not a regular file") as err:
        read_examples(fifo)  # no writer: it would wait for one
    assert str(err.value).startswith(f"{fifo}: ")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        (
            "a.jsonl",
            '{"text": "I love \\u200b this", "aspect": "\\u200b", "start": 7, "end": 8, '
            '"label": "positive"}\n{"text": "The food", "aspect": "food", "label": "1"}\n',
        ),
        ("a.seg", "I love $T$ this\n\u200b\n1\nThe $T$\nfood\n1\n"),
    ],
)
def test_an_aspect_of_invisible_characters_alone_is_a_bad_record(
    tmp_path: Path, name: str, content: str
) -> None:
    """A zero-width space is no word (the tokenizer makes no token of it): such an aspect
    got past the reader and failed later, naming neither file nor line ("covers no word"),
    and --skip-invalid did not skip it."""
    path = write(tmp_path, name, content)
    with pytest.raises(DataError, match="invisible") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:1: ")
    res = read_examples(path, skip_invalid=True)
    assert [e.term for e in res.examples] == ["food"] and len(res.skipped) == 1


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("a.parquet", b"PAR1\x15\x04\x15\x10", "a Parquet file"),
        (
            "a.jsonl",
            '{"text": "The food", "aspect": "food", "label": "1", "start": 4, "end": 4}\n',
            "span [4, 4) is empty",
        ),
        (
            "a.jsonl",
            '{"text": "The cafe\\u0301", "aspect": "cafe", "label": "1", "start": 4, "end": 8}\n',
            "ends before a combining mark",
        ),
        (
            "a.jsonl",
            '{"text": 5, "aspect": "food", "label": "positive"}\n',
            "'text' is not a string",
        ),
        (
            "a.jsonl",
            '{"text": "The food", "aspect": ["food"], "label": "1"}\n',
            "'aspect' is not a string",
        ),
    ],
)
def test_what_is_wrong_is_said(tmp_path: Path, name: str, content: str | bytes, words: str) -> None:
    """A Parquet file was "truncated record" (read as 3-line) or "not valid UTF-8", an empty
    span "outside the text", and a number for the text "missing or empty"."""
    path = write(tmp_path, name, content)
    with pytest.raises(DataError, match=re.escape(words)) as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}")


@pytest.mark.parametrize(
    ("name", "content", "span"),
    [
        (
            "a.jsonl",
            '{"text": "The food", "aspect": "food", "label": "1", "start": 4.0, "end": 8.0}\n',
            (4, 8),
        ),
        ("a.csv", "text,aspect,label,start,end\nThe food,food,1,4.0,8.0\n", (4, 8)),
        ("a.csv", "text,aspect,label,start,end\nThe food,food,1,\uff14,\uff18\n", None),
        (
            "a.jsonl",
            '{"text": "The food", "aspect": "food", "label": "1", "start": 4.5, "end": 8}\n',
            None,
        ),
    ],
)
def test_offsets_are_read_as_predict_reads_them(
    tmp_path: Path, name: str, content: str, span: tuple[int, int] | None
) -> None:
    """Training refused 4.0 (a float column, as pandas writes one with gaps) that predict
    took, and took full-width digits that predict refused: one file, two readings."""
    path = write(tmp_path, name, content)
    if span is None:
        with pytest.raises(DataError, match="must be integers"):
            read_examples(path)
    else:
        assert [(e.start, e.end) for e in read_examples(path).examples] == [span]


def test_a_path_whose_look_fails_is_read_or_named_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look for a named pipe (Path.exists) raises where a folder on the way cannot be
    searched (EACCES, not for root): that was a PermissionError traceback."""
    path = write(tmp_path, "a.seg", "The $T$ was good\nfood\n1\n")

    def exists(self: Path, *args: object, **kwargs: object) -> bool:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "exists", exists)
    assert [e.term for e in read_examples(path).examples] == ["food"]


def test_3line_conflict_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, "a.seg", "a $T$\nx\nconflict\nb $T$\ny\n1\n")
    with caplog.at_level("INFO", logger="absa.training.readers"):
        res = read_examples(path)
    assert spans(res) == [("b y", "y", "positive")]
    assert res.skipped == []
    assert "1 'conflict'" in caplog.text


@pytest.mark.parametrize("content", ["", "\n", "  \n\n\r\n"])
def test_3line_empty_file(tmp_path: Path, content: str) -> None:
    path = write(tmp_path, "empty.seg", content)
    with pytest.raises(DataError, match=r"empty\.seg: no examples"):
        read_examples(path)
    with pytest.raises(DataError, match="no examples"):
        read_examples(path, skip_invalid=True)


def test_only_invalid_records_with_skip_is_not_empty(tmp_path: Path) -> None:
    res = read_examples(write(tmp_path, "a.seg", "no placeholder\nx\n1\n"), skip_invalid=True)
    assert res.examples == [] and len(res.skipped) == 1


def test_only_conflict_is_no_examples(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no examples.*1 'conflict'"):
        read_examples(write(tmp_path, "a.seg", "a $T$\nx\nconflict\n"))


def test_non_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "latin.seg", b"ok $T$\nx\n1\nLe $T$ \ncaf\xe9\n0\n")
    with pytest.raises(DataError, match="not valid UTF-8") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:5: ")
    # even with skip_invalid: a file that is not UTF-8 is unreadable as a whole
    with pytest.raises(DataError, match="UTF-8"):
        read_examples(path, skip_invalid=True)


# --------------------------------------------------------------------------- XML


XML_GOOD = """<?xml version="1.0" encoding="UTF-8"?>
<sentences>
    <sentence id="10">
        <text>The food was great but the service was slow.</text>
        <aspectTerms>
            <aspectTerm term="food" polarity="positive" from="4" to="8"/>
            <aspectTerm term="service" polarity="negative" from="27" to="34"/>
        </aspectTerms>
        <aspectCategories>
            <aspectCategory category="food" polarity="positive"/>
        </aspectCategories>
    </sentence>
    <sentence id="11">
        <text>Nothing to say here.</text>
        <aspectCategories>
            <aspectCategory category="misc" polarity="neutral"/>
        </aspectCategories>
    </sentence>
    <sentence id="12">
        <text>Le café était délicieux, the goat cheese salad too &amp; the food.</text>
        <aspectTerms>
            <aspectTerm term="café" polarity="positive" from="3" to="7"/>
            <aspectTerm term="goat cheese salad" polarity="neutral" from="29" to="46"/>
            <aspectTerm term="price" polarity="conflict" from="0" to="0"/>
        </aspectTerms>
    </sentence>
    <sentence id="13">
        <text>Food, food, and more food.</text>
        <aspectTerms>
            <aspectTerm term="food" polarity="negative" from="6" to="10"/>
        </aspectTerms>
    </sentence>
    <sentence id="14">
        <text>No terms.</text>
        <aspectTerms/>
    </sentence>
</sentences>
"""


def test_xml_good(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, "train.xml", XML_GOOD)
    with caplog.at_level("INFO", logger="absa.training.readers"):
        res = read_examples(path)
    assert res.skipped == []
    assert [(ex.term, ex.label, ex.source) for ex in res.examples] == [
        ("food", "positive", f"{path}:10"),
        ("service", "negative", f"{path}:10"),
        ("café", "positive", f"{path}:12"),
        ("goat cheese salad", "neutral", f"{path}:12"),
        ("food", "negative", f"{path}:13"),
    ]
    assert res.examples[2].text.startswith("Le café était délicieux")
    assert "&" in res.examples[2].text
    # the repeated word: the offsets pick the second "food", not the first
    assert (res.examples[4].start, res.examples[4].end) == (6, 10)
    assert "1 'conflict'" in caplog.text


def _xml(aspects: str, text: str = "The food and the food.", sid: str = ' id="7"') -> str:
    return (
        '<?xml version="1.0"?>\n'
        "<sentences>\n"
        f"  <sentence{sid}>\n"
        f"    <text>{text}</text>\n"
        "    <aspectTerms>\n"
        f"{aspects}"
        "    </aspectTerms>\n"
        "  </sentence>\n"
        "</sentences>\n"
    )


def test_xml_wrong_offsets_unique_term_is_repaired(tmp_path: Path) -> None:
    aspects = '      <aspectTerm term="staff" polarity="neutral" from="0" to="5"/>\n'
    path = write(tmp_path, "a.xml", _xml(aspects, text="Nice staff here."))
    (ex,) = read_examples(path).examples
    assert (ex.start, ex.end, ex.term) == (5, 10, "staff")


def test_xml_missing_offsets_unique_term(tmp_path: Path) -> None:
    aspects = '      <aspectTerm term="staff" polarity="neutral"/>\n'
    (ex,) = read_examples(write(tmp_path, "a.xml", _xml(aspects, text="Nice staff."))).examples
    assert ex.term == "staff"


def test_xml_wrong_offsets_ambiguous_term(tmp_path: Path) -> None:
    aspects = (
        '      <aspectTerm term="food" polarity="neutral" from="4" to="8"/>\n'
        '      <aspectTerm term="food" polarity="neutral" from="1" to="5"/>\n'
    )
    path = write(tmp_path, "a.xml", _xml(aspects))
    with pytest.raises(DataError, match="occurs 2 times") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}: sentence 7 (line 7): ")


def test_xml_term_not_in_text(tmp_path: Path) -> None:
    aspects = '      <aspectTerm term="wine" polarity="neutral" from="4" to="8"/>\n'
    path = write(tmp_path, "a.xml", _xml(aspects))
    with pytest.raises(DataError, match="does not occur") as err:
        read_examples(path)
    assert f"{path}: sentence 7 (line 6)" in str(err.value)


def test_xml_unknown_polarity(tmp_path: Path) -> None:
    aspects = '      <aspectTerm term="food" polarity="mixed" from="4" to="8"/>\n'
    path = write(tmp_path, "a.xml", _xml(aspects))
    with pytest.raises(DataError, match=r"sentence 7 \(line 6\): unknown label 'mixed'") as err:
        read_examples(path)
    assert str(path) in str(err.value)


def test_xml_without_sentence_ids_uses_lines(tmp_path: Path) -> None:
    aspects = '      <aspectTerm term="food" polarity="positive" from="4" to="8"/>\n'
    path = write(tmp_path, "mams.xml", _xml(aspects, sid=""))
    (ex,) = read_examples(path).examples
    assert ex.source == f"{path}:3"
    bad = '      <aspectTerm term="food" polarity="?" from="4" to="8"/>\n'
    path = write(tmp_path, "bad.xml", _xml(bad, sid=""))
    with pytest.raises(DataError) as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:6: ")


def test_xml_skip_invalid(tmp_path: Path) -> None:
    aspects = (
        '      <aspectTerm term="food" polarity="positive" from="4" to="8"/>\n'
        '      <aspectTerm term="wine" polarity="positive" from="4" to="8"/>\n'
        '      <aspectTerm term="food" polarity="nope" from="17" to="21"/>\n'
        '      <aspectTerm polarity="negative" from="17" to="21"/>\n'
        '      <aspectTerm term="food" polarity="conflict" from="17" to="21"/>\n'
    )
    path = write(tmp_path, "a.xml", _xml(aspects))
    res = read_examples(path, skip_invalid=True)
    assert [(ex.start, ex.source) for ex in res.examples] == [(4, f"{path}:7")]
    assert [s.source for s in res.skipped] == [f"{path}: sentence 7 (line {n})" for n in (7, 8, 9)]
    assert "wine" in res.skipped[0].reason
    assert "unknown label 'nope'" in res.skipped[1].reason
    assert "term" in res.skipped[2].reason


def test_xml_malformed(tmp_path: Path) -> None:
    content = XML_GOOD.replace("say here.</text>", "say here.</txt>", 1)
    path = write(tmp_path, "broken.xml", content)
    with pytest.raises(DataError, match="malformed XML") as err:
        read_examples(path)
    line = 1 + next(i for i, x in enumerate(content.splitlines()) if "</txt>" in x)
    assert str(err.value).startswith(f"{path}:{line}: ")
    with pytest.raises(DataError, match="malformed XML"):
        read_examples(path, skip_invalid=True)


def test_xml_with_an_encoding_no_codec_knows(tmp_path: Path) -> None:
    path = tmp_path / "enc.xml"
    path.write_bytes(XML_GOOD.replace('encoding="UTF-8"', 'encoding="foo-bar"', 1).encode())
    with pytest.raises(DataError, match=r"enc\.xml:1: unknown encoding 'foo-bar'"):
        read_examples(path)


def test_xml_unclosed(tmp_path: Path) -> None:
    path = write(tmp_path, "cut.xml", XML_GOOD[: XML_GOOD.index("</sentences>")])
    with pytest.raises(DataError, match=r"cut\.xml:\d+: malformed XML"):
        read_examples(path)


def test_xml_non_utf8(tmp_path: Path) -> None:
    content = _xml('<aspectTerm term="caf" polarity="positive" from="4" to="7"/>\n', text="Le caf")
    data = content.encode().replace(b"Le caf", b"Le caf\xe9")
    path = write(tmp_path, "latin.xml", data)
    with pytest.raises(DataError, match="not valid UTF-8") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:4: ")


def test_xml_declared_latin1(tmp_path: Path) -> None:
    content = _xml(
        '      <aspectTerm term="café" polarity="positive" from="3" to="7"/>\n',
        text="Le café.",
    ).replace('version="1.0"?>', 'version="1.0" encoding="ISO-8859-1"?>')
    (ex,) = read_examples(write(tmp_path, "l1.xml", content.encode("latin-1"))).examples
    assert ex.term == "café"


def test_xml_no_aspects_is_no_examples(tmp_path: Path) -> None:
    content = '<sentences><sentence id="1"><text>hi</text></sentence></sentences>'
    with pytest.raises(DataError, match=r"a\.xml: no examples"):
        read_examples(write(tmp_path, "a.xml", content))
    with pytest.raises(DataError, match="no <sentence>"):
        read_examples(write(tmp_path, "b.xml", "<root/>"))


# --------------------------------------------------------------------------- JSONL


def test_jsonl_good(tmp_path: Path) -> None:
    rows = [
        {"text": "The food was great.", "aspect": "food", "label": "Positive"},
        {"text": "The goat cheese salad was bland.", "term": "goat cheese salad", "polarity": -1},
        {"text": "Le café était délicieux", "aspect": "café", "label": "1"},
        {"text": "Food here, FOOD there.", "aspect": "food", "label": 0},
        {"text": "food, food, food", "aspect": "food", "label": "neutral", "start": 6, "end": 10},
        {"text": "the wine list", "aspect": "wine list", "label": "NEGATIVE", "id": 9},
    ]
    lines = [json.dumps(r, ensure_ascii=i % 2 == 0) for i, r in enumerate(rows)]
    lines.insert(3, "   ")  # a blank line is skipped but still counted
    path = write(tmp_path, "a.jsonl", "\n".join(lines) + "\n\n")
    res = read_examples(path)
    assert res.skipped == []
    assert spans(res) == [
        ("The food was great.", "food", "positive"),
        ("The goat cheese salad was bland.", "goat cheese salad", "negative"),
        ("Le café était délicieux", "café", "positive"),
        ("Food here, FOOD there.", "Food", "neutral"),  # several: the first, case-insensitive
        ("food, food, food", "food", "neutral"),
        ("the wine list", "wine list", "negative"),
    ]
    assert res.examples[3].start == 0
    assert res.examples[4].start == 6
    assert [ex.source for ex in res.examples] == [f"{path}:{n}" for n in (1, 2, 3, 5, 6, 7)]


def test_jsonl_whole_word_preferred(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jsonl", '{"text": "seafood and food", "aspect": "food", "label": 1}')
    (ex,) = read_examples(path).examples
    assert (ex.start, ex.end) == (12, 16)


def test_json_extension_is_jsonl(tmp_path: Path) -> None:
    path = write(tmp_path, "a.json", '{"text": "nice view", "aspect": "view", "label": 1}\n')
    assert len(read_examples(path).examples) == 1


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ('{"text": "x", "aspect": "x", "label": 1', "bad JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"text": "nice food", "aspect": "wine", "label": 1}', "does not occur"),
        ('{"text": "nice food", "aspect": "food", "label": "good"}', "unknown label 'good'"),
        ('{"text": "nice food", "aspect": "food", "label": true}', "unknown label True"),
        ('{"text": "nice food", "aspect": "food"}', "missing 'label'"),
        ('{"text": "nice food", "label": 1}', "'aspect'"),
        ('{"text": "  ", "aspect": "food", "label": 1}', "'text'"),
        ('{"text": "nice food", "aspect": "food", "label": 1, "start": 0, "end": 4}', "not the"),
        ('{"text": "nice food", "aspect": "Food", "label": 1, "start": 5, "end": 9}', "not the"),
        ('{"text": "nice food", "aspect": "food", "label": 1, "start": 5}', "both"),
        ('{"text": "nice food", "aspect": "food", "label": 1, "start": 5, "end": 99}', "outside"),
        ('{"text": "nice food", "aspect": "food", "label": 1, "start": "a", "end": 9}', "integers"),
    ],
)
def test_jsonl_errors(tmp_path: Path, bad: str, reason: str) -> None:
    good = '{"text": "good food", "aspect": "food", "label": 1}'
    path = write(tmp_path, "a.jsonl", f"{good}\n\n{bad}\n{good}\n")
    with pytest.raises(DataError) as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:3: ")
    assert reason in str(err.value)
    res = read_examples(path, skip_invalid=True)
    assert len(res.examples) == 2
    assert len(res.skipped) == 1
    assert res.skipped[0].source == f"{path}:3"
    assert reason in res.skipped[0].reason


def test_jsonl_conflict_dropped(tmp_path: Path) -> None:
    rows = [
        '{"text": "good food", "aspect": "food", "label": "conflict"}',
        '{"text": "good food", "aspect": "food", "polarity": "positive"}',
    ]
    res = read_examples(write(tmp_path, "a.jsonl", "\n".join(rows)))
    assert len(res.examples) == 1 and res.skipped == []


def test_jsonl_start_end_as_strings(tmp_path: Path) -> None:
    row = '{"text": "food, food", "aspect": "food", "label": "0", "start": "6", "end": "10"}'
    (ex,) = read_examples(write(tmp_path, "a.jsonl", row)).examples
    assert (ex.start, ex.end) == (6, 10)


def test_jsonl_empty(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no examples"):
        read_examples(write(tmp_path, "a.jsonl", "\n \n"))


# --------------------------------------------------------------------------- CSV


def test_csv_good(tmp_path: Path) -> None:
    content = (
        "text,aspect,label,start,end\n"
        '"The food, sadly, was cold.",food,Negative,,\n'
        "Le café était délicieux,café,1,3,7\n"
        '"A multi\nline review of the goat cheese salad",goat cheese salad,0,,\n'
        "\n"
        "food and food,food,POSITIVE,9,13\n"
    )
    path = write(tmp_path, "a.csv", content)
    res = read_examples(path)
    assert res.skipped == []
    assert [(ex.term, ex.label, ex.start) for ex in res.examples] == [
        ("food", "negative", 4),
        ("café", "positive", 3),
        ("goat cheese salad", "neutral", 27),
        ("food", "positive", 9),
    ]
    assert [ex.source for ex in res.examples] == [f"{path}:{n}" for n in (2, 3, 4, 7)]


def test_a_csv_field_over_the_csv_modules_default_is_read(tmp_path: Path) -> None:
    """A text of over 131,072 characters (the csv module's default limit) stopped the whole
    file, --skip-invalid or not, where the same text in JSONL was read and predict read it."""
    import csv

    long = "word " * 30_000 + "the pizza was great"
    path = write(tmp_path, "a.csv", f'text,aspect,label\n"{long}",pizza,positive\nok food,food,1\n')
    before = csv.field_size_limit(131_072)
    try:
        res = read_examples(path)
    finally:
        csv.field_size_limit(before)
    got = [(len(e.text), e.label) for e in res.examples]
    assert got == [(len(long), "positive"), (7, "positive")]


def test_csv_term_polarity_columns_and_crlf(tmp_path: Path) -> None:
    content = "Text,Term,Polarity\r\ngreat pizza,pizza,1\r\nslow service,service,negative\r\n"
    res = read_examples(write(tmp_path, "a.csv", content))
    assert spans(res) == [
        ("great pizza", "pizza", "positive"),
        ("slow service", "service", "negative"),
    ]


def test_csv_error_line_after_multiline_row(tmp_path: Path) -> None:
    content = (
        "text,aspect,label\n"
        '"two\nlines with food",food,1\n'
        "nice wine,beer,1\n"  # line 4: aspect not in text
    )
    path = write(tmp_path, "a.csv", content)
    with pytest.raises(DataError, match="does not occur") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:4: ")


def test_csv_wrong_field_count(tmp_path: Path) -> None:
    content = "text,aspect,label\ngood food,food,1\ngood food,food\nok,ok,0,extra\n"
    path = write(tmp_path, "a.csv", content)
    with pytest.raises(DataError, match="2 field") as err:
        read_examples(path)
    assert str(err.value).startswith(f"{path}:3: ")
    res = read_examples(path, skip_invalid=True)
    assert len(res.examples) == 1
    assert [s.source for s in res.skipped] == [f"{path}:3", f"{path}:4"]


def test_a_csv_split_by_semicolons_is_told_so(tmp_path: Path) -> None:
    """A new user's trial: a spreadsheet's CSV in a locale whose list separator is ';' read
    as one column, the error naming columns it lacks and not why."""
    path = write(tmp_path, "a.csv", "text;aspect;label\ngood food;food;positive\n")
    with pytest.raises(DataError, match="one column, 'text;aspect;label', split by semicolons"):
        read_examples(path)
    path = write(tmp_path, "b.csv", "text\tterm\tlabel\ngood food\tfood\tpositive\n")
    with pytest.raises(DataError, match="split by tabs: separate the columns with commas"):
        read_examples(path)
    path = write(tmp_path, "c.csv", '"notes; free text"\nhello\n')  # one column, a ';' in it
    with pytest.raises(DataError, match="lacks the column") as err:
        read_examples(path)
    assert "split by" not in str(err.value)


def test_csv_missing_column(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", "text,label\ngood food,1\n")
    with pytest.raises(DataError, match="aspect/term") as err:
        read_examples(path, skip_invalid=True)
    assert str(err.value).startswith(f"{path}:1: ")


@pytest.mark.parametrize("content", ["", "text,aspect,label\n"])
def test_csv_empty(tmp_path: Path, content: str) -> None:
    with pytest.raises(DataError, match="no examples"):
        read_examples(write(tmp_path, "a.csv", content))


# --------------------------------------------------------------------------- read_many


def test_read_many(tmp_path: Path) -> None:
    a = write(tmp_path, "a.seg", "a $T$\nx\n1\nno placeholder\ny\n0\n")
    b = write(tmp_path, "b.jsonl", '{"text": "good food", "aspect": "food", "label": -1}\n')
    res = read_many([a, str(b)], skip_invalid=True)
    assert [ex.source for ex in res.examples] == [f"{a}:1", f"{b}:1"]
    assert [s.source for s in res.skipped] == [f"{a}:4"]
    assert len(read_many(b).examples) == 1  # a single path is fine
    with pytest.raises(DataError, match=r"a\.seg:4"):
        read_many([b, a])
    with pytest.raises(ValueError, match="no paths"):
        read_many([])


# --------------------------------------------------------------------------- real data


def _data(rel: str) -> Path:
    path = DATA / rel
    if not path.is_file():
        pytest.skip(f"benchmark data not found at {path}")
    return path


@pytest.mark.parametrize(
    ("rel", "total", "counts"),
    [
        ("semeval14/Restaurants_Train.xml.seg", 3608, (807, 637, 2164)),
        ("semeval14/Restaurants_Test_Gold.xml.seg", 1120, (196, 196, 728)),
        ("semeval14/Laptops_Train.xml.seg", 2328, (870, 464, 994)),
        ("semeval14/Laptops_Test_Gold.xml.seg", 638, (128, 169, 341)),
        # The README says 6247 / 691; the files hold 6248 / 692 complete records (the
        # standard Dong et al. counts). The README's figures are `wc -l` / 3, which misses
        # the last record because neither file ends with a newline.
        ("twitter/train.raw", 6248, (1560, 3127, 1561)),
        ("twitter/test.raw", 692, (173, 346, 173)),
        ("mams/train.xml", 11186, None),
        ("mams/val.xml", 1332, None),
        ("mams/test.xml", 1336, None),
        # the train-only sets (Negative/Neutral/Positive; ACOS as JSONL with offsets)
        ("semeval15/restaurant_train.raw", 1201, (256, 36, 909)),
        ("television/Television_Train.xml.seg", 3746, (919, 287, 2540)),
        ("tshirt/Menstshirt_Train.xml.seg", 1871, (699, 50, 1122)),
        ("yelp/yelp.train.txt", 808, (239, 54, 515)),
        ("acos-laptop/train.jsonl", 2781, (1004, 173, 1604)),
        ("acos-laptop/dev.jsonl", 299, (100, 20, 179)),
    ],
)
def test_real_data_counts(rel: str, total: int, counts: tuple[int, int, int] | None) -> None:
    res = read_examples(_data(rel))
    assert res.skipped == []
    assert len(res.examples) == total
    if counts is not None:
        assert tuple(label_counts(res.examples).values()) == counts
    for ex in res.examples:
        assert 0 <= ex.start < ex.end <= len(ex.text)
        assert ex.term.strip()


def test_real_yelp_multi_sentence_texts_keep_the_aspect_in_the_window() -> None:
    # Yelp's texts are whole reviews (up to ~900 words): the aspect may sit far past the
    # model's 128-token window, which must then move to it rather than cut it off.
    examples = read_examples(_data("yelp/yelp.train.txt")).examples
    long = [e for e in examples if len(tokenize(e.text)) > 128]
    assert len(long) > 100
    pipe = WordPipeline(["<pad>", "<unk>"], max_len=128)
    for e in long:
        enc = pipe.encode(e.text, e.start, e.end)
        assert len(enc.ids) == 128
        marked = [t for t, m in zip(enc.tokens, enc.aspect_mask, strict=True) if m]
        assert marked and e.text[marked[0].start : marked[-1].end] == e.term


@pytest.mark.parametrize(
    "rel", ["semeval14/xml/Restaurants_Train_v2.xml", "semeval14/xml/Laptops_Train_v2.xml"]
)
def test_real_official_xml(rel: str) -> None:
    path = _data(rel)
    res = read_examples(path)
    assert res.skipped == []
    expected = []
    for sentence in ET.parse(path).getroot().iter("sentence"):
        for a in sentence.iter("aspectTerm"):
            if a.get("polarity") != "conflict":
                expected.append(
                    (f"{path}:{sentence.get('id')}", a.get("term"), int(a.get("from", "")))
                )
    assert len(expected) > 2000
    assert [(ex.source, ex.term, ex.start) for ex in res.examples] == expected
    assert all(ex.text[ex.start : ex.end] == ex.term for ex in res.examples)
    assert all(ex.label in ("negative", "neutral", "positive") for ex in res.examples)


# ------------------------------------------------------------------ edge cases (session 53)


def test_a_lone_surrogate_escape_is_refused_where_it_is_read(tmp_path: Path) -> None:
    """JSON can spell one ("\\ud800"); no file (nor a run's dev split) can hold it as UTF-8,
    so training used to fail after its last epoch, naming no file."""
    path = write(
        tmp_path,
        "s.jsonl",
        '{"text": "The food \\ud800 is good", "aspect": "food", "label": "positive"}\n',
    )
    with pytest.raises(DataError, match=r"s\.jsonl:1: the text holds a lone surrogate \(U\+D800"):
        read_examples(path)


def test_xml_aspects_of_a_second_aspect_terms_element_are_read(tmp_path: Path) -> None:
    terms = (
        '<aspectTerms><aspectTerm term="food" polarity="positive" from="4" to="8"/></aspectTerms>'
        '<aspectTerms><aspectTerm term="food" polarity="negative" from="17" to="21"/></aspectTerms>'
    )
    content = (
        '<?xml version="1.0"?><sentences><sentence id="7"><text>The food and the food.</text>'
        + terms
        + "</sentence></sentences>"
    )
    got = read_examples(write(tmp_path, "two.xml", content)).examples
    assert [(e.start, e.label) for e in got] == [(4, "positive"), (17, "negative")]


@pytest.mark.parametrize(
    ("inner", "reason"),
    [
        ("<text>The <b>food</b> was good</text>", "markup inside <text>"),
        ("<text>The food</text><text>was good</text>", "2 <text> elements"),
    ],
)
def test_xml_text_that_offsets_cannot_point_into_is_refused(
    tmp_path: Path, inner: str, reason: str
) -> None:
    content = (
        '<?xml version="1.0"?><sentences><sentence id="3">' + inner + "<aspectTerms>"
        '<aspectTerm term="food" polarity="positive" from="4" to="8"/></aspectTerms>'
        "</sentence></sentences>"
    )
    with pytest.raises(DataError, match=rf"sentence 3 .*{reason}"):
        read_examples(write(tmp_path, "m.xml", content))


@pytest.mark.parametrize("inner", ["", "<text> </text>", "<text>a <b>b</b></text>"])
def test_an_xml_sentence_refused_whole_counts_each_of_its_aspects(
    tmp_path: Path, inner: str
) -> None:
    """A sentence with no text (or one the offsets cannot point into) was one skipped
    record however many aspects it held, so three gold aspects left the count as one."""
    terms = "".join(f'<aspectTerm term="{t}" polarity="positive" from="0" to="1"/>' for t in "abc")
    content = (
        f'<?xml version="1.0"?><sentences><sentence id="7">{inner}<aspectTerms>{terms}'
        '</aspectTerms></sentence><sentence id="8"><text>The food</text><aspectTerms>'
        '<aspectTerm term="food" polarity="negative" from="4" to="8"/></aspectTerms>'
        "</sentence></sentences>"
    )
    res = read_examples(write(tmp_path, "m.xml", content), skip_invalid=True)
    assert [e.term for e in res.examples] == ["food"]
    assert len(res.skipped) == 3
    assert {s.source for s in res.skipped} == {f"{tmp_path}/m.xml: sentence 7 (line 1)"}


def test_a_jsonl_integer_too_long_to_read_is_a_bad_record_in_the_readers_words(
    tmp_path: Path,
) -> None:
    """Python's own "Exceeds the limit (4300 digits) for integer string conversion ... use
    sys.set_int_max_str_digits()" was the message; now it is said as other bad JSON is."""
    good = '{"text": "nice pizza", "aspect": "pizza", "label": "positive"}\n'
    path = write(tmp_path, "n.jsonl", '{"text": "x", "n": ' + "1" * 5000 + "}\n" + good)
    with pytest.raises(DataError, match=r"n\.jsonl:1: bad JSON: a number of more than 4300 digits"):
        read_examples(path)
    assert len(read_examples(path, skip_invalid=True).examples) == 1


def test_a_csv_row_of_empty_fields_is_invalid_not_a_blank_line(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "text,aspect,label\n,,\nThe food,food,positive\n")
    with pytest.raises(DataError, match=r"e\.csv:2: every field is empty"):
        read_examples(path)
    got = read_examples(path, skip_invalid=True)
    assert len(got.examples) == 1 and len(got.skipped) == 1


def test_an_empty_cell_falls_through_to_the_next_column_name(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", "text,term,polarity,aspect\nThe food is good,food,positive,\n")
    (ex,) = read_examples(path).examples
    assert (ex.start, ex.end, ex.label) == (4, 8, "positive")


def test_counts_of_what_was_mended_or_is_doubtful_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO)
    three = write(tmp_path, "t.raw", "the $T$ and $T$\nfood\n1\nthe $T$ was ok\nfood\n-1\n")
    read_examples(three)
    text = caplog.text
    assert "1 sentence(s) with more than one $T$" in text
    assert "1 aspect span(s) given again with another label" not in text  # different texts
    caplog.clear()
    twice = write(tmp_path, "d.raw", "the $T$ was ok\nfood\n1\nthe $T$ was ok\nfood\n-1\n")
    read_examples(twice)
    assert "1 aspect span(s) given again with another label: both kept" in caplog.text
    # where: the first such record, and the one it disagrees with (the user edits the file)
    assert f"first {twice}:4 (negative) against {twice}:1 (positive)" in caplog.text


# --------------------------------------------------------------------------- file-level faults


def test_xml_in_utf16_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """It was refused as "not valid UTF-8": the encoding regex cannot see a UTF-16
    declaration, so the bytes went to the UTF-8 decoder. Both byte orders read alike."""
    want = spans(read_examples(write(tmp_path, "u8.xml", XML_GOOD)))
    content = XML_GOOD.replace('encoding="UTF-8"', 'encoding="UTF-16"', 1)
    le = write(tmp_path, "le.xml", codecs.BOM_UTF16_LE + content.encode("utf-16-le"))
    be = write(tmp_path, "be.xml", codecs.BOM_UTF16_BE + content.encode("utf-16-be"))
    assert spans(read_examples(le)) == spans(read_examples(be)) == want
    assert [e.source for e in read_examples(le).examples][0] == f"{le}:10"


@pytest.mark.parametrize("name", ["u16.jsonl", "u16.csv", "u16.raw"])
def test_a_utf16_file_of_another_format_is_told_to_be_utf8_not_xml(
    tmp_path: Path, name: str
) -> None:
    """Any UTF-16 file was told "it looks like XML: name it .xml": a JSONL file saved as
    UTF-16 (Windows' "Unicode") was sent off to be renamed."""
    row = '{"text": "the food was good", "aspect": "food", "label": "positive"}\n'
    path = write(tmp_path, name, codecs.BOM_UTF16_LE + row.encode("utf-16-le"))
    with pytest.raises(DataError) as err:
        read_examples(path)
    assert "XML" not in str(err.value)
    assert str(err.value).endswith("it is UTF-16: save it as UTF-8"), err.value
    xml = write(tmp_path, "u16.jsonl", codecs.BOM_UTF16_LE + "<Reviews/>".encode("utf-16-le"))
    with pytest.raises(DataError, match="it looks like XML: name it .xml"):  # as before
        read_examples(xml)


#: a CSV and a 3-line file of one record, by suffix
OTHERS = {".csv": "text,aspect,label\nthe food,food,1\n", ".raw": "the $T$ was good\nfood\n1\n"}


@pytest.mark.parametrize("encoding", ["utf-32", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("name", ["a.xml", "a.jsonl", "a.csv", "a.raw"])
def test_a_utf32_file_is_named_utf32(tmp_path: Path, name: str, encoding: str) -> None:
    """UTF-32's byte-order mark starts with UTF-16's: it was "it is UTF-16", or, without
    its mark, "bad JSON", "no $T$ placeholder", "malformed XML" at column 2."""
    row = '{"text": "the café was good", "aspect": "café", "label": "positive"}\n'
    content = {".xml": _xml('<aspectTerm term="food" polarity="neutral"/>'), **OTHERS}.get(
        Path(name).suffix, row
    )
    path = write(tmp_path, name, content.encode(encoding))
    with pytest.raises(DataError) as err:
        read_examples(path)
    bom = "" if encoding == "utf-32" else " without a byte-order mark"
    assert str(err.value) == f"{path}:1: it is UTF-32{bom}: save it as UTF-8"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("name", ["a.jsonl", "a.csv", "a.raw"])
def test_a_utf16_file_without_a_byte_order_mark_is_named_utf16(
    tmp_path: Path, name: str, encoding: str
) -> None:
    """Read as UTF-8, its NUL bytes made "bad JSON" (column 2), "no $T$ placeholder"."""
    row = '{"text": "the café was good", "aspect": "café", "label": "positive"}\n'
    content = OTHERS.get(Path(name).suffix, row)
    path = write(tmp_path, name, content.encode(encoding))
    with pytest.raises(DataError) as err:
        read_examples(path)
    assert str(err.value) == f"{path}:1: it is UTF-16 without a byte-order mark: save it as UTF-8"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_xml_in_utf16_without_a_byte_order_mark_is_read(tmp_path: Path, encoding: str) -> None:
    """Its ASCII text read (expat guesses UTF-16 from "<?"); a "café" in it was "not valid
    UTF-8 ... it does not look like XML"."""
    want = spans(read_examples(write(tmp_path, "u8.xml", XML_GOOD)))
    content = XML_GOOD.replace('encoding="UTF-8"', 'encoding="UTF-16"', 1)
    assert spans(read_examples(write(tmp_path, "w.xml", content.encode(encoding)))) == want


def test_xml_in_an_encoding_expat_refuses_names_the_file(tmp_path: Path) -> None:
    """shift_jis is a codec Python knows, but expat refuses multi-byte encodings with a bare
    ValueError (only LookupError was caught)."""
    content = XML_GOOD.replace('encoding="UTF-8"', 'encoding="shift_jis"', 1)
    path = write(tmp_path, "sj.xml", content)
    with pytest.raises(
        DataError, match=rf"^{path}:1: cannot read the declared encoding 'shift_jis'"
    ):
        read_examples(path)


@pytest.mark.parametrize("name", ["a.jsonl", "a.csv", "a.seg", "a.xml"])
def test_a_gzip_file_is_named_as_one(tmp_path: Path, name: str) -> None:
    """It said "not valid UTF-8 (byte 0x8b at offset 1)"."""
    path = write(tmp_path, name, gzip.compress(b'{"text": "a", "aspect": "a", "label": 1}\n'))
    with pytest.raises(DataError, match=rf"^{path}: gzip-compressed; decompress it first$"):
        read_examples(path)


@pytest.mark.parametrize("skip", [False, True])
def test_an_unclosed_csv_quote_is_reported_where_its_row_starts(tmp_path: Path, skip: bool) -> None:
    """The quote swallowed the rest of the file into one field: one bad record (skipped with
    --skip-invalid, the rest of the file with it), or an error that named the wrong fault.
    A quoted field over two lines is still one field, and the lines after it count."""
    content = (
        "text,aspect,label\n"
        '"The food\nwas good",food,positive\n'
        'The wine was bad,wine,"negative\n'
        "The staff was ok,staff,neutral\n"
        "The view was nice,view,positive\n"
    )
    path = write(tmp_path, "q.csv", content)
    with pytest.raises(DataError, match=rf"^{path}:4: bad CSV .*never closed"):
        read_examples(path, skip_invalid=skip)
    closed = write(tmp_path, "c.csv", content.replace('"negative', "negative"))
    assert [label for *_, label in spans(read_examples(closed))] == [
        "positive",
        "negative",
        "neutral",
        "positive",
    ]


@pytest.mark.parametrize("skip", [False, True])
def test_a_row_a_quote_took_into_a_field_of_the_right_width_is_refused(
    tmp_path: Path, skip: bool
) -> None:
    """A quote left open, closed by a quote that ends a field: one record of the header's
    width, the row in between read as part of a text and gone without a word. Refused
    (skipped with --skip-invalid), naming the row inside; a text over two lines whose lines
    are no rows is read."""
    content = (
        "text,aspect,label\n"
        '"The food was good,food,positive\nThe wine",wine,negative\n'
        '"The food, the wine, and the view\nwere fine",view,neutral\n'
    )
    path = write(tmp_path, "q.csv", content)
    said = (
        "line 2 reads as a row of its own, inside a field: a quote not closed? (it runs to line 3)"
    )
    if not skip:
        with pytest.raises(DataError, match=rf"^{path}:2: {re.escape(said)}$"):
            read_examples(path)
        return
    got = read_examples(path, skip_invalid=True)
    assert [(x.source, x.reason) for x in got.skipped] == [(f"{path}:2", said)]
    assert [label for *_, label in spans(got)] == ["neutral"]


def test_a_jsonl_line_nested_too_deeply_names_the_file_and_line(tmp_path: Path) -> None:
    """json.loads raised a bare RecursionError."""
    good = '{"text": "The food was good", "aspect": "food", "label": "positive"}\n'
    path = write(tmp_path, "deep.jsonl", good + "[" * 100_000 + "]" * 100_000 + "\n" + good)
    with pytest.raises(DataError, match=rf"^{path}:2: bad JSON: nested too deeply"):
        read_examples(path)
    res = read_examples(path, skip_invalid=True)
    assert len(res.examples) == 2 and [s.source for s in res.skipped] == [f"{path}:2"]


# ------------------------------------------------------------------ edge cases (review: readers)


def test_a_jsonl_key_given_twice_is_refused_not_read_as_its_last_value(tmp_path: Path) -> None:
    """json.loads keeps the last of two "label" keys: the record was read as negative with no
    word, though its line also says positive."""
    good = '{"text": "The food was good", "aspect": "food", "label": "positive"}\n'
    twice = (
        '{"text": "The wine was bad", "aspect": "wine", "label": "positive", "label": "negative"}'
    )
    path = write(tmp_path, "dup.jsonl", good + twice + "\n")
    said = rf"^{path}:2: the key 'label' is given twice in one object$"
    with pytest.raises(DataError, match=said):
        read_examples(path)
    res = read_examples(path, skip_invalid=True)
    assert spans(res) == [("The food was good", "food", "positive")]
    assert [s.source for s in res.skipped] == [f"{path}:2"]


@pytest.mark.parametrize("name", ["list.json", "list.jsonl"])
def test_a_json_document_is_named_as_one_not_as_bad_json_on_its_first_line(
    tmp_path: Path, name: str
) -> None:
    """A pretty-printed JSON array (a ".json" file is read as JSON Lines) was refused as
    "line 1: bad JSON: Expecting value", though its first line, "[", is good JSON's start."""
    rows = [{"text": "The food was good", "aspect": "food", "label": "positive"}] * 2
    path = write(tmp_path, name, json.dumps(rows, indent=2) + "\n")
    with pytest.raises(DataError, match=rf"^{path}:1: .*one JSON document.*one JSON object a line"):
        read_examples(path)
    with pytest.raises(DataError, match="one JSON document"):
        read_examples(path, skip_invalid=True)  # not one bad record a line


def test_3line_with_bare_cr_line_breaks_is_named_as_such(tmp_path: Path) -> None:
    """Old-Mac line breaks (CR alone) made a file of many records "truncated record: 1
    line(s) where 3 are expected"."""
    path = write(
        tmp_path, "mac.seg", "the $T$ was good\rfood\rpositive\rthe $T$ was bad\rwine\r-1\r"
    )
    with pytest.raises(DataError, match=rf"^{path}:1: .*line breaks are CR alone"):
        read_examples(path)


def test_records_repeated_exactly_are_counted_in_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Kept as the file has them (the benchmark sets carry a few), but no longer without a
    word: only a repeat with another label was logged."""
    import logging

    caplog.set_level(logging.INFO)
    rec = '{"text": "The food was good", "aspect": "food", "label": "positive"}\n'
    path = write(tmp_path, "twice.jsonl", rec * 3)
    assert len(read_examples(path).examples) == 3
    assert "2 record(s) repeat an earlier record exactly: kept" in caplog.text


def test_an_aspect_without_offsets_that_occurs_twice_is_counted_and_warned_of(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """It labelled its first occurrence without a word: "the room was clean; the second
    room smelled", room negative, trained negative on the clean room."""
    path = write(
        tmp_path,
        "r.csv",
        "text,aspect,label,start,end\nnice room,room,positive,,\n"
        '"the room was clean, the other room smelled",room,negative,,\n'
        '"the room was clean, the other room smelled",room,negative,30,34\n',
    )
    with caplog.at_level(logging.WARNING, logger="absa.training.readers"):
        (first, second, third) = read_examples(path).examples
    assert (second.start, third.start) == (4, 30)  # the first occurrence, as before
    assert caplog.messages == [
        f"{path}: 1 aspect(s) without start/end occur more than once in their sentence (the "
        f"first at {path}:3): each labels its first occurrence; give start and end to label "
        "another"
    ]


def test_columns_from_and_to_are_named_as_read_when_they_do_not_hold_offsets(
    tmp_path: Path,
) -> None:
    """A CSV with a 'from' column (a guest's country) or 'from'/'to' dates was refused with
    "give both 'start' and 'end'" and "'start'/'end' must be integers": columns the file
    does not have. The columns read are named, and what they are read as."""
    country = write(tmp_path, "c.csv", "text,aspect,label,from\nnice pizza,pizza,positive,FR\n")
    with pytest.raises(DataError) as e:
        read_examples(country)
    assert str(e.value).startswith(f"{country}:2: give both 'from' and 'to' or neither (read as")
    assert "rename a column that means another thing" in str(e.value)
    dates = write(
        tmp_path, "d.csv", "text,aspect,label,from,to\nnice pizza,pizza,positive,2024-05-01,x\n"
    )
    with pytest.raises(DataError, match=r"d\.csv:2: 'from' and 'to' must be integers \(read as"):
        read_examples(dates)


def test_a_huge_start_value_is_not_echoed_whole_in_the_readers_message(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.csv",
        f"text,aspect,label,start,end\nnice pizza,pizza,positive,{'1' * 9999},9\n",
    )
    with pytest.raises(
        DataError, match=r"s\.csv:2: 'start' and 'end' must be integers, got '1+…'"
    ) as e:
        read_examples(path)
    assert len(str(e.value)) < 300


def test_xml_declared_latin1_whose_bytes_are_utf8_is_warned_of(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Declared ISO-8859-1, written as UTF-8 (an editor that kept the old declaration): read
    as declared, "café" became "cafÃ©" without a word."""
    content = _xml('      <aspectTerm term="café" polarity="positive"/>\n', text="Le café.")
    content = content.replace('version="1.0"?>', 'version="1.0" encoding="ISO-8859-1"?>')
    path = write(tmp_path, "mislabelled.xml", content.encode("utf-8"))
    with caplog.at_level(logging.WARNING, logger="absa.training.readers"):
        read_examples(path)
    assert f"{path}: declares encoding 'iso-8859-1', but its bytes read as UTF-8" in caplog.text
    caplog.clear()
    latin = write(tmp_path, "latin1.xml", content.encode("latin-1"))
    with caplog.at_level(logging.WARNING, logger="absa.training.readers"):
        (ex,) = read_examples(latin).examples
    assert ex.term == "café" and "declares encoding" not in caplog.text


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_semeval_offset_names_from_and_to_are_read(tmp_path: Path, suffix: str) -> None:
    """`term`, `polarity` (SemEval's names) were read, `from`/`to` ignored without a word:
    the row's second "food" was read as its first, with the second's label."""
    text = "The food was cold but the food at lunch was great"
    if suffix == "jsonl":
        row = {"text": text, "term": "food", "polarity": "positive", "from": 26, "to": 30}
        content = json.dumps(row) + "\n"
    else:
        content = f'text,term,polarity,from,to\n"{text}",food,positive,26,30\n'
    (ex,) = read_examples(write(tmp_path, f"ft.{suffix}", content)).examples
    assert (ex.start, ex.end, ex.label) == (26, 30, "positive")


def test_aliases_that_disagree_are_refused(tmp_path: Path) -> None:
    """{"aspect": "food", "term": "staff", "label": "positive", "polarity": "negative"} was
    read as food/positive: which one was meant, no one knows."""
    row = {"text": "The food and the staff", "aspect": "food", "term": "staff", "label": "positive"}
    path = write(tmp_path, "both.jsonl", json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"both\.jsonl:1: 'aspect' and 'term' disagree"):
        read_examples(path)
    same = {**row, "term": "food", "polarity": "positive"}  # the same value twice: fine
    (ex,) = read_examples(write(tmp_path, "same.jsonl", json.dumps(same) + "\n")).examples
    assert ex.term == "food"


def test_a_csv_value_with_spaces_after_its_comma_is_read_with_offsets_too(tmp_path: Path) -> None:
    """`text, aspect, label, start, end` / `The food was great, food, positive, 4, 8`: the
    header's spaces were stripped, the aspect's not, and its offsets then did not match
    " food" (without offsets the same row was read)."""
    content = "text, aspect, label, start, end\nThe food was great, food, positive, 4, 8\n"
    (ex,) = read_examples(write(tmp_path, "spaces.csv", content)).examples
    assert (ex.term, ex.start, ex.end) == ("food", 4, 8)


def test_xml_entities_a_doctype_leaves_undefined_are_refused(tmp_path: Path) -> None:
    """With a DOCTYPE that points outside the file, expat skips an entity it cannot define:
    "caf&eacute; au lait" was read as "caf au lait", its spans moved, without a word
    (without the DOCTYPE: "undefined entity", the line named)."""
    content = (
        '<?xml version="1.0"?>\n<!DOCTYPE sentences SYSTEM "semeval.dtd">\n<sentences>\n'
        '<sentence id="1"><text>The caf&eacute; was great</text><aspectTerms>'
        '<aspectTerm term="caf&eacute;" polarity="positive" from="4" to="8"/>'
        "</aspectTerms></sentence>\n</sentences>\n"
    )
    with pytest.raises(DataError, match=r"dtd\.xml:4: .*entity &eacute; is not defined"):
        read_examples(write(tmp_path, "dtd.xml", content))


def test_xml_offsets_that_mark_the_term_in_another_case_keep_their_place(tmp_path: Path) -> None:
    """term "food" at 0-4 of "Food was great, but the food court outside was dirty": the
    offsets mark it (its case aside), and the reader moved it to the one exact "food", the
    food court's, with this aspect's label."""
    content = _xml(
        '      <aspectTerm term="food" polarity="positive" from="0" to="4"/>\n',
        text="Food was great, but the food court outside was dirty",
    )
    (ex,) = read_examples(write(tmp_path, "case.xml", content)).examples
    assert (ex.start, ex.end, ex.label) == (0, 4, "positive")


def test_a_3line_record_short_of_a_line_costs_itself_alone(tmp_path: Path) -> None:
    """Record C lacks its term line: with --skip-invalid every record after it was read
    two lines off and skipped ("skipped 5 invalid records", D to G lost), and strict, the
    error named D's sentence as "unknown label 'D $T$'", not C's missing line."""
    lines = ["A $T$", "food", "1", "B $T$", "bar", "1", "C $T$", "1", "D $T$", "baz", "-1",
             "E $T$", "qux", "0", "F $T$", "quux", "1", "G $T$", "zz", "1"]  # fmt: skip
    path = write(tmp_path, "missing.txt", "\n".join(lines) + "\n")
    read = read_examples(path, skip_invalid=True)
    assert [e.term for e in read.examples] == ["food", "bar", "baz", "qux", "quux", "zz"]
    assert len(read.skipped) == 1 and read.skipped[0].source == f"{path}:8"  # as the error
    with pytest.raises(DataError, match=r"missing\.txt:8: .*the next sentence"):
        read_examples(path)
    blank = ["A $T$", "food", "1", "", "bar", "1", "C $T$", "pasta", "0"]  # a blank sentence
    read = read_examples(write(tmp_path, "blank.txt", "\n".join(blank) + "\n"), skip_invalid=True)
    assert [e.term for e in read.examples] == ["food", "pasta"]


def test_format_hints_are_given_only_for_what_looks_like_the_format(tmp_path: Path) -> None:
    """A 3-line file whose first sentence opens with "<3" was told "it looks like XML", one
    that opens with "[Update]" "it looks like JSON", beside its real error (a bad label)."""
    for name, first in (("heart.txt", "<3 the $T$ rocks"), ("update.txt", "[Update] the $T$")):
        path = write(tmp_path, name, f"{first}\nphone\nnegatve\n")
        with pytest.raises(DataError, match="unknown label") as err:
            read_examples(path)
        assert "looks like" not in str(err.value), err.value


def test_a_csv_header_with_trailing_empty_columns_is_read(tmp_path: Path) -> None:
    """ "text,aspect,label,," (Excel's trailing commas) was "duplicate CSV column(s) " of an
    empty name."""
    content = "text,aspect,label,,\nThe food was great,food,positive,,\n"
    (ex,) = read_examples(write(tmp_path, "excel.csv", content)).examples
    assert ex.term == "food"


def test_integral_floats_read_as_labels_and_xml_offsets_as_elsewhere(tmp_path: Path) -> None:
    """pandas writes a label column with a gap as floats ("1.0"): refused in every format,
    where offsets of "4.0" were taken; and XML's from="18.0" was refused where JSONL's
    "start": "18.0" was taken."""
    assert parse_label(1.0) == parse_label("1.0") == "positive"
    assert parse_label("-1.0") == parse_label(-1.0) == "negative" and parse_label(0.0) == "neutral"
    for bad in (1.5, "2.0", float("nan")):
        with pytest.raises(ValueError, match="unknown label"):
            parse_label(bad)  # type: ignore[arg-type]
    content = _xml(
        '      <aspectTerm term="food" polarity="positive" from="18.0" to="22.0"/>\n',
        text="The food and more food",
    )
    (ex,) = read_examples(write(tmp_path, "floats.xml", content)).examples
    assert (ex.start, ex.end) == (18, 22)


# --------------------------------------------------------------------------- SemEval-2015/16 XML

#: SemEval-2015/2016 XML (our own sentences): one <Opinion> per target and category, a
#: target "NULL" for an aspect the sentence does not name (a category alone)
XML_OPINIONS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Reviews>
  <Review rid="r1">
    <sentences>
      <sentence id="r1:0">
        <text>The pasta was cheap but bland.</text>
        <Opinions>
      <Opinion target="pasta" category="FOOD#PRICES" polarity="positive" from="4" to="9"/>
      <Opinion target="pasta" category="FOOD#QUALITY" polarity="negative" from="4" to="9"/>
        </Opinions>
      </sentence>
      <sentence id="r1:1">
        <text>Great wine list and friendly waiters.</text>
        <Opinions>
      <Opinion target="wine list" category="DRINKS#PRICES" polarity="positive" from="6" to="15"/>
      <Opinion target="wine list" category="DRINKS#QUALITY" polarity="positive" from="6" to="15"/>
      <Opinion target="waiters" category="SERVICE#GENERAL" polarity="positive" from="29" to="36"/>
        </Opinions>
      </sentence>
      <sentence id="r1:2">
        <text>We will not be back.</text>
        <Opinions>
      <Opinion target="NULL" category="RESTAURANT#GENERAL" polarity="negative" from="0" to="0"/>
        </Opinions>
      </sentence>
      <sentence id="r1:3" OutOfScope="TRUE"><text>Whatever.</text></sentence>
      <sentence id="r1:4">
        <text>The staff was rude but the manager was lovely.</text>
        <Opinions>
      <Opinion target="staff" category="SERVICE#GENERAL" polarity="negative" from="4" to="9"/>
      <Opinion target="manager" category="SERVICE#GENERAL" polarity="positive" from="27" to="34"/>
        </Opinions>
      </sentence>
    </sentences>
  </Review>
</Reviews>
"""


def test_semeval_2016_opinions_are_read_as_aspect_terms(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each target is one aspect (its categories' opinions agree) or a conflict (they do not:
    dropped, as SemEval-2014's conflict is); a target NULL is a category alone."""
    path = write(tmp_path, "restaurants.xml", XML_OPINIONS)
    with caplog.at_level("INFO", logger="absa.training.readers"):
        res = read_examples(path)
    assert [(ex.term, ex.label, ex.source) for ex in res.examples] == [
        ("wine list", "positive", f"{path}:r1:1"),
        ("waiters", "positive", f"{path}:r1:1"),
        ("staff", "negative", f"{path}:r1:4"),
        ("manager", "positive", f"{path}:r1:4"),
    ]
    assert (res.examples[0].start, res.examples[0].end) == (6, 15)
    assert "1 'conflict'" in caplog.text
    assert "1 opinion(s) without a target" in caplog.text
    assert "repeat an earlier record" not in caplog.text  # wine list's two opinions: one aspect


def test_semeval_2016_opinions_without_any_target_say_to_read_categories(tmp_path: Path) -> None:
    content = XML_OPINIONS.replace('target="', 'target="NULL" was="')
    with pytest.raises(
        DataError, match=r"no examples \(8 opinion\(s\) without a target.*--task category"
    ):
        read_examples(write(tmp_path, "laptops.xml", content))


def test_semeval_2016_opinion_errors_name_the_opinion_line(tmp_path: Path) -> None:
    content = XML_OPINIONS.replace('polarity="positive" from="29"', 'polarity="great" from="29"')
    with pytest.raises(DataError, match=r"sentence r1:1 \(line 17\).*great"):
        read_examples(write(tmp_path, "a.xml", content))
    res = read_examples(write(tmp_path, "b.xml", content), skip_invalid=True)
    assert [ex.term for ex in res.examples] == ["wine list", "staff", "manager"]


def test_aspect_terms_beside_opinions_are_read_once(tmp_path: Path) -> None:
    both = XML_OPINIONS.replace(
        '<Opinions>\n      <Opinion target="staff"',
        '<aspectTerms><aspectTerm term="staff" polarity="negative" from="4" to="9"/></aspectTerms>'
        '\n        <Opinions>\n      <Opinion target="staff"',
    )
    assert "<aspectTerms>" in both
    res = read_examples(write(tmp_path, "a.xml", both))
    assert [ex.term for ex in res.examples] == ["wine list", "waiters", "staff"]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("label.seg", "A $T$\nfood\n1\nB $T$\nbar\n2\nC $T$\nbaz\n-1\n"),  # line 6
        ("term.seg", "A $T$\nfood\n1\nB $T$\n \n1\n"),  # the empty term: line 5
        (
            "xml.xml",
            '<?xml version="1.0"?><sentences><sentence id="s9"><text>The food'
            '</text><aspectTerms><aspectTerm term="food" polarity="great" from="4" to="8"/>'
            "</aspectTerms></sentence></sentences>",
        ),  # fmt: skip
        ("cats.jsonl", '{"text": "The food", "aspect": "food", "label": "2"}\n'),
    ],
)
def test_a_skipped_record_names_the_place_its_error_names(
    tmp_path: Path, name: str, content: str
) -> None:
    """`absa train --train badpol.seg` said "badpol.seg:153: unknown label '2'", and with
    --skip-invalid "skipped ... first: badpol.seg:151" (the record's first line); an XML
    record was skipped as "m.xml:s9" (its sentence id, read as a line) where the error said
    "sentence s9 (line 1)". The record skipped names what the error names."""
    path = write(tmp_path, name, content)
    with pytest.raises(DataError) as err:
        read_examples(path)
    res = read_examples(path, skip_invalid=True)
    assert len(res.skipped) == 1
    bad = res.skipped[0]
    assert str(err.value) == f"{bad.source}: {bad.reason}"


def test_bracket_free_reads_penn_treebank_brackets_as_the_brackets() -> None:
    """Rest14 test's "-LRB- including 2 drinks" is MAMS train's "(including 2 drinks": one
    sentence to the overlap check, which normalise_text alone kept apart ("lrb")."""
    from absa.training.overlap import bracket_free, normalise_text

    seg = "Great value -LRB- including 2 drinks -RRB- , really ."
    raw = "Great value (including 2 drinks), really."
    assert bracket_free(seg) == bracket_free(raw) == normalise_text(raw)
    assert normalise_text(seg) != normalise_text(raw)
    for escape in ("-LSB-", "-RSB-", "-LCB-", "-RCB-"):
        assert bracket_free(f"a {escape} b") == "ab"
