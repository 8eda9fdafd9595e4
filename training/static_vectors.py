"""Static word vectors distilled from a transformer (model2vec's idea, at the word level):
each word is encoded alone, its word pieces' last hidden states averaged, the matrix reduced
by PCA and written in GloVe's text format, optionally beside GloVe's own vectors. A GloVe
student then reads a teacher's lexical knowledge (a fine-tuned teacher's sense of "soggy"
or "superb") at no inference cost: the table is looked up like any other.

    absa vectors --encoder runs/teacher --texts train.xml ... --dim 100 --out vectors.txt
    absa train --config '{"model": {"embed_dim": 150}, "train": {"glove": "vectors.txt"}}' ...

``--context``: a word's vector is instead the mean of its states in the sentences it occurs
in (the texts given), with its alone-encoding counted as one more occurrence (words seen in
no sentence keep that alone). Pooling over contexts gives better static vectors than
encoding words out of context (Bommasani et al. 2020), and here it reads each word the way
the fine-tuned teacher reads it in reviews.

The file's record (``vectors.txt.json``: encoder, its weights' sha256, texts' sha256, sizes,
code version) is written beside it.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np
import torch

from absa.model.text import tokenize
from absa.training.embeddings import PACKAGED_GLOVE, load_glove, words_by_frequency

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)


def word_list(glove_words: Sequence[str], texts: Iterable[str], top_k: int) -> list[str]:
    """The ``top_k`` most frequent GloVe words in GloVe's order (what ``glove_top_k`` takes
    from the file's head), then every other word of ``texts``, most frequent first."""
    out = list(dict.fromkeys(glove_words[:top_k]))
    seen = set(out)
    return out + [w for w in words_by_frequency(texts) if w not in seen]


def check_encoder(source: Path) -> None:
    """Refuse, before anything is read or loaded, a ``source`` that is neither a training
    run nor a Hugging Face model directory (``load_encoder`` would, after the texts)."""
    from absa.training import rundir

    if rundir.is_run(source):
        return
    if (source / "config.json").is_file() and not (source / "tokenizer.json").is_file():
        raise FileNotFoundError(  # a slow tokenizer's files alone (vocab.txt): none to read
            f"{source}: a model directory without tokenizer.json (a fast tokenizer's file: "
            "save one with transformers' AutoTokenizer.from_pretrained(...).save_pretrained)"
        )
    if not (source / "config.json").is_file():
        raise FileNotFoundError(f"{source}: neither a training run nor a model directory")


def load_encoder(source: Path) -> tuple[PreTrainedModel, object]:
    """The Hugging Face encoder and its fast tokenizer: a training run of a transformer
    model (its fine-tuned encoder: a sentiment run's or an aspect tagger run's) or a Hugging
    Face model directory."""
    from tokenizers import Tokenizer

    from absa.model.network import TransformerEncoder
    from absa.training import rundir
    from absa.training.tagging_run import is_tag_run, load_tag_run

    if rundir.is_run(source):  # run.json: a sentiment run's or a tagger run's
        net: torch.nn.Module
        if is_tag_run(source):
            tag_run = load_tag_run(source)
            encoder, net = tag_run.config.encoder, tag_run.net
        else:
            run = rundir.load_run(source)
            encoder, net = run.model_config.encoder, run.net
        transformer = net.encoder if encoder == "transformer" else None
        if not isinstance(transformer, TransformerEncoder):
            raise ValueError(f"{source}: a run of a word-vector model has no encoder to distil")
        model = transformer.model
    else:
        check_encoder(source)
        from transformers import AutoModel

        try:
            model = AutoModel.from_pretrained(str(source), local_files_only=True).float()
        except Exception as e:  # noqa: BLE001 - weights cut short, a bad config: named
            raise _unreadable(_weights_file(source), e) from e
    try:
        tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    except Exception as e:  # noqa: BLE001 - the tokenizers library raises plain Exception
        raise _unreadable(source / "tokenizer.json", e) from e
    tokenizer.no_padding()  # a saved tokenizer may pad every input to its maximum length
    return model, tokenizer


