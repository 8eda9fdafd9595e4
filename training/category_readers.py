"""Readers for labelled aspect categories: SemEval-2014 XML and JSONL.

Both yield ``CategoryExample`` records in a ``ReadResult``, with the same error handling as
``training.readers`` (a bad record raises ``DataError`` naming file and line or sentence,
unless ``skip_invalid``; ``conflict`` is dropped and counted):

- ``"xml"``: SemEval-2014 restaurants: ``<sentence id><text>..</text><aspectCategories>
  <aspectCategory category polarity/></aspectCategories></sentence>``; sentences without
  categories are skipped.
- ``"jsonl"``: one object per line with ``text``, ``category`` and ``label`` (or
  ``polarity``), as ACOS's ``*.categories.jsonl``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from absa.training.readers import (
    _decode,
    _parse_xml,
    _read_bytes,
    _read_jsonl,
    _Sink,
    _xml_where,
)
from absa.training.records import CategoryExample, ReadResult

__all__ = ["CATEGORY_FORMATS", "categories_of", "read_categories", "read_many_categories"]

CATEGORY_FORMATS = ("xml", "jsonl")


def categories_of(examples: Iterable[CategoryExample]) -> list[str]:
    """The distinct categories, sorted: a model's category list (ids are positions in it)."""
    return sorted({e.category for e in examples})


def read_categories(
    path: str | Path, fmt: str | None = None, *, skip_invalid: bool = False
) -> ReadResult:
    """One file of labelled aspect categories (``fmt`` from the extension when None)."""
    path_str = str(path)
    fmt = fmt or ("xml" if Path(path).suffix.lower() == ".xml" else "jsonl")
    if fmt not in CATEGORY_FORMATS:
        raise ValueError(f"unknown category format {fmt!r}; expected xml or jsonl")
    data = _read_bytes(path_str)
    sink = _Sink(path_str, skip_invalid)
    if fmt == "xml":
        _read_xml(data, sink)
    else:
        _read_jsonl(_decode(data, path_str), sink, _add_record)
    return sink.finish(f"{fmt}, categories")


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


def _add(sink: _Sink, text: Any, category: Any, polarity: Any, source: str, where: str) -> None:
    if not isinstance(text, str) or not text.strip():
        sink.bad(source, where, "missing or empty text")
        return
    if not isinstance(category, str) or not category.strip():
        sink.bad(source, where, "missing or empty 'category'")
        return
    if polarity is None or polarity == "":
        sink.bad(source, where, f"category {category!r} has no label (or polarity)")
        return
    label = sink.label(polarity, source, where)
    if label is not None:
        sink.result.examples.append(CategoryExample(text, category.strip(), label, source))  # type: ignore[arg-type]


def _read_xml(data: bytes, sink: _Sink) -> None:
    root, lines = _parse_xml(data, sink.path)
    for sentence in root.iter("sentence"):
        cats = sentence.find("aspectCategories")
        for cat in [] if cats is None else cats.findall("aspectCategory"):
            sid = sentence.get("id")
            source = f"{sink.path}:{sid}" if sid else f"{sink.path}:{lines[id(sentence)]}"
            where = _xml_where(sink.path, sid, lines[id(cat)])
            text = sentence.findtext("text")
            _add(sink, text, cat.get("category"), cat.get("polarity"), source, where)


def _add_record(record: dict[str, Any], sink: _Sink, source: str, where: str) -> None:
    polarity = record.get("label", record.get("polarity"))
    _add(sink, record.get("text"), record.get("category"), polarity, source, where)
