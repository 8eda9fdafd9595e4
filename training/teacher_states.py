"""A teacher encoder's contextual word states, kept as targets for a word-vector student.

The student's BiLSTM learns the teacher's probabilities (``distill.py``) and, with
``TrainConfig.distill_states``, also to predict, through a linear map used only in
training, the teacher's state of each word in its sentence (FitNets' hint, Romero et al.
2015; TinyBERT's hidden-state loss, Jiao et al. 2020). The probabilities say what the
teacher concluded about one aspect; the states say how it read every word around it.

    absa states --encoder runs/teacher --texts train.xml ... --sentences transfer.jsonl \\
        --exclude test.xml ... --dim 64 --out runs/teacher-states

A states directory holds ``states.npy`` (float16, one row per word of each distinct
sentence: its word pieces' last states averaged, as ``static_vectors.sentence_states``
reads them, reduced by PCA to ``dim`` and scaled to a mean variance of 1 per dimension;
NaN rows for words past the encoder's length), ``index.json`` (each sentence's first row
and word count), ``pca.npz`` (the mean, directions and scale that reduced them) and
``record.json`` (encoder, its weights' sha256, data, PCA, code
version). Written to a temporary directory and renamed into place: whole or not at all. An
existing ``out`` is refused before any work, never replaced (``check_out``).

Encoding is the long part (about an hour for the union's sentences on this project's 2-core
CPU), so it is kept as it goes: every ``PART`` sentences in ``<out>.parts/``, under a key of
the encoder's files and the texts. The same command again reads them back and encodes only
the rest, in the same batches, so the states come out as those of a run never stopped. The
parts are kept when a call fails after writing one (they are what the next call resumes
from) and removed once the directory is whole.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from absa.model.text import TOKENIZER, Token, check_tokenizer, tokenize

if TYPE_CHECKING:  # torch is imported when states are made, not when they are read
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

STATES, INDEX, RECORD, PCA = "states.npy", "index.json", "record.json", "pca.npz"
BATCH = 64  # sentences encoded at once
PART = 50 * BATCH  # sentences kept per part while encoding (a few minutes' work here)


def fit_pca(rows: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The mean, the first ``dim`` principal directions (dim, H), the scale that gives the
    projections a mean variance of 1 per dimension, and the share of variance kept."""
    if not 0 < dim <= min(rows.shape):
        raise ValueError(f"dim must be in 1..{min(rows.shape)}, not {dim}")
    mean = rows.mean(0)
    _, s, vt = np.linalg.svd(rows - mean, full_matrices=False)
    var = s**2 / max(1, len(rows) - 1)
    scale = 1.0 / float(np.sqrt(var[:dim].mean()))
    return mean, vt[:dim], scale, float(var[:dim].sum() / var.sum())


