"""SemEval-2014 Task 4 XML (and MAMS): ``<sentence id><text>..</text><aspectTerms><aspectTerm
term polarity from to/></aspectTerms></sentence>``, and SemEval-2015/2016's ``<Opinions>``,
parsed with expat so that every error names its line."""

from __future__ import annotations

import codecs
import logging
import re
from xml.etree import ElementTree as ET
from xml.parsers import expat

from absa.model.aspects import whole_offset
from absa.training.readers.files import (
    UTF16_BOMS,
    decode,
    refuse_compressed,
    refuse_wide,
    wide_encoding,
)
from absa.training.readers.labels import CONFLICT
from absa.training.readers.sink import Sink
from absa.training.records import DataError

logger = logging.getLogger(__name__)

#: SemEval-2015/2016's target of an opinion the sentence names no term for (a category alone)
NULL_TARGET = "NULL"
_XML_ENCODING_RE = re.compile(rb"""^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
#: encodings (by codecs' name) where every byte is a character: UTF-8's bytes read as
#: mojibake ("café" as "cafÃ©") without an error
_ONE_BYTE_LATIN = frozenset({"iso8859-1", "iso8859-15", "cp1252", "iso8859-2", "cp1250"})


def _warn_if_utf8(data: bytes, path: str, declared: str) -> None:
    """A warning where a file declared in a one-byte encoding holds non-ASCII bytes that
    read as UTF-8 (an editor that kept the old declaration): read as declared, its words
    are mojibake. Valid UTF-8 by chance is rare in Latin text ("Ã©" written on purpose)."""
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return
    logger.warning(
        "%s: declares encoding %r, but its bytes read as UTF-8: read as declared, its "
        'non-ASCII words may be garbled ("cafÃ©"); if so, declare encoding="UTF-8"',
        path,
        declared,
    )


class _SkippedEntity(Exception):  # noqa: N818 - (name, line), turned into a DataError
    """An entity the parser skipped: (its name, the line)."""


def parse_xml(data: bytes, path: str) -> tuple[ET.Element, dict[int, int]]:
    """The element tree plus the 1-based start line of every element (keyed by ``id``).

    Built with expat and ``ElementTree.TreeBuilder`` because ElementTree's own parser
    keeps no line numbers, and error messages should point at the offending line.
    """
    refuse_compressed(data, path)
    source: bytes | str = data
    wide = wide_encoding(data)
    if wide is not None and not wide.startswith("UTF-16"):
        refuse_wide(data, path)  # UTF-32: expat reads none
    if wide is not None:  # UTF-16 without its mark: read here, its order from the first NUL
        declared = "utf-16"
        order = "utf-16-be" if data[:1] == b"\0" else "utf-16-le"
        try:
            source = data.decode(order)
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not valid {order.upper()} (offset {e.start})") from None
    elif data.startswith(UTF16_BOMS):  # expat reads UTF-16 itself, told by the BOM
        declared = "utf-16"
    else:
        match = _XML_ENCODING_RE.match(data)
        declared = match.group(1).decode("ascii").lower() if match else "utf-8"
        try:
            codecs.lookup(declared)
        except LookupError:
            raise DataError(
                f"{path}:1: unknown encoding {declared!r} in the XML declaration"
            ) from None
        if declared.replace("_", "-") in ("utf-8", "utf8"):
            source = decode(data, path)
        elif codecs.lookup(declared).name in _ONE_BYTE_LATIN:
            _warn_if_utf8(data, path, declared)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.buffer_text = True
    lines: dict[int, int] = {}

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = builder.start(tag, attrs)
        lines[id(element)] = parser.CurrentLineNumber

    def skipped(name: str, is_parameter_entity: bool) -> None:
        # a DOCTYPE that points outside the file: expat skips an entity it cannot define
        # ("caf&eacute;" read as "caf", spans moved), where without it it is an error
        if not is_parameter_entity:
            raise _SkippedEntity(name, parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.SkippedEntityHandler = skipped
    try:
        parser.Parse(source, True)
    except _SkippedEntity as e:
        name, line = e.args
        raise DataError(
            f"{path}:{line}: entity &{name}; is not defined: a DOCTYPE's outside definitions "
            "are not read (write the character itself, or &#NNN;)"
        ) from None
    except expat.ExpatError as e:
        raise DataError(
            f"{path}:{e.lineno}: malformed XML: {expat.ErrorString(e.code)} "
            f"(line {e.lineno}, column {e.offset + 1})"
        ) from None
    except (LookupError, ValueError) as e:
        # an encoding Python knows that expat cannot read through (LookupError), or one
        # expat refuses outright ("multi-byte encodings are not supported": shift_jis, ...)
        raise DataError(f"{path}:1: cannot read the declared encoding {declared!r}: {e}") from None
    return builder.close(), lines


def _exact_occurrences(text: str, term: str) -> list[int]:
    starts, i = [], text.find(term)
    while i >= 0:
        starts.append(i)
        i = text.find(term, i + 1)
    return starts


def read_xml(data: bytes, sink: Sink) -> None:
    path = sink.path
    root, lines = parse_xml(data, path)
    sentences = list(root.iter("sentence"))
    if not sentences:
        raise DataError(f"{path}: no <sentence> elements (expected SemEval-2014 style XML)")
    for sentence in sentences:
        aspects = [
            a for terms in sentence.findall("aspectTerms") for a in terms.findall("aspectTerm")
        ] or opinion_terms(sentence, lines, sink)
        if not aspects:
            continue  # a sentence without aspect terms is not an error
        sid = sentence.get("id")
        s_line = lines[id(sentence)]
        source = f"{path}:{sid}" if sid else f"{path}:{s_line}"
        where = xml_where(path, sid, s_line)
        texts = sentence.findall("text")
        text = texts[0].text if texts else None
        why = None
        if len(texts) > 1 or (texts and len(texts[0])):
            why = f"{len(texts)} <text> elements" if len(texts) > 1 else "markup inside <text>"
            why += ": the offsets would not say into which text"
        elif text is None or not text.strip():
            why = "sentence has no <text> or it is empty"
        if why is not None:
            for _ in aspects:  # each of its aspects is a record skipped (and counted)
                sink.bad(where, why)
            continue
        assert text is not None  # a sentence without one has its why above
        for aspect in aspects:
            xml_aspect(aspect, text, sink, source, xml_where(path, sid, lines[id(aspect)]))


def _opinions(sentence: ET.Element) -> list[ET.Element]:
    return [o for ops in sentence.findall("Opinions") for o in ops.findall("Opinion")]


def opinions_merged(
    sentence: ET.Element, lines: dict[int, int], key: str, tag: str, named: dict[str, str]
) -> list[ET.Element]:
    """A SemEval-2015/2016 sentence's ``<Opinion>``s (one per target and category) as one
    element ``tag`` per value of the attribute ``key`` (attributes renamed by ``named``), in
    the order first written, on the line of its first opinion: with their polarity where the
    opinions agree, ``conflict`` where they do not (dropped as SemEval-2014's conflict is)."""
    groups: dict[object, list[ET.Element]] = {}
    for opinion in _opinions(sentence):
        value = opinion.get(key)
        group = (value, opinion.get("from"), opinion.get("to")) if key == "target" else value
        # an opinion without the attribute is its own record (the reader names what it lacks)
        groups.setdefault(group if value is not None else object(), []).append(opinion)
    merged: list[ET.Element] = []
    for members in groups.values():
        first = members[0]
        polarities = {(o.get("polarity") or "").strip().lower() for o in members}
        attrs = {named.get(k, k): v for k, v in first.attrib.items()}
        if len(polarities) > 1 and "" not in polarities:
            attrs["polarity"] = CONFLICT
        elif "" in polarities:
            attrs.pop("polarity", None)
        element = ET.Element(tag, attrs)
        lines[id(element)] = lines[id(first)]
        merged.append(element)
    return merged


def opinion_terms(sentence: ET.Element, lines: dict[int, int], sink: Sink) -> list[ET.Element]:
    """A SemEval-2015/2016 sentence's aspect terms: its opinions' targets, each once (see
    ``opinions_merged``); a target ``NULL`` names no term (the opinion is a category alone:
    counted in ``sink.untargeted``)."""
    terms = opinions_merged(sentence, lines, "target", "aspectTerm", {"target": "term"})
    kept = [t for t in terms if t.get("term") != NULL_TARGET]
    sink.untargeted += sum(o.get("target") == NULL_TARGET for o in _opinions(sentence))
    return kept


def xml_where(path: str, sid: str | None, line: int) -> str:
    """Where a bad XML record is: the sentence id and the line, or just the line without an id."""
    return f"{path}: sentence {sid} (line {line})" if sid else f"{path}:{line}"


def xml_aspect(aspect: ET.Element, text: str, sink: Sink, source: str, where: str) -> None:
    term = aspect.get("term")
    if term is None or not term.strip():
        sink.bad(where, "aspectTerm without a 'term'", text)
        return
    polarity = aspect.get("polarity")
    if polarity is None:
        sink.bad(where, f"aspectTerm {term!r} has no 'polarity'", text)
        return
    label = sink.label(polarity, where, text)
    if label is None:
        return
    # read as every other reader reads offsets ("18.0" too)
    start = whole_offset(aspect.get("from", ""))
    end = whole_offset(aspect.get("to", ""))
    if start is None or end is None:
        start, end = -1, -1
    # offsets that mark the term but for its case ("Food" at 0-4 for term "food") keep
    # their place: the one exact "food" elsewhere is another aspect
    marked = 0 <= start < end <= len(text) and text[start:end].casefold() == term.casefold()
    if not marked:
        found = _exact_occurrences(text, term)
        if len(found) != 1:
            how = "does not occur" if not found else f"occurs {len(found)} times"
            sink.bad(
                where,
                f"aspectTerm {term!r}: from={aspect.get('from')!r} to={aspect.get('to')!r} "
                f"do not mark it in the text and it {how} there",
                text,
            )
            return
        logger.debug("%s: %r found at %d instead of from/to", where, term, found[0])
        sink.relocated += 1
        start, end = found[0], found[0] + len(term)
    sink.add(text, start, end, label, source, where)
