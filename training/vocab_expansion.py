"""Vocabulary expansion: words a run never trained on, given rows in its tuned table.

A word-table model's table (a sentiment student's, or a fast tagger's) holds the training
words and GloVe's most frequent ones; any other word is <unk>. Its rows were tuned in
training, so a word's raw vector is no longer in the space the network reads. After Kiros
et al. (2015, skip-thought's vocabulary expansion), a linear map ``tuned ≈ [v, 1] W`` is
fitted by ridge regression over the rows training moved, from a larger set of vectors
``v`` (any GloVe-format file, e.g. ``absa vectors --top-k 100000``), and gives rows to the
file's first ``top_k`` words the vocabulary lacks (GloVe files are in frequency order).
Rows training never moved (GloVe words absent from the training text, only shrunk by the
weight decay) are mapped the same way unless ``keep_untrained``.

Which rows training moved is read off the run itself: its initial table is rebuilt exactly
(``embedding_matrix`` with the run's vectors and seed) and a row counts as trained when it
is no longer a positive multiple of its start (decoupled weight decay only scales a row).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from absa.model.artifact import sha256_file
from absa.model.network import WordEncoder
from absa.model.text import WordPipeline
from absa.training.embeddings import embedding_matrix, load_glove, read_vectors
from absa.training.rundir import LoadedRun

log = logging.getLogger(__name__)

# below this cosine with its start (in float64), a row was trained: decay alone leaves a
# float32 row within about 1e-14 of 1; one Adam step of 1e-3 on a row moves it by ~1e-7
MOVED_COS = 1.0 - 1e-9


def trained_rows(tuned: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Indices (>= 2: not <pad>, <unk>) of the rows that are no longer a positive multiple
    of their start."""
    tuned, start = tuned.astype(np.float64), start.astype(np.float64)
    dot = (tuned * start).sum(1)
    norms = np.linalg.norm(tuned, axis=1) * np.linalg.norm(start, axis=1)
    cos = np.where(norms > 0, dot / np.maximum(norms, 1e-12), 1.0)
    moved = cos < MOVED_COS
    moved[:2] = False
    return np.flatnonzero(moved)


def fit_map(x: np.ndarray, y: np.ndarray, ridge: float) -> tuple[np.ndarray, float]:
    """Ridge regression ``y ≈ [x, 1] W``; returns W and the fit's R² on (x, y).

    R² is undefined where the targets do not vary (one trained row, or rows all alike: a
    vectors file that matches a single trained word); it is then 1.0 for an exact fit and
    0.0 otherwise (scikit-learn's ``r2_score`` convention), a finite number for the report
    and the model card, where the division gave -inf and a numpy warning."""
    xb = np.hstack([x, np.ones((len(x), 1), x.dtype)]).astype(np.float64)
    gram = xb.T @ xb + ridge * np.eye(xb.shape[1])
    w = np.linalg.solve(gram, xb.T @ y.astype(np.float64))
    resid = float(((y - xb @ w) ** 2).sum())
    total = float(((y - y.mean(0)) ** 2).sum())
    if total == 0.0:
        return w, 1.0 if resid == 0.0 else 0.0
    return w, 1.0 - resid / total


