"""A teacher's scores, carried without the teacher: a directory that stands in for a teacher
run where only its probabilities on known aspects are needed (out-of-fold targets, say).

An mpnet teacher's weights are 451 MB. A student needs only the teacher's probabilities on
its training items, and those fit in a few MB. So a teacher trained elsewhere (a borrowed
GPU, whose calls return 64 MiB at most) comes back as:

- its run's records (run.json, dev.jsonl, history, metrics, train_config.json), so that
  the checks that read them still can: ``fold_targets``' "trained on this fold" and
  ``dev_leak``;
- ``scores/``: one shard (training/teacher_cache.py's format) of every aspect the cache's
  readable shards hold for it (a torn shard there stays behind, with a warning);
- ``scores.json``: the sha256 of the weights they came from, the cache key, the labels and
  how many aspects.

``distill`` reads such a directory wherever it would run the teacher. An aspect it lacks is
an error that names the directory, never a silent fallback.

    ABSA_TEACHER_CACHE=... python benchmarks/teacher_score.py --teacher RUN --data FILE \\
        --export DIR    # writes DIR from RUN and its cache entry
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from absa.model.artifact import held_temporary
from absa.training import rundir
from absa.training.records import Example
from absa.training.teacher_cache import (
    RECORDS,
    file_sha256,
    read_shards,
    span_key,
    teacher_key,
    write_shard,
)

__all__ = ["SCORES", "export_scores", "is_scores", "read_record", "scores_of"]

SCORES = "scores.json"
SHARDS = "scores"


def is_scores(teacher: Path) -> bool:
    return (Path(teacher) / SCORES).is_file()


def read_record(teacher: Path) -> dict:
    return json.loads((Path(teacher) / SCORES).read_text())


def export_scores(teacher: Path, cache_root: Path, out: Path) -> dict:
    """Write ``out`` from a teacher run and its entry in the cache at ``cache_root``;
    written whole (a temporary directory renamed) or not at all. An earlier export at
    ``out`` is replaced; anything else there is refused (FileExistsError)."""
    teacher, out = Path(teacher), Path(out)
    if out.exists() and not is_scores(out):  # the teacher run itself, say: never removed
        raise FileExistsError(f"{out}: exists and is not a scores export; not replaced")
    key = teacher_key(teacher)
    known, labels = read_shards(cache_root / key)
    if not known or labels is None:
        raise FileNotFoundError(f"{cache_root / key}: the cache holds no scores of {teacher}")
    out.parent.mkdir(parents=True, exist_ok=True)
    # held while it runs: one a killed export left, the next one removes (as absa export's);
    # gone once renamed, and a failed export leaves none
    with held_temporary(out.parent, f".{out.name}.", "a scores export") as tmp:
        for name in sorted(RECORDS):
            if (teacher / name).is_file():
                shutil.copy2(teacher / name, tmp / name)
        spans = sorted(known)
        write_shard(tmp / SHARDS, spans, np.stack([known[k] for k in spans]), labels)
        record = {
            "teacher": str(teacher),
            "weights_sha256": file_sha256(teacher / rundir.WEIGHTS),
            "teacher_key": key,
            "labels": labels,
            "aspects": len(known),
        }
        (tmp / SCORES).write_text(json.dumps(record, indent=1))
        if out.exists():  # an earlier export: set aside until the new one is in its place
            aside = out.with_name(f"{out.name}.replaced")
            out.rename(aside)
            tmp.rename(out)
            shutil.rmtree(aside)
        else:
            tmp.rename(out)
    return record


def scores_of(teacher: Path, examples: Sequence[Example]) -> tuple[np.ndarray, list[str]]:
    """The probabilities (N, C) and label names a scores directory holds for the examples;
    FileNotFoundError, naming the directory, when it lacks any of them."""
    teacher = Path(teacher)
    known, labels = read_shards(teacher / SHARDS)
    if labels is None:
        raise FileNotFoundError(f"{teacher}: no readable scores in {SHARDS}/")
    keys = [span_key(e) for e in examples]
    missing = sum(k not in known for k in keys)
    if missing:
        raise FileNotFoundError(
            f"{teacher} holds a teacher's scores, not the teacher, and lacks {missing} of the "
            f"{len(keys)} aspects asked for: score them where the teacher is "
            "(benchmarks/teacher_score.py --export)"
        )
    if not keys:
        return np.zeros((0, len(labels)), np.float32), labels
    return np.stack([known[k] for k in keys]).astype(np.float32), labels