def _weights_file(source: Path) -> Path:
    """The weights file of a Hugging Face directory (the directory, where they are in
    shards or elsewhere)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (source / name).is_file():
            return source / name
    return source


def _unreadable(path: Path, e: Exception) -> ValueError:
    """One line naming ``path`` for what loading it raised (a traceback and exit 1 before:
    "Exception: expected value at line 1 column 1", SafetensorError)."""
    why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return ValueError(f"{path}: cannot be read ({why})")


def _padded(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    """(B, longest) int64: the rows, right-padded with 0."""
    out = torch.zeros((len(rows), max(len(r) for r in rows)), dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def _ids_and_mask(encodings: Sequence[object]) -> tuple[torch.Tensor, torch.Tensor]:
    """A padded batch of tokenizer encodings: input ids and attention mask."""
    ids = [e.ids for e in encodings]  # type: ignore[attr-defined]
    return _padded(ids), _padded([[1] * len(i) for i in ids])


@torch.no_grad()
def encode_words(
    model: PreTrainedModel, tokenizer: object, words: Sequence[str], batch_size: int = 512
) -> np.ndarray:
    """(V, H): each word's word pieces' last hidden states, averaged (specials left out)."""
    model.eval()
    pieces = [enc for enc in tokenizer.encode_batch(list(words))]  # type: ignore[attr-defined]
    order = sorted(range(len(words)), key=lambda i: len(pieces[i].ids))  # little padding
    out = np.zeros((len(words), model.config.hidden_size), np.float32)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        ids, mask = _ids_and_mask([pieces[i] for i in idx])
        # 1 on the word's own pieces
        word = _padded([[1 - s for s in pieces[i].special_tokens_mask] for i in idx]).float()
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        pooled = (hidden * word[..., None]).sum(1) / word.sum(1, keepdim=True).clamp(min=1)
        out[idx] = pooled.numpy()
        if start // batch_size % 20 == 0:
            log.info("encoded %d / %d words", start + len(idx), len(words))
    return out


@torch.no_grad()
def sentence_states(
    model: PreTrainedModel,
    tokenizer: object,
    texts: Sequence[str],
    batch_size: int = 64,
    max_pieces: int = 256,
    skip: int = 0,
) -> Iterator[tuple[int, list[str], np.ndarray]]:
    """For each of ``texts`` with a word (in order of length, not of ``texts``): its index,
    its words (the tokens of ``tokenize``) and (n_words, H) their states, a word's state
    being its word pieces' last hidden states averaged as in ``encode_words``. A text is read
    up to ``max_pieces`` word pieces; the rows of the words after that are NaN. ``skip``: the
    first that many of that order are left out (a multiple of ``batch_size``, so that the
    rest are read in the same batches, with the same numbers, as without it)."""
    if skip % batch_size:
        raise ValueError(f"skip must be a multiple of batch_size {batch_size}, not {skip}")
    model.eval()
    tokens = [[t.text for t in tokenize(text)] for text in texts]
    kept = [i for i, t in enumerate(tokens) if t]
    tokenizer.enable_truncation(max_length=max_pieces)  # type: ignore[attr-defined]
    try:  # a long text keeps its [SEP]: its first words are read as in a shorter one
        encs = tokenizer.encode_batch(  # type: ignore[attr-defined]
            [tokens[i] for i in kept], is_pretokenized=True
        )
    finally:
        tokenizer.no_truncation()  # type: ignore[attr-defined]
    order = sorted(range(len(kept)), key=lambda k: len(encs[k].ids))
    for start in range(skip, len(order), batch_size):
        idx = order[start : start + batch_size]
        ids, mask = _ids_and_mask([encs[k] for k in idx])
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
        for row, k in enumerate(idx):
            words = tokens[kept[k]]
            pieces: dict[int, list[int]] = {}
            for j, w in enumerate(encs[k].word_ids):
                if w is not None and not encs[k].special_tokens_mask[j]:
                    pieces.setdefault(w, []).append(j)
            states = np.full((len(words), hidden.shape[-1]), np.nan, np.float32)
            for w, js in pieces.items():
                states[w] = hidden[row, js].mean(0)
            yield kept[k], words, states
        if start // batch_size % 50 == 0:
            log.info("encoded %d / %d sentences", start + len(idx), len(kept))


def encode_in_context(
    model: PreTrainedModel,
    tokenizer: object,
    texts: Sequence[str],
    words: Sequence[str],
    batch_size: int = 64,
    max_pieces: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """(V, H) sums of each of ``words``' states over its occurrences in ``texts``
    (``sentence_states``) and (V,) how many occurrences were summed. Words are the
    lower-cased tokens of ``tokenize``; a text is read up to ``max_pieces`` word pieces (the
    words after that are not counted). A text given more than once (a sentence per aspect of
    it) is read once."""
    index = {w: i for i, w in enumerate(words)}
    sums = np.zeros((len(words), model.config.hidden_size), np.float64)
    counts = np.zeros(len(words), np.int64)
    distinct = list(dict.fromkeys(texts))
    for _, tokens, states in sentence_states(model, tokenizer, distinct, batch_size, max_pieces):
        for w, state in zip(tokens, states, strict=True):
            if (k := index.get(w.lower())) is not None and not np.isnan(state[0]):
                sums[k] += state
                counts[k] += 1
    return sums.astype(np.float32), counts


def pooled_vectors(alone: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each word's mean state over its contexts and its alone-encoding, the latter counted
    as one occurrence (so a word seen in no context keeps it)."""
    return ((sums + alone) / (counts + 1)[:, None]).astype(np.float32)