def build(
    encoder: Path,
    texts: Sequence[str],
    out: Path,
    dim: int = 64,
    sample: int = 200_000,
    seed: int = 0,
    extra: dict | None = None,
) -> dict:
    """Encode each distinct text of ``texts`` with ``encoder`` (a transformer run's
    fine-tuned encoder or a model directory) and write the states directory ``out``.
    The PCA is fitted on ``sample`` word states drawn with ``seed``. Returns the record.
    FileExistsError, before the encoder is loaded, when ``out`` exists (``check_out``)."""
    from absa.training.static_vectors import encoder_sha256, load_encoder

    out = Path(out)
    check_out(out)
    model, tokenizer = load_encoder(Path(encoder))
    distinct = list(dict.fromkeys(texts))
    parts = parts_path(out)
    key = {
        "encoder_files": encoder_sha256(Path(encoder)),
        "texts_sha256": hashlib.sha256("\n".join(distinct).encode()).hexdigest(),
        "batch": BATCH,
    }
    try:
        found = _encode(model, tokenizer, distinct, parts, key)
        kept = sorted(found)  # the texts with a word, in their order
        full = np.concatenate([found[i] for i in kept])
        valid = np.flatnonzero(~np.isnan(full[:, 0]))
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(valid, min(sample, len(valid)), replace=False))
        mean, comps, scale, kept_var = fit_pca(full[pick].astype(np.float32), dim)
        reduced = np.empty((len(full), dim), np.float16)
        for lo in range(0, len(full), 65536):
            chunk = full[lo : lo + 65536].astype(np.float32)
            reduced[lo : lo + 65536] = ((chunk - mean) @ comps.T) * scale  # NaN rows stay NaN
        offsets = np.cumsum([0] + [len(found[i]) for i in kept])
        index = {distinct[i]: [int(offsets[k]), len(found[i])] for k, i in enumerate(kept)}
        record = {
            "encoder": str(encoder),
            "encoder_files": key["encoder_files"],
            "dim": dim,
            "hidden": int(full.shape[1]),
            "pca_sample": int(len(pick)),
            "pca_seed": seed,
            "variance_kept": round(kept_var, 4),
            "sentences": len(kept),
            "words": int(len(full)),
            "words_unread": int(len(full) - len(valid)),
            **({"word_tokenizer": TOKENIZER} if TOKENIZER != 1 else {}),  # absent: 1
            **(extra or {}),
        }
        _write_dir(out, reduced, index, (mean, comps, scale), record)
    except BaseException:
        if not any(parts.glob("part-*.npz")):  # nothing to resume from: only this call's key
            _remove_parts(parts)
        raise
    _remove_parts(parts)
    log.info(
        "%s: %d sentences, %d words x %d (%.1f%% of the variance)",
        out,
        len(kept),
        len(full),
        dim,
        100 * kept_var,
    )
    return record


def parts_path(out: Path) -> Path:
    """Where ``build`` keeps the states of ``out`` as it encodes them."""
    return out.with_name(out.name + ".parts")


def check_out(out: Path) -> None:
    """FileExistsError when ``out`` exists (its files are the user's: an earlier states
    directory, or a whole folder such as ``runs``, never to be replaced or removed), or
    when its parts' path holds something ``build`` did not write there (it removes its parts
    once done); NotADirectoryError when a folder above ``out`` is a file. Called before the
    encoder is loaded, so that a wrong ``--out`` costs nothing."""
    from absa.training.static_vectors import check_new_path

    out = Path(out)
    check_new_path(out, "states directory")
    parts = parts_path(out)
    if (parts.exists() or parts.is_symlink()) and not (parts / "key.json").is_file():
        raise FileExistsError(
            f"{parts} exists and is not the parts of an earlier `absa states`; "
            "write the states elsewhere"
        )


def _encode(
    model: PreTrainedModel, tokenizer: object, distinct: list[str], parts: Path, key: dict
) -> dict[int, np.ndarray]:
    """Each of ``distinct``'s states (float16) by its index: those kept in ``parts`` under
    ``key`` read back, the rest encoded and kept there every ``PART`` sentences."""
    from absa.training.static_vectors import sentence_states

    found = _read_parts(parts, key)
    done = len(found)
    pending: dict[int, np.ndarray] = {}
    for i, _, states in sentence_states(model, tokenizer, distinct, BATCH, skip=done):
        pending[i] = states.astype(np.float16)
        if len(pending) == PART:
            _write_part(parts, done, pending)
            done += len(pending)
            found.update(pending)
            pending = {}
    found.update(pending)
    return found


