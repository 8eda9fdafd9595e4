"""Resumable training: a run's whole state at the end of each epoch, and a time box.

``fit`` writes ``<run>/checkpoint.pt`` after every epoch: the network's, the optimiser's,
the schedule's, the weight average's and the hint map's state, every random generator the
epochs draw from (the batch order, torch's: dropout; numpy's, Python's), the history, the
early-stopping record and the seconds trained so far. It is removed when the run completes.
An epoch that runs long (an mpnet teacher's takes hours on two CPU threads) also writes one
within itself every ``train.CHECKPOINT_SECONDS``: the same state, plus ``Within`` (how many
batches it had done, its loss so far, and the batch-order generator as the epoch began, so
that the epoch's order is drawn again and its first batches skipped).
``absa train --resume`` continues from it, with the numbers of a run that never stopped;
``--stop-after MINUTES`` ends a run at the first epoch's end past that time and keeps the
checkpoint (an mpnet teacher on two CPU threads trains for longer than a working session).
``STOP`` (set by SIGTERM under ``absa train``: a node drained, a pod evicted, a session's
end) ends it after the batch in progress, with a checkpoint within the epoch: nothing
trained since the last one is lost.

A checkpoint belongs to one configuration and one data set: ``fingerprint`` (the train and
model configs but for threads and device, and every train and dev item) is kept in it and a
resume with anything else is refused rather than mixed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import random
import shutil
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from absa.model.atomic import synced_after_rename

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"
#: set when the process is asked to stop: the training loop writes a checkpoint after the
#: batch in progress and the run stops, for ``--resume`` to go on (absa train and absa
#: retrain set it on SIGTERM: absa/cli/common.py ``checkpoint_on_sigterm``)
STOP = threading.Event()
# what may differ between the run that stopped and the one that resumes it (run.json's
# ``sessions`` say what each session ran with)
FREE = ("threads", "device", "precision")


@dataclass
class Within:
    """How far an epoch had come when a checkpoint was written inside it."""

    batches: int = 0  # batches done
    loss: float = 0.0  # their loss, summed over items
    seen: int = 0  # their items
    seconds: float = 0.0
    order_rng: tuple | None = None  # the batch-order generator's state as the epoch began


class CheckpointError(ValueError):
    """A checkpoint that does not belong to this run (another config or data), or is torn."""


def fingerprint(train_config: dict, model_config: dict, items: Sequence[Any]) -> str:
    """The sha256 of what a checkpoint must be resumed with: both configs (``FREE`` keys
    aside) and every item (dataclasses: text, span or category, label, source), in order."""
    key = hashlib.sha256()
    tc = {k: v for k, v in train_config.items() if k not in FREE}
    key.update(json.dumps([tc, model_config], sort_keys=True, default=str).encode())
    for e in items:
        key.update(json.dumps(astuple(e), default=str).encode() + b"\n")
    return key.hexdigest()


def rng_state(batch_order: random.Random) -> dict:
    """Every random generator an epoch draws from."""
    state = {
        "batch_order": batch_order.getstate(),
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict, batch_order: random.Random) -> None:
    batch_order.setstate(state["batch_order"])
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(run_dir: Path, state: dict) -> None:
    """Write the checkpoint atomically: a killed write leaves the previous one whole, and a
    power cut after the rename the new one (the file and its directory are fsynced). Ctrl-C,
    SIGTERM and SIGHUP wait for the write and the rename (``_signals_held``)."""
    path = Path(run_dir) / CHECKPOINT
    part = path.with_suffix(".part")
    with _signals_held():
        try:
            with part.open("wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
        except (OSError, RuntimeError) as e:  # a full disk, say: no half checkpoint left behind
            raise _unwritten(path, part, e) from e
        os.replace(part, path)
        synced_after_rename(path.parent, path)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP noted, not acted on, until the block ends, then raised
    again for their own handlers (in the main thread, where Python handles them; a signal
    ignored stays ignored). Ctrl-C inside torch.save's write came out of it as a RuntimeError
    ("unexpected pos"): the job said "cannot write ... checkpoint.pt (may succeed if run
    again)" and exited 75, not "interrupted" with 130. (Not a blocked signal mask: the
    kernel hands a process's signal to any thread that does not block it, torch's too.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = [
        s
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(s) not in (signal.SIG_IGN, None)
    ]
    old = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for signum in caught:
            signal.raise_signal(signum)


def load(run_dir: Path, expected: str) -> dict | None:
    """The run's checkpoint, None when there is none; ``CheckpointError`` when it is torn
    or was written for another configuration or data set (``fingerprint``)."""
    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # a torn or foreign file: refused, never half-read
        raise CheckpointError(f"{path}: not a readable checkpoint ({e})") from None
    if not isinstance(state, dict) or "parts" not in state:  # torch.save of something else
        raise CheckpointError(f"{path}: not a checkpoint (it holds a {type(state).__name__})")
    if state.get("fingerprint") != expected:
        raise CheckpointError(
            f"{path} was written by a run with another configuration or data set: train "
            f"into another --out directory, or delete {path} and run with --resume to start "
            "this one afresh"
        )
    return state


SOFT_ATOL = 1e-3  # the same teacher scored again (another engine, threads) differs by ~1e-5


def check_targets(state: dict, soft: np.ndarray | None, run_dir: Path) -> None:
    """Refuse to resume where the teacher's probabilities of the training items are not
    those the run trained on so far (a teacher retrained or replaced at its path between
    sessions). A checkpoint without them (written before they were kept) is taken as it is."""
    theirs = state.get("soft")
    if theirs is None or soft is None:  # none kept, or no teacher (the fingerprint says so)
        return
    same = theirs.shape == soft.shape and bool(np.allclose(theirs, soft, atol=SOFT_ATOL))
    if not same:
        diff = float(np.abs(theirs - soft).max()) if theirs.shape == soft.shape else None
        raise CheckpointError(
            f"{Path(run_dir) / CHECKPOINT}: the teacher's probabilities of the training items "
            f"are not those the run trained on so far (max |diff| {diff}): the teacher changed; "
            "restore it, or train into a new --out"
        )


def _unwritten(path: Path, part: Path, e: OSError | RuntimeError) -> OSError:
    """``e``, met writing ``part``, as one line naming ``path`` (the previous checkpoint, if
    any, stays whole), the half-written ``part`` removed. torch reports a disk that filled
    mid-write as a RuntimeError ("[enforce fail at inline_container.cc] ... unexpected
    pos"): the disk's free space, looked at before the part is removed, says it was that."""
    from absa.errors import cannot_write

    if isinstance(e, RuntimeError):
        try:
            full = shutil.disk_usage(part.parent).free < 2**20
        except OSError:
            full = False
        e = OSError(errno.ENOSPC if full else errno.EIO, str(e))
    part.unlink(missing_ok=True)
    return cannot_write(path, e)


def remove(run_dir: Path) -> None:
    """The checkpoint, and a half-written one a killed ``save`` left (as big as a whole one)."""
    path = Path(run_dir) / CHECKPOINT
    path.unlink(missing_ok=True)
    path.with_suffix(".part").unlink(missing_ok=True)