def pca(matrix: np.ndarray, dim: int) -> np.ndarray:
    """The first ``dim`` principal components of the rows (centred), float32."""
    if not 0 < dim <= min(matrix.shape):
        raise ValueError(f"dim must be in 1..{min(matrix.shape)}, not {dim}")
    centred = matrix - matrix.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return (centred @ vt[:dim].T).astype(np.float32)


def rescale(matrix: np.ndarray, std: float) -> np.ndarray:
    """``matrix`` scaled to an overall standard deviation of ``std`` (GloVe's, so that
    neither half of a concatenation drowns the other)."""
    return (matrix * (std / max(float(matrix.std()), 1e-12))).astype(np.float32)


def write_glove_text(path: Path, words: Sequence[str], matrix: np.ndarray) -> None:
    """GloVe's text format: a word and its numbers on each line; written whole or not at
    all (a temporary file renamed into place)."""
    if len(words) != len(matrix):
        raise ValueError(f"{len(words)} words but {len(matrix)} vectors")
    bad = [w for w in words if not w or any(c.isspace() for c in w)]
    if bad:
        raise ValueError(f"words with white space cannot be written: {bad[:5]}")
    with _replaced(path) as f:
        for w, row in zip(words, matrix, strict=True):
            f.write(w + " " + " ".join(f"{x:.5g}" for x in row) + "\n")


@contextmanager
def _replaced(path: Path) -> Iterator[TextIO]:
    """A new temporary file beside ``path`` to write, renamed to ``path`` when the block
    ends without error and removed otherwise: a failed write (a full disk, ``path`` a
    directory) leaves neither half a file nor a temporary one behind. The temporary name is
    new (made exclusively), so no file of the user's is ever written over on the way."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as f:
            yield f
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)  # gone already once renamed


def record_path(out: Path) -> Path:
    """Where ``build`` writes the record of the vectors file ``out``."""
    return out.with_name(out.name + ".json")


def check_new_path(path: Path, what: str) -> None:
    """FileExistsError when ``path`` exists, NotADirectoryError when a folder above it is a
    file: a command that writes ``path`` says so before its work (minutes to an hour of
    encoding), where the write at the end would fail, or replace what the user had there."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{path} exists; write the {what} to a new path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"{parent} is not a directory; cannot write {path}")
            return