def _write_dir(
    out: Path,
    reduced: np.ndarray,
    index: dict[str, list[int]],
    pca: tuple[np.ndarray, np.ndarray, float],
    record: dict,
) -> None:
    """The states directory ``out``, written in a temporary one renamed into place: whole
    or not at all. The temporary name is new (``mkdir`` fails on an existing one), so
    removing it on failure removes nothing of the user's."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{secrets.token_hex(4)}.tmp")
    tmp.mkdir()
    try:
        mean, comps, scale = pca
        np.save(tmp / STATES, reduced)
        (tmp / INDEX).write_text(json.dumps(index, ensure_ascii=False), encoding="utf-8")
        np.savez(tmp / PCA, mean=mean, components=comps, scale=np.float32(scale))
        (tmp / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if out.exists() or out.is_symlink():  # made while this call encoded: not replaced
            raise FileExistsError(f"{out} exists; write the states to a new path")
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _read_parts(parts: Path, key: dict) -> dict[int, np.ndarray]:
    """The states an earlier, stopped call kept in ``parts`` under the same ``key``, in the
    order they were encoded; none (and the parts removed) under another key."""
    if (parts / "key.json").is_file() and json.loads((parts / "key.json").read_text()) != key:
        log.warning("%s: kept for another encoder or other texts, encoding anew", parts)
        _remove_parts(parts)
    parts.mkdir(parents=True, exist_ok=True)
    (parts / "key.json").write_text(json.dumps(key, indent=1) + "\n")
    found: dict[int, np.ndarray] = {}
    for part in _parts_in_order(parts):
        with np.load(part) as z:
            rows = np.split(z["states"], np.cumsum(z["lengths"])[:-1])
            found.update(zip(z["index"].tolist(), rows, strict=True))
    if found:
        log.info("%s: %d sentences' states kept from an earlier call", parts, len(found))
    return found


def _remove_parts(parts: Path) -> None:
    """The files ``build`` writes in ``parts`` removed, then the folder if that empties it:
    never the whole tree, which may hold files of the user's."""
    if not parts.is_dir():
        return
    for name in ("key.json", "part-*.npz", "tmp-*.npz"):
        for path in parts.glob(name):
            path.unlink(missing_ok=True)
    try:
        parts.rmdir()
    except OSError:
        log.warning("%s: left in place, it holds files `absa states` did not write", parts)


def _parts_in_order(parts: Path) -> Iterator[Path]:
    """The part files that follow on from the first sentence with no gap; any after a gap
    (a part whose write was cut short leaves none) are not read."""
    at = 0
    for part in sorted(parts.glob("part-*.npz")):
        lo, hi = (int(x) for x in part.stem.split("-")[1:])
        if lo != at:
            break
        at = hi
        yield part


def _write_part(parts: Path, lo: int, states: dict[int, np.ndarray]) -> None:
    """Sentences ``lo``.. of the encoding order, written whole or not at all."""
    name = parts / f"part-{lo:07d}-{lo + len(states):07d}.npz"
    tmp = parts / f"tmp-{lo:07d}.npz"  # not a part- name until whole
    np.savez(
        tmp,
        index=np.array(list(states), np.int64),
        lengths=np.array([len(v) for v in states.values()], np.int64),
        states=np.concatenate(list(states.values())),
    )
    tmp.rename(name)


class TeacherStates:
    """A states directory, read back: ``rows(text, tokens)`` gives the targets of a window
    of a sentence's words."""

    def __init__(self, path: Path) -> None:
        path = Path(path)
        for name in (STATES, INDEX, RECORD):
            if not (path / name).is_file():
                raise FileNotFoundError(f"{path}: no {name} (make it with `absa states`)")
        self.path = path
        self.states = np.load(path / STATES, mmap_mode="r")
        self.index: dict[str, list[int]] = json.loads((path / INDEX).read_text("utf-8"))
        self.record: dict = json.loads((path / RECORD).read_text("utf-8"))
        self.dim = int(self.states.shape[1])
        #: the words' tokenizer (``absa.model.text.TOKENIZERS``; absent from a record: 1)
        self.tokenizer = check_tokenizer(self.record.get("word_tokenizer", 1), str(path / RECORD))

    def rows(self, text: str, tokens: Sequence[Token]) -> np.ndarray | None:
        """(len(tokens), dim) float32 for ``tokens``, a window of ``text``'s words (an
        encoded item's), NaN where the teacher did not read a word; None when the text is
        not in the directory or its words are not those the teacher read."""
        entry = self.index.get(text)
        if entry is None or not tokens:
            return None
        offset, n = entry
        words = tokenize(text, self.tokenizer)
        if len(words) != n:
            return None
        first = next((i for i, w in enumerate(words) if w.start == tokens[0].start), None)
        if first is None or first + len(tokens) > n:
            return None
        window = words[first : first + len(tokens)]
        if any((w.start, w.end) != (t.start, t.end) for w, t in zip(window, tokens, strict=True)):
            return None  # a student of another tokenizer: these are not its words
        return np.asarray(self.states[offset + first : offset + first + len(tokens)], np.float32)
