"""A sample of the service's answers, kept for people to label (ABSA_SAMPLE_PATH): every
aspect of a share of the requests (ABSA_SAMPLE_RATE) and every answer less sure than
ABSA_SAMPLE_BELOW, the ones most worth a label. One JSON line per answer, with the fields of
a training record but the label (``text``, ``aspect``, ``start``, ``end``) and what the model
said (``predicted``, ``score``, ``scores``, ``model``) with ``request_id`` and ``time``: add
``label`` to the lines a person checked and the file trains (``absa retrain``). A category
model's answers go beside it (``answers.categories.jsonl`` for ``answers.jsonl``), each line
a category record but its label (``text``, ``category``), as the category reader reads them.

The lines of one request go to the file in one ``write`` on a descriptor opened for
appending, from a thread of their own, so the event loop never waits on the disk and the
workers of one server may share the file (whole lines, on a local file system). Lines wait
for that thread in memory up to MAX_QUEUED_BYTES (a stalled volume); past it, new ones are
dropped. A file moved, removed or replaced at the path (``mv`` to take a batch to label,
logrotate's ``create``, an editor's save) is followed, as logging's WatchedFileHandler
does: the next lines go to a new file at the path. A path that cannot be opened (its folder
gone) never stops the worker: its lines are dropped, counted and said once, until it can."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import queue
import random
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

#: the most bytes of kept lines waiting for the writer: on a volume that stalls (an NFS server
#: gone, a hung disk) the answers kept would pile up in the worker's memory; past it, new
#: lines are dropped (said once a backlog) and the queued ones are written when it is back
MAX_QUEUED_BYTES = 16 * 2**20
#: how long closing waits for the queued lines to be written (a worker's shutdown)
CLOSE_WAIT_S = 5.0
#: how many answers kept lately a worker remembers, so that an unsure answer to a text sent
#: again and again (a client's retries, a popular review, a probe) is kept once, not once a
#: request: a person labels it once. 16-byte keys: 8.6 MB measured when full, up to some
#: 18 MB as it turns over (a worker's RSS grows by that over its first hours, then stays)
REMEMBERED = 65_536


def categories_path(path: Path) -> Path:
    """Where a category model's sampled answers go: ``answers.categories.jsonl`` beside
    ``answers.jsonl``."""
    return path.with_suffix(".categories" + (path.suffix or ".jsonl"))


class AnswerSample:
    def __init__(
        self,
        path: Path,
        rate: float,
        below: float,
        draw: Callable[[], float] = random.random,
        max_bytes: int | None = None,
        kind: str = "term",
        counted: Callable[[str, int], None] | None = None,
    ) -> None:
        """``kind``: the answers kept, "term" (aspect terms) or "category". ``counted``:
        told of every line, ("written", n) or ("dropped", n) (the cap, a stalled or full
        disk), for a metric: the feed of the retraining job can stop."""
        self._counted = counted or (lambda result, n: None)
        self.path, self.rate, self.below, self._draw = path, rate, below, draw
        self.kind = kind
        self.max_bytes = max_bytes  # past it, nothing is kept until the file is rotated
        self._full = False  # the cap was met (and said): said again only after a rotation
        self._fd: int | None = None  # None: the path could not be opened (said once)
        self._ident: tuple[int, int] = (0, 0)  # the (device, inode) of the file opened
        self._unopened: str | None = None  # why it could not be, as said
        self._reopen()
        self._cut = False  # the last write stopped inside a line
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.queued_bytes = 0  # of lines put and not yet written (MAX_QUEUED_BYTES)
        self._queued_lock = threading.Lock()
        self._backlog_said = False  # dropping lines was said; again after the queue empties
        # REMEMBERED, oldest first: whether a line the shadow disagreed with was kept of it
        self._kept: OrderedDict[bytes, bool] = OrderedDict()
        self._kept_lock = threading.Lock()
        self._writer = threading.Thread(target=self._write, name="absa-sample", daemon=True)
        self._writer.start()
        log.info(
            "keeping a sample of the answers in %s: %.3g of the requests, and every answer "
            "under %.3g sure",
            path, rate, below,
        )  # fmt: skip

    def offer(
        self,
        answered: Sequence[tuple[str, str, Sequence[dict]]],
        request_id: str,
        disagreed: bool = False,
    ) -> None:
        """One request's answers, as (text, model, results) for each of its texts: those the
        sample keeps are queued for the file, as one write. The rate draws once a request.
        ``disagreed``: answers the shadow model (service/shadow.py, from its thread) labelled
        otherwise, each with its own answer under ``shadow``: every one is kept (the answers
        a label settles most), but one kept lately as disagreed: one kept at random or as
        unsure (written before the shadow scored it) gets a second line, the shadow's."""
        every = not disagreed and self.rate > 0 and self._draw() < self.rate
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        chosen, keys = [], []
        with self._kept_lock:  # offered from the event loop and from the shadow's thread
            for text, model, results in answered:
                for r in results:
                    if self.kind not in r or not (every or disagreed or r["score"] < self.below):
                        continue
                    key = self._key(text, r)
                    # kept lately: not again; but the shadow's answer to one kept at random
                    # or as unsure is (its line is written before the shadow scores it)
                    if not every and key in self._kept and (self._kept[key] or not disagreed):
                        self._kept.move_to_end(key)
                        self._counted("repeated", 1)
                        continue
                    chosen.append((text, model, r))
                    keys.append(key)
        kept = [
            json.dumps(
                {
                    "text": text,
                    **self._what(r),
                    "predicted": r["label"],
                    "score": r["score"],
                    "scores": r["scores"],
                    "model": model,
                    # why it was kept: the random share (an unbiased sample of the traffic),
                    # its score under ABSA_SAMPLE_BELOW (the unsure answers, over-drawn), or
                    # the shadow model's other label (and its answer)
                    "kept": "random" if every else "disagreed" if disagreed else "unsure",
                    **({"shadow": r["shadow"]} if disagreed else {}),
                    "request_id": request_id,
                    "time": now,
                },
                ensure_ascii=False,
            )
            for text, model, r in chosen
        ]
        if kept:  # a lone surrogate (none passes validation) would still be JSON's \ud800
            data = ("\n".join(kept) + "\n").encode("utf-8", "backslashreplace")
            with self._queued_lock:
                if self.queued_bytes + len(data) > MAX_QUEUED_BYTES:
                    if not self._backlog_said:
                        log.warning(
                            "answer sample %s: %d bytes wait for a disk that does not take "
                            "them: new lines not written until it does",
                            self.path, self.queued_bytes,
                        )  # fmt: skip
                        self._backlog_said = True
                    self._counted("dropped", len(kept))
                    return
                self.queued_bytes += len(data)
            # looked at first: the writer may write them at once; with no file held it
            # drops them, so they are not remembered either
            at_cap = self._fd is None or self._at_cap()
            self._lines.put(data)
            if not at_cap:  # else the writer drops them: not kept, so not remembered
                with self._kept_lock:
                    self._remember(keys, disagreed)

    def _key(self, text: str, r: dict) -> bytes:
        """What the answer ``r`` to ``text`` is about (its text and aspect), as a key of
        ``_kept``: an unsure answer is kept only where this worker kept none with the same
        key lately (``REMEMBERED``); one of the random share always, as traffic repeats
        itself (remembered, so no unsure copy follows)."""
        what = json.dumps([text, self._what(r)], ensure_ascii=False)
        return hashlib.blake2b(what.encode("utf-8", "backslashreplace"), digest_size=16).digest()

    def _at_cap(self) -> bool:
        """Whether the file (all workers' lines in it) is at ``max_bytes``: what comes is
        dropped until it is rotated."""
        fd = self._fd  # the writer's thread may put another in its place meanwhile
        if self.max_bytes is None or fd is None:
            return False
        try:
            return os.fstat(fd).st_size >= self.max_bytes
        except OSError:  # the volume's error: the write says it
            return False

    def _reopen(self) -> None:
        """The file at ``path`` opened for appending (made, 0600: the texts are the
        service's users' own), in place of the one held; where it cannot be, none is held
        and the reason is said once. Opened without waiting: a FIFO with no reader blocked
        the worker's start for good (one with a reader, a log shipper's, is written as a
        file is); anything else but a regular file is refused. Never raises: a close that
        fails (NFS's EIO) or a look at the new file that does leaves none held."""
        self._drop_fd()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as e:
            self._said_unopened(e.strerror or str(e))
            return
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                raise OSError(0, "not a regular file")
            os.set_blocking(fd, True)  # a write waits for a slow disk (or reader), on its thread
        except OSError as e:
            with contextlib.suppress(OSError):
                os.close(fd)
            self._said_unopened(e.strerror or str(e))
            return
        if self._unopened is not None:
            log.info("answer sample %s: writing again", self.path)
        self._fd, self._ident, self._unopened = fd, (st.st_dev, st.st_ino), None
        self._cut = False  # a file opened anew: its lines start on lines of their own

    def _drop_fd(self) -> None:
        """Close the file held, if any (a close that fails is the old file's loss)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _said_unopened(self, why: str) -> None:
        if why != self._unopened:
            log.error(
                "answer sample %s cannot be opened (%s): its lines are dropped (counted in "
                "absa_sample_lines_total) until it can; the service answers as before",
                self.path, why,
            )  # fmt: skip
        self._unopened = why

    def _follow(self) -> None:
        """A new file at the path when the one held is no longer there (moved, removed,
        replaced): the lines that come go to the path, not to a file no one reads. The
        path is looked at, not the file held (on NFS, a file removed from another host
        answers ESTALE to its holder), as logging's WatchedFileHandler does. None held:
        tried again."""
        if self._fd is not None:
            try:
                there = os.stat(self.path)
                if (there.st_dev, there.st_ino) == self._ident:
                    return
            except FileNotFoundError:
                pass
            except OSError:  # the volume's error: the write says it
                return
            log.info(
                "answer sample %s was moved or replaced: writing to a new file there", self.path
            )
        self._reopen()

    def _remember(self, keys: list[bytes], disagreed: bool) -> None:
        """The keys of lines queued for the file (lines dropped are not remembered: the
        same answer after a rotation is kept)."""
        for key in keys:
            self._kept[key] = disagreed or self._kept.get(key, False)
            self._kept.move_to_end(key)
        while len(self._kept) > REMEMBERED:
            self._kept.popitem(last=False)

    def _what(self, r: dict) -> dict:
        """What an answer was about, as its kind's training record names it."""
        if self.kind == "category":
            return {"category": r["category"]}
        return {"aspect": r["term"], "start": r["start"], "end": r["end"]}

    def _write(self) -> None:
        while (data := self._lines.get()) is not None:
            try:
                self.append(data)
            except Exception:  # noqa: BLE001 - the sample's loss, never the writer's end
                log.exception("answer sample %s: lines lost", self.path)
                self._counted("dropped", data.count(b"\n"))
            with self._queued_lock:
                self.queued_bytes -= len(data)
                if self.queued_bytes == 0:
                    self._backlog_said = False

    def append(self, data: bytes) -> None:
        """``data``, whole lines, at the file's end. A write that stops short (a full disk:
        the kernel writes what fits and says how much) is tried on from where it stopped;
        one that fails inside a line leaves that line cut, and the next lines written start
        on a line of their own (the cut one is not JSON: the retraining config's
        ``skip_invalid`` passes over it). A file at ``max_bytes`` takes nothing more (said
        once) until it is smaller again (rotated)."""
        self._follow()
        if self._fd is None:
            self._counted("dropped", data.count(b"\n"))
            return
        if self._at_cap():
            if not self._full:
                why = "answer sample %s has reached its cap (%d bytes): none kept until rotated"
                log.warning(why, self.path, self.max_bytes)
            self._full = True
            self._counted("dropped", data.count(b"\n"))
            return
        self._full = False
        ended = b"\n" if self._cut else b""  # the last write stopped inside a line
        out, done = ended + data, 0
        try:
            while done < len(out):
                done += os.write(self._fd, out[done:])
        except OSError as e:  # the answers were given; the sample loses these lines
            kept = out[:done].count(b"\n") - (1 if ended and done else 0)
            cut = done > 0 and out[done - 1 : done] != b"\n"  # inside a line, this time
            self._cut = cut or (self._cut and done == 0)
            lost, why = data.count(b"\n") - kept, ", the first cut short" if cut else ""
            log.error("answer sample %s: %s: %d line(s) lost%s", self.path, e, lost, why)
            self._counted("written", kept)
            self._counted("dropped", lost)
            return
        self._cut = False
        self._counted("written", data.count(b"\n"))

    def close(self) -> None:
        """Write what is queued, then close the file; on a disk that does not take it within
        ``CLOSE_WAIT_S``, give up on it (said, with how much), so that a worker's shutdown
        does not wait on a stalled volume for ever."""
        self._lines.put(None)
        self._writer.join(CLOSE_WAIT_S)
        if self._writer.is_alive():  # blocked in a write: its descriptor stays open with it
            log.error(
                "answer sample %s: the disk took nothing for %g s at shutdown: %d bytes of "
                "lines not written",
                self.path, CLOSE_WAIT_S, self.queued_bytes,
            )  # fmt: skip
            return
        self._drop_fd()