def check_out(out: Path) -> None:
    """``build``'s ``out`` checked up front (``check_new_path``), and its record's path:
    there is no vectors file there yet, so a record there is a stale one (an earlier build
    killed before its vectors file), written over; anything else there (``--out acos``
    beside the data file acos.json) is the user's, and refused."""
    check_new_path(out, "vectors file")
    record = record_path(Path(out))
    if (record.exists() or record.is_symlink()) and not _is_record(record):
        raise FileExistsError(
            f"{record} exists and is not the record of a vectors file (OUT.json is written "
            "beside OUT); write the vectors elsewhere"
        )


def _is_record(path: Path) -> bool:
    """Whether ``path`` is a file holding what ``build`` writes as a record."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and {"encoder_files", "pca_dim"} <= record.keys()


def source_width(source: Path) -> int | None:
    """The hidden size of the encoder in ``source`` (a Hugging Face directory, or a run that
    keeps its encoder's config.json: ``embeddings.encoder_width`` of either), or None where
    its config says none."""
    from absa.training import rundir
    from absa.training.embeddings import encoder_width

    config_dir = source / rundir.ENCODER if rundir.is_run(source) else source
    try:
        return encoder_width(config_dir)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def build(
    encoder: Path,
    texts: Sequence[str],
    out: Path,
    dim: int,
    glove: str | None = PACKAGED_GLOVE,
    top_k: int = 20000,
    extra: dict | None = None,
    context: bool = False,
) -> dict:
    """The vectors file of ``encoder`` for GloVe's ``top_k`` most frequent words and every
    word of ``texts``: ``dim`` principal components of the encoder's word vectors, scaled to
    GloVe's spread and written after GloVe's own vector (zeros for a word GloVe lacks), or
    alone when ``glove`` is None. Returns the record written to ``out`` + ``.json`` (with
    ``extra`` in it: the caller's provenance). ``context``: pool each word's states over its
    occurrences in ``texts`` (``pooled_vectors``) instead of encoding it alone. An existing
    ``out`` is refused before any work (``check_out``), never replaced."""
    out = Path(out)
    check_out(out)
    glove_words, glove_matrix = load_glove(glove or PACKAGED_GLOVE)
    words = [w for w in word_list(glove_words, texts, top_k) if not any(c.isspace() for c in w)]
    model, tokenizer = load_encoder(Path(encoder))
    vectors = encode_words(model, tokenizer, words)
    occurrences = 0
    if context:
        sums, counts = encode_in_context(model, tokenizer, texts, words)
        vectors = pooled_vectors(vectors, sums, counts)
        occurrences = int(counts.sum())
        unseen = int((counts == 0).sum())
        log.info("%d occurrences pooled; %d words seen in no text", occurrences, unseen)
    reduced = rescale(pca(vectors, dim), float(glove_matrix.std()))
    if glove is not None:
        index = {w: i for i, w in enumerate(glove_words)}
        known = np.zeros((len(words), glove_matrix.shape[1]), np.float32)
        for i, w in enumerate(words):
            if (j := index.get(w)) is not None:
                known[i] = glove_matrix[j]
        reduced = np.concatenate([known, reduced], axis=1)
    record = {
        "encoder": str(encoder),
        "encoder_files": encoder_sha256(Path(encoder)),
        "glove": glove,
        "glove_top_k": top_k,
        "pca_dim": dim,
        "context": context,
        **({"occurrences": occurrences} if context else {}),
        "dim": int(reduced.shape[1]),
        "words": len(words),
        "texts": len(texts),
        **(extra or {}),
    }
    # the record first, the vectors file last: a vectors file there is a whole one, with its
    # record beside it (benchmarks/rebuild_inputs.py takes one there as made)
    with _replaced(record_path(out)) as f:
        f.write(json.dumps(record, indent=1) + "\n")
    try:
        write_glove_text(out, words, reduced)
    except BaseException:
        record_path(out).unlink(missing_ok=True)  # this call's own, just written
        raise
    log.info("%s: %d words x %d dimensions", out, len(words), reduced.shape[1])
    return record


def encoder_sha256(encoder: Path) -> dict[str, str]:
    from absa.model.artifact import sha256_file

    files = sorted(encoder.glob("*.safetensors")) or sorted(encoder.glob("*.bin"))
    return {f.name: sha256_file(f) for f in files}
