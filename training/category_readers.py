"""Readers for labelled aspect categories: SemEval-2014/2016 XML, JSONL and CSV.

Both yield ``CategoryExample`` records in a ``ReadResult``, with the same error handling as
``training.readers`` (a bad record raises ``DataError`` naming file and line or sentence,
unless ``skip_invalid``; ``conflict`` is dropped and counted):

- ``"xml"``: SemEval-2014 restaurants: ``<sentence id><text>..</text><aspectCategories>
  <aspectCategory category polarity/></aspectCategories></sentence>``; sentences without
  categories are skipped; markup inside ``<text>`` is a bad record (the text would be cut).
  SemEval-2015/2016 XML's ``<Opinion category polarity>`` too: each category of a sentence
  once (its opinions, one per target, merged; ``conflict`` where they disagree).
- ``"jsonl"``: one object per line with ``text``, ``category`` and ``label`` (or
  ``polarity``; a null or blank ``label`` falls through to ``polarity``, as in
  ``training.readers``), as ACOS's ``*.categories.jsonl``.
- ``"csv"``: a header row naming the same columns as JSONL, then one row per example.

The format comes from the extension: ``.xml``, ``.csv``, anything else JSONL (a ``.seg``
or ``.raw`` file whose text is not JSON is refused as SemEval's 3-line format: it names
terms, not categories).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from absa.errors import InputError
from absa.model.aspects import check_unicode
from absa.training.readers.files import decode, read_bytes
from absa.training.readers.semeval_xml import opinions_merged, parse_xml, xml_where
from absa.training.readers.sink import Sink
from absa.training.readers.tables import LABEL_KEYS, TEXT_KEYS, pick, read_csv, read_jsonl
from absa.training.records import CategoryExample, DataError, ReadResult

logger = logging.getLogger(__name__)

__all__ = ["CATEGORY_FORMATS", "categories_of", "read_categories", "read_many_categories"]

CATEGORY_FORMATS = ("xml", "jsonl", "csv")
_CATEGORY_KEYS = ("category",)
_EXTENSIONS = {".xml": "xml", ".csv": "csv"}  # anything else: JSONL
#: the SemEval 3-line files' suffixes (the data sets': Laptops_Train.xml.seg, train.raw)
THREE_LINE_SUFFIXES = (".seg", ".raw")


def folded(examples: Sequence[CategoryExample]) -> list[CategoryExample]:
    """The examples with each category in one spelling: "FOOD" and "food" were two
    categories, each trained on its share of the data, and the model then refused "Food"
    as several categories but for case (predict, the API and evaluate read a name in any
    case). The spelling most written stands for the others (the first written, at a tie)."""
    from collections import Counter

    counts = Counter(e.category for e in examples)
    chosen: dict[str, str] = {}
    for name in counts:  # in the order first written
        key = name.casefold()
        if key not in chosen or counts[name] > counts[chosen[key]]:
            chosen[key] = name
    respelt = sum(1 for e in examples if chosen[e.category.casefold()] != e.category)
    if respelt:
        logger.info("%d record(s) whose category is spelt otherwise: read as %s", respelt,
                    ", ".join(sorted({c for c in chosen.values()})))  # fmt: skip
    return [replace(e, category=chosen[e.category.casefold()]) for e in examples]


def categories_of(examples: Iterable[CategoryExample]) -> list[str]:
    """The distinct categories, sorted: a model's category list (ids are positions in it)."""
    return sorted({e.category for e in examples})


def read_categories(
    path: str | Path, fmt: str | None = None, *, skip_invalid: bool = False
) -> ReadResult:
    """One file of labelled aspect categories (``fmt`` from the extension when None)."""
    path_str = str(path)
    named = fmt is not None  # a format named is read as that, whatever the suffix
    fmt = fmt or _EXTENSIONS.get(Path(path).suffix.lower(), "jsonl")
    if fmt not in CATEGORY_FORMATS:
        raise ValueError(f"unknown category format {fmt!r}; expected xml, jsonl or csv")
    data = read_bytes(path_str)
    three_line = Path(path).suffix.lower() in THREE_LINE_SUFFIXES
    if not named and three_line and not _starts_json(data):
        raise DataError(
            f"{path_str}: a 3-line file (its lines are not JSON) names aspect terms, not "
            "categories: give categories as SemEval XML, JSONL or CSV with a category column"
        )
    sink = Sink(path_str, skip_invalid)
    if fmt == "xml":
        _read_xml(data, sink)
    elif fmt == "csv":
        columns = (TEXT_KEYS, _CATEGORY_KEYS, LABEL_KEYS)
        read_csv(decode(data, path_str), sink, add_category_record, columns)
    else:
        read_jsonl(decode(data, path_str), sink, add_category_record)
    return sink.finish(f"{fmt}, categories")


def _starts_json(data: bytes) -> bool:
    """The first character that is not whitespace (or a byte-order mark) opens an object."""
    return data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def read_many_categories(paths: Iterable[str | Path], *, skip_invalid: bool = False) -> ReadResult:
    """Several files, each as ``read_categories`` reads it, concatenated in order."""
    out = ReadResult()
    for p in paths:
        res = read_categories(p, skip_invalid=skip_invalid)
        out.examples.extend(res.examples)
        out.skipped.extend(res.skipped)
    if not out.examples and not out.skipped:
        raise ValueError("no category files given")
    return out


def _add(sink: Sink, text: Any, category: Any, polarity: Any, source: str, where: str) -> None:
    if not isinstance(text, str) or not text.strip():
        sink.bad(where, "missing or empty text")
        return
    if not isinstance(category, str) or not category.strip():
        sink.bad(where, "missing or empty 'category'", text)
        return
    try:  # a JSON "\ud800" escape: no file can hold it as UTF-8, nor can a run's
        check_unicode(text, "the text")
        check_unicode(category, "the category")
    except InputError as e:
        sink.bad(where, str(e), text)
        return
    if polarity is None or polarity == "":
        sink.bad(where, f"category {category!r} has no label (or polarity)", text)
        return
    label = sink.label(polarity, where, text)
    if label is not None:
        sink.result.examples.append(CategoryExample(text, category.strip(), label, source))


def _read_xml(data: bytes, sink: Sink) -> None:
    root, lines = parse_xml(data, sink.path)
    for sentence in root.iter("sentence"):
        cats = sentence.find("aspectCategories")
        cats_of = [] if cats is None else cats.findall("aspectCategory")
        cats_of = cats_of or opinions_merged(sentence, lines, "category", "aspectCategory", {})
        if not cats_of:
            continue
        sid = sentence.get("id")
        source = f"{sink.path}:{sid}" if sid else f"{sink.path}:{lines[id(sentence)]}"
        texts = sentence.findall("text")
        if len(texts) > 1 or (texts and len(texts[0])):
            # findtext would cut the text at the first child element
            why = f"{len(texts)} <text> elements" if len(texts) > 1 else "markup inside <text>"
            where = xml_where(sink.path, sid, lines[id(sentence)])
            sink.bad(where, f"{why}: the sentence's text is not one plain string")
            continue
        text = texts[0].text if texts else None
        for cat in cats_of:
            where = xml_where(sink.path, sid, lines[id(cat)])
            _add(sink, text, cat.get("category"), cat.get("polarity"), source, where)


def add_category_record(record: dict[str, Any], sink: Sink, source: str, where: str) -> None:
    """One JSONL object or CSV row: ``text``, ``category``, ``label`` (or ``polarity``)."""
    polarity = pick(record, LABEL_KEYS)
    _add(sink, record.get("text"), record.get("category"), polarity, source, where)
