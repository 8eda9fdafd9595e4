"""A data file's bytes and text: what it is (a pipe, a directory, Parquet, gzip, UTF-16 or
UTF-32) said before any reader parses it, UTF-8 decoded with the line of a bad byte, and
which suffix a file read by the wrong reader should have."""

from __future__ import annotations

import codecs
import logging
import re
from pathlib import Path

from absa.training.records import DataError

logger = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)  # FF FE 00 00 starts as UTF-16 LE's


def read_bytes(path: str) -> bytes:
    p = Path(path)
    try:
        special = p.exists() and not (p.is_file() or p.is_dir())
    except OSError:  # a folder on the way that cannot be searched: read_bytes names it
        special = False
    if special:
        # runs record each file's sha256, read again later: a pipe is empty by then (and one
        # with no writer would be waited on), so the record would name no bytes read
        raise DataError(
            f"{path}: not a regular file (a named pipe or a device): write it to a file first"
        )
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, not a data file") from None
    except OSError as e:  # its cause kept: the CLI exits 75 on a stale handle or EIO
        raise DataError(f"{path}: cannot read: {e.strerror or e}") from e
    if data.startswith(_PARQUET_MAGIC):  # read as text, "truncated record" or "not UTF-8"
        raise DataError(
            f"{path}: a Parquet file: training and evaluation read SemEval XML, 3-line, JSONL "
            "or CSV (absa predict reads Parquet); write it as JSONL"
        )
    return data


def wide_encoding(data: bytes) -> str | None:
    """What a file in 2 or 4 bytes a character is where no reader here reads it: "UTF-32"
    (with or without its byte-order mark; expat reads no UTF-32 either), "UTF-16 without a
    byte-order mark" (NUL bytes between the characters of a mostly ASCII text); None for
    anything else (UTF-16 with its mark: expat reads it, and the hints say the rest)."""
    if data.startswith(_UTF32_BOMS):
        return "UTF-32"
    if data.startswith(UTF16_BOMS):
        return None
    head = data[:400]
    nuls = head.count(0)
    if not head or nuls * 4 < len(head):
        return None
    # ASCII text: 3 of 4 bytes NUL in UTF-32, 1 of 2 in UTF-16
    wide = "UTF-32" if nuls * 3 >= len(head) * 2 else "UTF-16"
    return f"{wide} without a byte-order mark"


def refuse_wide(data: bytes, path: str) -> None:
    """UTF-32 and BOM-less UTF-16 named as such: read as UTF-8 their NUL bytes made "bad
    JSON" at column 2 or "no $T$ placeholder" (and UTF-32's mark read as UTF-16's)."""
    wide = wide_encoding(data)
    if wide is not None:
        raise DataError(f"{path}:1: it is {wide}: save it as UTF-8")


def refuse_compressed(data: bytes, path: str) -> None:
    """A gzip file read as text fails on its second byte: say what the file is instead."""
    if data.startswith(GZIP_MAGIC):
        raise DataError(f"{path}: gzip-compressed; decompress it first")


def decode(data: bytes, path: str) -> str:
    """UTF-8 text (a leading BOM is dropped, and one at the start of a later line, as files
    joined with ``cat`` leave, with a warning); bad bytes raise a DataError with the line, a
    gzip file says so, UTF-32 and UTF-16 without a byte-order mark too."""
    refuse_compressed(data, path)
    refuse_wide(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})"
        ) from None
    text = text.removeprefix("\ufeff")
    if "\n\ufeff" in text:
        line = text.count("\n", 0, text.index("\n\ufeff")) + 2
        n = text.count("\n\ufeff")
        logger.warning(
            "%s:%d: a byte-order mark starts the line (files joined?): dropped there and at "
            "the start of %d other line(s)", path, line, n - 1,
        )  # fmt: skip
        text = text.replace("\n\ufeff", "\n")
    return text


def refuse_bare_cr(text: str, path: str) -> None:
    """A file whose line breaks are CR alone (classic Mac OS) is one line when split on
    ``\\n``: say so, rather than "truncated record: 1 line(s)" or "bad JSON: Extra data"."""
    body = text.rstrip()
    if "\r" in body and "\n" not in body:
        raise DataError(
            f"{path}:1: the line breaks are CR alone (old Mac style), not LF or CRLF: "
            "convert them (e.g. mac2unix) and read it again"
        )


def physical_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (so numbering matches editors), trailing whitespace removed."""
    return [line.rstrip() for line in text.split("\n")]


def suffix_hint(data: bytes, fmt: str) -> str | None:
    """Where a file read as ``fmt`` (its suffix's format) reads as another one by its first
    character, which suffix to give it (or, UTF-16 but no XML, which encoding)."""
    if data.startswith(GZIP_MAGIC) or wide_encoding(data):  # said already
        return None
    if data.startswith(UTF16_BOMS) and fmt != "xml":  # expat reads UTF-16; no other does
        opening = data[:64].decode("utf-16", errors="replace").lstrip(" \t\r\n")
        if opening[:1] != "<":
            return "it is UTF-16: save it as UTF-8"
        return "it looks like XML: name it .xml"
    if data.startswith(UTF16_BOMS):
        return None
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:2]
    head = start[:1]
    # a tag, a declaration or a comment; a sentence may open with "<3", or "[Update]"
    if re.match(rb"<[?!A-Za-z_]", start):
        return None if fmt == "xml" else "it looks like XML: name it .xml"
    if fmt == "xml":
        return (
            "it does not look like XML (the format follows the suffix): 3-line files are "
            "named .raw, .seg or .txt, JSON lines .jsonl, CSV .csv"
        )
    if (head == b"{" or re.match(rb"\[[\s{\[\"0-9tfn-]", start)) and fmt != "jsonl":
        return "it looks like JSON: name it .jsonl"
    if fmt == "3line":  # a table's header on the first line: named .txt or .tsv, say
        first = data.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].lower()
        cells = {c.strip(b' "') for c in re.split(rb"[,\t;]", first)}
        if b"text" in cells and cells & {b"aspect", b"term"}:
            if b"," in first:
                return "its first line looks like a CSV header: name it .csv"
            return "its first line looks like a table's header: save it as CSV named .csv"
    return None
