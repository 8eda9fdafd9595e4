"""The teacher cache: a teacher's probabilities kept per example, so that no student scores
an aspect its teacher has scored before.

Scoring a large teacher is the slow part of a student's run (an mpnet teacher reads about
20 aspects a second on two CPU threads). A teacher's entry is a directory named by the
sha256 of its files (weights, configs, vocabulary, tokenizer; not the records of how it was
made, ``RECORDS``), so a copy of the teacher elsewhere is the same teacher. In it, shards:
``<sha256 of the shard's spans>.npz`` holding the spans (UTF-8 bytes, one JSON
``[text, start, end]`` per line), the probabilities and the label names. A lookup reads
every shard, scores only the spans no shard holds, ``chunk`` at a time, and writes each
chunk as its own shard as soon as it is scored: a killed run keeps what it finished, and
students of other transfer sets reuse the spans they share. A torn or foreign shard is
skipped with a warning, never trusted.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from absa.model import artifact
from absa.training import rundir
from absa.training.records import Example

log = logging.getLogger(__name__)

__all__ = [
    "RECORDS",
    "cached_scores",
    "file_sha256",
    "read_shards",
    "span_key",
    "teacher_key",
    "write_shard",
]

#: examples -> (probabilities (N, C), label names)
Score = Callable[[Sequence[Example]], tuple[np.ndarray, list[str]]]

# a teacher directory's records of how it was made: every other file (weights, configs,
# vocabulary, tokenizer; an artifact's metadata with its temperature) is in the key
RECORDS = frozenset(
    {rundir.DEV, rundir.HISTORY, rundir.HISTORY_PLOT, rundir.METRICS, rundir.RUN_INFO,
     rundir.TRAIN_CONFIG, "README.md", "eval.json"}
)  # fmt: skip
CHUNK = 1000


def teacher_key(teacher: Path) -> str:
    """The sha256 of a teacher's files, by their paths relative to it."""
    key = hashlib.sha256()
    for f in sorted(p for p in teacher.rglob("*") if p.is_file() and p.name not in RECORDS):
        rel = f.relative_to(teacher).as_posix()
        key.update(rel.encode() + b"\0" + file_sha256(f).encode() + b"\0")
    return key.hexdigest()


def file_sha256(path: Path) -> str:
    """A file's sha256, hashed once while the file is unchanged: a student reads its
    teacher's weights (hundreds of MB for an mpnet teacher) for two lookups and its run
    record."""
    st = path.stat()
    return _sha256_of(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    return artifact.sha256_file(Path(path))


def span_key(e: Example) -> str:
    """An aspect as the cache knows it: its sentence and span, as one JSON line."""
    return json.dumps([e.text, e.start, e.end], ensure_ascii=False)


def read_shards(entry: Path) -> tuple[dict[str, np.ndarray], list[str] | None]:
    known: dict[str, np.ndarray] = {}
    labels: list[str] | None = None
    for shard in sorted(entry.glob("*.npz")):
        try:
            with np.load(shard) as z:
                spans, probs = z["spans"].tobytes().decode().split("\n"), z["probs"]
                names = [str(x) for x in z["labels"]]
            if probs.shape != (len(spans), len(names)):
                raise ValueError(f"probabilities {probs.shape} for {len(spans)} spans")
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as e:
            log.warning("teacher cache shard %s unreadable (%s): skipped", shard, e)
            continue
        if labels is not None and names != labels:
            log.warning("teacher cache shard %s: labels %s, not %s: skipped", shard, names, labels)
            continue
        labels = names
        known.update(zip(spans, probs, strict=True))
    return known, labels


def write_shard(entry: Path, spans: list[str], probs: np.ndarray, labels: list[str]) -> None:
    """One shard of ``spans`` and their ``probs`` in ``entry``, written whole or not at all."""
    text = "\n".join(spans).encode()  # JSON escapes newlines: one span per line
    name = hashlib.sha256(text).hexdigest()
    entry.mkdir(parents=True, exist_ok=True)
    tmp = entry / f".{name}.{os.getpid()}.part"  # not *.npz: a lookup never reads it
    with tmp.open("wb") as f:
        np.savez(f, spans=np.frombuffer(text, np.uint8), probs=probs, labels=np.array(labels))
    os.replace(tmp, entry / f"{name}.npz")  # whole or absent


def cached_scores(
    root: Path, teacher: Path, examples: Sequence[Example], score: Score, chunk: int = CHUNK
) -> tuple[np.ndarray, list[str]]:
    """The teacher's probabilities (N, C) and label names for the examples: those of spans a
    shard of ``root/<teacher_key>`` holds, the rest scored by ``score`` (``chunk`` examples
    at a time, each chunk written as a shard before the next is scored)."""
    entry = root / teacher_key(teacher)
    known, labels = read_shards(entry)
    spans = [span_key(e) for e in examples]
    missing = sorted({s: i for i, s in enumerate(spans) if s not in known}.values())
    if missing:
        log.info(
            "teacher %s: %d of %d examples in the cache, scoring %d",
            teacher, len(examples) - len(missing), len(examples), len(missing),
        )  # fmt: skip
    for lo in range(0, len(missing), chunk):
        part = [examples[i] for i in missing[lo : lo + chunk]]
        probs, names = score(part)
        if labels is not None and list(names) != labels:
            raise ValueError(f"teacher {teacher} labels {names} differ from its cache's {labels}")
        labels = list(names)
        part_spans = [span_key(e) for e in part]
        probs = np.asarray(probs, np.float32)
        write_shard(entry, part_spans, probs, labels)
        known.update(zip(part_spans, probs, strict=True))
        log.info("teacher %s: %d of %d scored", teacher, lo + len(part), len(missing))
    if labels is None:  # no examples, and an empty cache: the teacher names its labels
        return score(examples)
    if not examples:
        return np.zeros((0, len(labels)), np.float32), labels
    log.info("teacher %s: %d examples' probabilities from %s", teacher, len(examples), entry)
    return np.stack([known[s] for s in spans]).astype(np.float32), labels