def apply_map(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (np.hstack([x, np.ones((len(x), 1), x.dtype)]) @ w).astype(np.float32)


def expand_table(
    tuned: np.ndarray,
    vocab: list[str],
    vectors_of_run: str,
    seed: int,
    source: str | Path,
    top_k: int | None = None,
    ridge: float = 1.0,
    keep_untrained: bool = False,
) -> tuple[np.ndarray, list[str], dict]:
    """The rows and vocabulary of ``tuned`` (a run's table over ``vocab``, started from the
    vectors file ``vectors_of_run`` with ``seed``) expanded from ``source``; and a report of
    what was done. ValueError when the table is not the one those vectors start."""
    glove_words, glove = load_glove(vectors_of_run)
    start, _ = embedding_matrix(vocab, glove_words, glove, seed)
    if start.shape != tuned.shape:
        raise ValueError(
            f"the run's table is {tuned.shape}, its vectors rebuild {start.shape}: "
            "not the vectors it trained from"
        )
    source_vectors = read_vectors(str(source))  # a malformed line: counted and logged there
    words, vectors = source_vectors.words, source_vectors.matrix
    index = {w: i for i, w in enumerate(words)}
    moved = [r for r in trained_rows(tuned, start) if vocab[r] in index]
    if not moved:
        raise ValueError(f"{source}: none of the run's trained words has a vector there")
    if len(moved) <= vectors.shape[1]:
        log.warning(
            "%d trained words for a %d-d map: underdetermined, the ridge term decides",
            len(moved),
            vectors.shape[1],
        )
    w, r2 = fit_map(vectors[[index[vocab[r]] for r in moved]], tuned[moved], ridge)
    moved_set = set(moved)
    rows = tuned.copy()
    remapped = 0
    if not keep_untrained:
        idle = [r for r in range(2, len(vocab)) if r not in moved_set and vocab[r] in index]
        if idle:
            rows[idle] = apply_map(vectors[[index[vocab[r]] for r in idle]], w)
        remapped = len(idle)
    have = set(vocab)
    new = [x for x in words[:top_k] if x not in have]
    if new:
        rows = np.vstack([rows, apply_map(vectors[[index[x] for x in new]], w)])
    report = {
        "source": str(source),
        # a file by its hash; the packaged GloVe by its name (pinned by the lock file)
        "source_sha256": sha256_file(Path(source)) if Path(source).is_file() else None,
        "source_malformed_lines": source_vectors.malformed,
        "top_k": top_k,
        "ridge": ridge,
        "fitted_on": len(moved),
        "r2": round(r2, 4),
        "remapped_untrained": remapped,
        "added": len(new),
        "vocab_size": len(rows),
    }
    log.info(
        "vocabulary expanded: %d words added, %d untrained rows remapped; the map fitted on "
        "%d trained rows, R² %.3f",
        len(new),
        remapped,
        len(moved),
        r2,
    )
    return rows, [*vocab, *new], report


def frozen_table(rows: np.ndarray) -> torch.nn.Embedding:
    """An embedding table holding ``rows`` (row 0 padding), not trained further."""
    table = torch.nn.Embedding(len(rows), rows.shape[1], padding_idx=0)
    with torch.no_grad():
        table.weight.copy_(torch.from_numpy(rows))
    table.weight.requires_grad_(False)
    return table


def expand_vocabulary(
    run: LoadedRun,
    source: str | Path,
    top_k: int | None = None,
    ridge: float = 1.0,
    keep_untrained: bool = False,
) -> tuple[LoadedRun, dict]:
    """The sentiment run with rows added for ``source``'s first ``top_k`` words it lacks
    (all, when None), mapped into its tuned table; and the report (for the metadata).
    ValueError for a model without a word table of its own."""
    if run.model_config.encoder != "embedding" or not isinstance(run.pipeline, WordPipeline):
        raise ValueError("vocabulary expansion needs a word-table model (encoder 'embedding')")
    encoder = run.net.encoder
    assert isinstance(encoder, WordEncoder)  # encoder "embedding", as checked above
    rows, vocab, report = expand_table(
        encoder.table.weight.detach().cpu().numpy(),
        run.pipeline.words,
        run.train_config.glove,
        run.train_config.seed,
        source,
        top_k,
        ridge,
        keep_untrained,
    )
    encoder.table = frozen_table(rows)
    cfg = replace(run.model_config, vocab_size=len(rows))
    run.net.cfg = cfg
    pipeline = WordPipeline(vocab, run.pipeline.max_len, run.pipeline.tokenizer)
    return replace(run, pipeline=pipeline, model_config=cfg), report
