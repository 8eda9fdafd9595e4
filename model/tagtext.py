"""The tagger's text pipeline (numpy only): the sentiment models' word tokens and vocabulary
(``absa.model.text``), plus each word's characters for the character CNN.

A text longer than ``max_len`` words is cut into consecutive windows of ``max_len`` words,
each tagged on its own. ``feeds`` pads windows into the graph's inputs: ``input_ids``,
``attention_mask`` (B, T) and, for a tagger with characters, ``char_ids`` (B, T, C).

Words are ``tag_tokens``: the shared tokenizer's words with Penn Treebank escapes
(``-LRB-``, ``-RRB-``, ``-LSB-``, ``-RSB-``, ``-LCB-``, ``-RCB-``, two backquotes, two
apostrophes, kept by some SemEval test files) read as the bracket or quote they stand for:
one word whose offsets cover the whole escape, so spans stay offsets into the text as written.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from absa.model.text import (
    PAD,
    TOKENIZER,
    UNK,
    Token,
    WordPipeline,
    load_pipeline,
    tokenize,
)

if TYPE_CHECKING:
    from absa.model.piecetext import PieceTagText

CHARS_FILE = "chars.json"
MAX_CHARS = 20  # characters per word the CNN reads (the rest are cut)
PTB_ESCAPES = {"LRB": "(", "RRB": ")", "LSB": "[", "RSB": "]", "LCB": "{", "RCB": "}"}
PTB_QUOTES = {"`": '"', "'": '"'}  # `` and '' (two tokens of one character each)


@dataclass(frozen=True)
class Window:
    tokens: list[Token]  # the words tagged
    ids: list[int]  # word ids, or (a transformer tagger) word-piece ids with [CLS] and [SEP]
    char_ids: list[list[int]]
    starts: list[int] = field(default_factory=list)  # each word's first piece (word pieces)


def tag_tokens(text: str, version: int = TOKENIZER) -> list[Token]:
    """The words of ``text`` (the word tokenizer of ``version``) with PTB escapes read as the
    characters they stand for."""
    tokens = tokenize(text, version)
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        nxt = tokens[i + 1 : i + 3]
        if (
            t.text == "-"
            and len(nxt) == 2
            and nxt[0].text in PTB_ESCAPES
            and nxt[1].text == "-"
            and t.end == nxt[0].start
            and nxt[0].end == nxt[1].start
        ):
            out.append(Token(PTB_ESCAPES[nxt[0].text], t.start, nxt[1].end))
            i += 3
        elif t.text in PTB_QUOTES and nxt and nxt[0].text == t.text and t.end == nxt[0].start:
            out.append(Token(PTB_QUOTES[t.text], t.start, nxt[0].end))
            i += 2
        else:
            out.append(t)
            i += 1
    return out


class TagText:
    def __init__(self, words: WordPipeline, chars: Sequence[str] | None = None) -> None:
        self.words = words
        self.chars = list(chars) if chars else None
        if self.chars is not None and self.chars[:2] != [PAD, UNK]:
            raise ValueError("a character list must start with <pad>, <unk>")
        self.char_index = {c: i for i, c in enumerate(self.chars or [])}

    @property
    def max_len(self) -> int:
        return self.words.max_len

    @property
    def tokenizer(self) -> int:
        """The word tokenizer version its words are read with (``tag_tokens``)."""
        return self.words.tokenizer

    def char_ids(self, token: Token) -> list[int]:
        """The word's characters composed (NFC), as the word table looks words up: "cre\u0300me"
        and "crème" read alike (decomposed, the accent was an unknown character of its own
        and the letter before it an "e": the same text found other aspects in either form)."""
        return [self.char_index.get(c, 1) for c in composed(token.text)[:MAX_CHARS]]

    def encode(self, text: str) -> list[Window]:
        """The text's windows of at most ``max_len`` words (none for a text without words)."""
        tokens = tag_tokens(text, self.words.tokenizer)
        out = []
        for s in range(0, len(tokens), self.max_len):
            part = tokens[s : s + self.max_len]
            chars = [self.char_ids(t) for t in part] if self.chars is not None else []
            out.append(Window(part, self.words.ids(part), chars))
        return out

    def feeds(self, windows: Sequence[Window]) -> dict[str, np.ndarray]:
        ids, mask = pad_rows([w.ids for w in windows])
        out = {"input_ids": ids, "attention_mask": mask}
        if self.chars is not None:
            c = max(len(ch) for w in windows for ch in w.char_ids or [[0]])
            chars = np.zeros((*ids.shape, max(c, 1)), dtype=np.int64)
            for i, w in enumerate(windows):
                for j, ch in enumerate(w.char_ids):
                    chars[i, j, : len(ch)] = ch
            out["char_ids"] = chars
        return out

    def save(self, directory: Path) -> None:
        self.words.save(directory)
        if self.chars is not None:
            text = json.dumps(self.chars, ensure_ascii=False)
            (Path(directory) / CHARS_FILE).write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> TagText:
        words = load_pipeline(directory)
        if not isinstance(words, WordPipeline):
            raise ValueError(f"{directory}: a tagger reads words, not {words.kind!r} pieces")
        path = Path(directory) / CHARS_FILE
        chars = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        return cls(words, chars)


def pad_rows(rows: Sequence[Sequence[int]], pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows right-padded into an int64 (B, T) array, with the (B, T) mask of real items."""
    t = max(len(r) for r in rows)
    ids = np.full((len(rows), t), pad, dtype=np.int64)
    mask = np.zeros((len(rows), t), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
    return ids, mask


def load_tag_text(directory: Path) -> TagText | PieceTagText:
    """A tagger's text pipeline from an artifact or run directory: words or word pieces."""
    from absa.model.piecetext import PieceTagText

    spec = json.loads((Path(directory) / "pipeline.json").read_text(encoding="utf-8"))
    if spec.get("kind") == PieceTagText.kind:
        return PieceTagText.load(directory)
    return TagText.load(directory)


def composed(text: str) -> str:
    """``text`` in NFC (its characters composed), as the character CNN reads it."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def build_chars(texts: Iterable[str], min_count: int = 2) -> list[str]:
    """<pad>, <unk>, then every character seen ``min_count`` times or more, most frequent first."""
    counts = Counter(c for text in texts for c in composed(text) if not c.isspace())
    kept = sorted((c for c, n in counts.items() if n >= min_count), key=lambda c: (-counts[c], c))
    return [PAD, UNK, *kept]
