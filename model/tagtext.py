"""The tagger's text pipeline (numpy only): the sentiment models' word tokens and vocabulary
(``absa.model.text``), plus each word's characters for the character CNN.

A text longer than ``max_len`` words is cut into consecutive windows of ``max_len`` words,
each tagged on its own. ``feeds`` pads windows into the graph's inputs: ``input_ids``,
``attention_mask`` (B, T) and, for a tagger with characters, ``char_ids`` (B, T, C).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from absa.model.text import PAD, UNK, Token, WordPipeline, load_pipeline, tokenize

CHARS_FILE = "chars.json"
MAX_CHARS = 20  # characters per word the CNN reads (the rest are cut)


@dataclass(frozen=True)
class Window:
    tokens: list[Token]
    ids: list[int]
    char_ids: list[list[int]]


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

    def char_ids(self, token: Token) -> list[int]:
        return [self.char_index.get(c, 1) for c in token.text[:MAX_CHARS]]

    def encode(self, text: str) -> list[Window]:
        """The text's windows of at most ``max_len`` words (none for a text without words)."""
        tokens = tokenize(text)
        out = []
        for s in range(0, len(tokens), self.max_len):
            part = tokens[s : s + self.max_len]
            chars = [self.char_ids(t) for t in part] if self.chars is not None else []
            out.append(Window(part, self.words.ids(part), chars))
        return out

    def feeds(self, windows: Sequence[Window]) -> dict[str, np.ndarray]:
        t = max(len(w.ids) for w in windows)
        ids = np.zeros((len(windows), t), dtype=np.int64)
        mask = np.zeros((len(windows), t), dtype=np.int64)
        for i, w in enumerate(windows):
            ids[i, : len(w.ids)] = w.ids
            mask[i, : len(w.ids)] = 1
        out = {"input_ids": ids, "attention_mask": mask}
        if self.chars is not None:
            c = max(len(ch) for w in windows for ch in w.char_ids or [[0]])
            chars = np.zeros((len(windows), t, max(c, 1)), dtype=np.int64)
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


def build_chars(texts: Iterable[str], min_count: int = 2) -> list[str]:
    """<pad>, <unk>, then every character seen ``min_count`` times or more, most frequent first."""
    counts = Counter(c for text in texts for c in text if not c.isspace())
    kept = sorted((c for c, n in counts.items() if n >= min_count), key=lambda c: (-counts[c], c))
    return [PAD, UNK, *kept]
