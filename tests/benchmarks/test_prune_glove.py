"""benchmarks/prune_glove.py: a pruned GloVe file gives the same vocabulary and the same
GloVe rows as the full one, for the data it was pruned for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from absa.training.embeddings import build_vocab, embedding_matrix, load_glove
from tests.helpers import synthetic_examples

ROOT = Path(__file__).resolve().parents[2]


def test_pruned_glove_keeps_vocabulary_and_rows(tmp_path: Path) -> None:
    examples = synthetic_examples(12, seed=3)
    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"text": e.text, "aspect": e.term, "start": e.start, "end": e.end, "label": e.label}
            )
            + "\n"
            for e in examples
        )
    )
    # a "full" table: filler words in frequency order, the data's words scattered among them,
    # some within the top k and some far below it
    data_words = sorted({w for e in examples for w in e.text.split()})
    words = [f"filler{i}" for i in range(300)]
    for j, w in enumerate(data_words):
        words.insert(7 + j * 29, w)
    rng = np.random.default_rng(0)
    full = tmp_path / "glove.txt"
    full.write_text(
        "".join(w + " " + " ".join(f"{x:.6g}" for x in rng.normal(size=5)) + "\n" for w in words)
    )
    pruned = tmp_path / "pruned.txt"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "prune_glove.py"), str(data)]
    cmd += ["--glove", str(full), "--top-k", "40", "--out", str(pruned)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert f"of {len(words)} words" in out

    full_words, full_matrix = load_glove(str(full))
    pruned_words, pruned_matrix = load_glove(str(pruned))
    assert len(pruned_words) < len(full_words)
    assert pruned_words[:40] == full_words[:40]  # the top k, in order
    assert set(data_words) <= set(pruned_words)
    texts = [e.text for e in examples]
    vocab = build_vocab(texts, full_words, 40)
    assert build_vocab(texts, pruned_words, 40) == vocab
    a, known_a = embedding_matrix(vocab, full_words, full_matrix, seed=1)
    b, known_b = embedding_matrix(vocab, pruned_words, pruned_matrix, seed=1)
    assert known_a == known_b == len(vocab) - 2  # every word is in the table
    np.testing.assert_array_equal(a[2:], b[2:])  # every word's row is GloVe's own
    # <unk> is random: the same draw, scaled by each table's std (the documented difference)
    ratio = full_matrix.std() / pruned_matrix.std()
    np.testing.assert_allclose(a[1], b[1] * ratio, rtol=1e-5)
