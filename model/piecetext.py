"""The transformer tagger's text pipeline (numpy and ``tokenizers`` only): words -> pieces.

The words are the word tagger's (``absa.model.tagtext.tag_tokens``), so spans, BIO tags and
decoding are the same; each word is split into word pieces by the encoder's Hugging Face
tokenizer (``is_pretokenized``: a piece never straddles two words), and the network reads
each word's first piece. A text is cut into consecutive windows of at most ``max_words``
words whose pieces, with [CLS] and [SEP], fit in the pipeline's ``max_len`` pieces.

``feeds``: ``input_ids``, ``attention_mask`` (B, P) over the pieces, ``word_starts`` (B, T)
the position of each word's first piece, ``word_mask`` (B, T) 1 on real words.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from absa.model.tagtext import Window, pad_rows, tag_tokens
from absa.model.text import TOKENIZER, Token, WordPiecePipeline, check_tokenizer


class PieceTagText:
    kind = "wordpiece"
    chars = None  # no character CNN

    def __init__(
        self, pieces: WordPiecePipeline, max_words: int = 128, tokenizer: int = TOKENIZER
    ) -> None:
        if pieces.max_len < 3:
            raise ValueError("max_len must leave room for [CLS], a piece and [SEP]")
        self.pieces = pieces
        self.max_words = max_words
        self.tokenizer = check_tokenizer(tokenizer)  # the words' (``tag_tokens``)

    @property
    def max_len(self) -> int:
        return self.max_words

    def word_pieces(self, tokens: Sequence[Token]) -> list[list[int]]:
        """Each word's piece ids ([UNK] for a word the tokenizer reduces to nothing)."""
        enc = self.pieces.tok.encode([t.text for t in tokens], is_pretokenized=True,
                                     add_special_tokens=False)  # fmt: skip
        out: list[list[int]] = [[] for _ in tokens]
        for piece, word in zip(enc.ids, enc.word_ids, strict=True):
            if word is not None:
                out[word].append(piece)
        unk = max(self.pieces.unk_id, 0)
        return [p or [unk] for p in out]

    def encode(self, text: str) -> list[Window]:
        """The text's windows (none for a text without words)."""
        tokens = tag_tokens(text, self.tokenizer)
        if not tokens:
            return []
        per_word = self.word_pieces(tokens)
        room = self.pieces.max_len - 2
        out, s = [], 0
        while s < len(tokens):
            e, used = s, 0
            while e < len(tokens) and e - s < self.max_words:
                n = min(len(per_word[e]), room)  # a giant word keeps its first pieces
                if used + n > room and e > s:
                    break
                used += n
                e += 1
            ids, starts = [self.pieces.cls_id], []
            for p in per_word[s:e]:
                starts.append(len(ids))
                ids.extend(p[:room])
            ids.append(self.pieces.sep_id)
            out.append(Window(tokens[s:e], ids, [], starts))
            s = e
        return out

    def feeds(self, windows: Sequence[Window]) -> dict[str, np.ndarray]:
        ids, mask = pad_rows([w.ids for w in windows], self.pieces.pad_id)
        starts, words = pad_rows([w.starts for w in windows])
        return {"input_ids": ids, "attention_mask": mask, "word_starts": starts,
                "word_mask": words}  # fmt: skip

    def save(self, directory: Path) -> None:
        self.pieces.save(directory)
        path = Path(directory) / "pipeline.json"
        spec = json.loads(path.read_text(encoding="utf-8"))
        spec["max_words"] = self.max_words
        if self.tokenizer != 1:  # absent means 1, as in a word pipeline
            spec["word_tokenizer"] = self.tokenizer
        path.write_text(json.dumps(spec, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> PieceTagText:
        directory = Path(directory)
        spec = json.loads((directory / "pipeline.json").read_text(encoding="utf-8"))
        pieces = WordPiecePipeline.from_spec(directory, spec)
        version = check_tokenizer(spec.get("word_tokenizer", 1), str(directory / "pipeline.json"))
        return cls(pieces, int(spec.get("max_words", 128)), version)
