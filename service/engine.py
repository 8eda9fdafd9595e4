"""Micro-batching: concurrent requests are grouped into one onnxruntime call.

Requests queue their encoded aspects; one worker task takes everything waiting (up to
``max_batch`` aspects, waiting at most ``max_wait_ms`` for a batch to fill), runs it in a
single inference thread, and hands each request its outputs. The queue is bounded in
aspects: beyond ``max_queue`` a request is refused with ``QueueFull`` (HTTP 503) instead
of letting latency and memory grow. Heavy requests (more aspects than one batch) may fill it
only up to ``heavy_limit``: the rest is kept for light requests, so a few big batches
cannot lock out everyone else, and several of them fit at once (a request over
``heavy_limit``, or a light one over ``max_queue``, could never be admitted: it is refused
as over a limit, 413, not told to retry). A request larger than ``max_batch`` runs a slice at a
time and goes to the back of the queue between slices, so light requests behind a heavy one
wait for one batch, not for all of it. ``offload`` runs the Python-heavy part of big requests
(encoding, building the answer) in one thread of its own: one such thread, not a pool, is
all that competes with the event loop for the GIL, so /healthz stays quick. ``swap``
replaces the model (a ``Predictor``); batches already taken finish on the model that
encoded them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from absa.errors import LimitError, Overloaded, ShuttingDown
from absa.model.predictor import Predictor, RuntimeModel
from absa.model.runtime import Output
from absa.model.text import Encoded
from absa.service.metrics import Metrics

log = logging.getLogger(__name__)


class QueueFull(Overloaded):
    """Too many aspects are waiting; try again later."""


__all__ = ["BatchEngine", "QueueFull", "ShuttingDown"]

T = TypeVar("T")


@dataclass(eq=False)  # a job is itself: compared and hashed by identity
class _Job:
    model: RuntimeModel  # the term model, or the category model (ABSA_CATEGORY_MODEL)
    items: list[Encoded]
    future: asyncio.Future = field(repr=False)
    explain: bool = False  # some answer explains itself (self-attention maps are fetched)
    taken: int = 0  # items handed to the model so far (a job runs in slices)
    results: list[Output] = field(default_factory=list, repr=False)
    queued: float = field(default_factory=time.perf_counter)
    first_run: float | None = None  # when its first slice went to the model
    model_s: float = 0.0  # seconds of the model calls its slices were in
    batches: list[int] = field(default_factory=list)  # the size of each of those calls

    def timing(self) -> dict[str, Any]:
        """How the job went (for the request's span): waited, ran, in which batches."""
        start = self.queued if self.first_run is None else self.first_run
        waited = start - self.queued
        return {"queue_wait_s": waited, "model_s": self.model_s, "batches": self.batches}


class BatchEngine:
    def __init__(
        self,
        model: Predictor,
        metrics: Metrics,
        max_batch: int = 64,
        max_wait_ms: float = 0.0,
        max_queue: int = 8192,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.model = model
        self.on_failure = on_failure  # told once the batcher stopped and its jobs failed
        self.metrics = metrics
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue
        #: room heavy requests may take; the rest (a quarter, at least one batch) is kept
        #: for requests of at most one batch
        self.heavy_limit = max(0, max_queue - max(max_batch, max_queue // 4))
        self._queue: deque[_Job] = deque()
        self._pending = 0  # aspects waiting
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._cpu: ThreadPoolExecutor | None = None  # heavy requests' Python work
        self._closing = False
        self._running: list[_Job] = []  # the jobs of the model call in progress
        #: why the batcher stopped while the service served (a bug): None while it runs
        self.failed: BaseException | None = None

    @property
    def pending(self) -> int:
        return self._pending

    async def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="absa-infer")
        self._cpu = ThreadPoolExecutor(max_workers=1, thread_name_prefix="absa-heavy")
        self._task = asyncio.create_task(self._loop(), name="absa-batcher")
        self._task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task) -> None:
        """The batcher ended. Other than at shutdown that is a bug, and without this every
        queued request would wait for ever: they are failed at once (503, retry), new ones
        are refused, and /healthz says so, so the orchestrator restarts the worker."""
        if task.cancelled():
            return
        failed = task.exception()
        if failed is None:
            return
        self.failed = failed
        self._closing = True
        jobs = [*self._running, *self._queue]
        log.critical(
            "the batcher stopped (%r): %d request(s) failed, this worker takes no more",
            self.failed, len(jobs), exc_info=self.failed,
        )  # fmt: skip
        for job in jobs:
            if not job.future.done():
                job.future.set_exception(ShuttingDown("the service failed: retry"))
        self._queue.clear()
        self._running.clear()
        self._pending = 0
        self.metrics.queue_depth.set(0)
        if self.on_failure is not None:
            self.on_failure(failed)

    async def stop(self) -> None:
        """Stop taking work, finish everything queued, then stop the worker."""
        self._closing = True
        if self._wakeup is not None:
            self._wakeup.set()
        if self._task is not None and self.failed is None:  # a failed one was reported
            await self._task
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        if self._cpu is not None:
            self._cpu.shutdown(wait=True)

    async def offload(self, fn: Callable[[], T]) -> T:
        """``fn()`` in the engine's one thread for heavy requests' Python work."""
        if self._cpu is None:
            raise ShuttingDown("the service is shutting down")
        return await asyncio.get_running_loop().run_in_executor(self._cpu, fn)

    def swap(self, model: Predictor) -> Predictor:
        """Serve new requests with ``model``; returns the old one."""
        old, self.model = self.model, model
        return old

    @property
    def full(self) -> bool:
        """No room for even one more aspect: refuse before reading a request's body."""
        return self._pending >= self.max_queue

    @property
    def request_limit(self) -> int:
        """The most aspects one request may queue (``fits``): up to one batch, the whole
        queue; past it, ``heavy_limit``."""
        return max(min(self.max_batch, self.max_queue), self.heavy_limit)

    def fits(self, n: int) -> int:
        """The most aspects one request of ``n`` may queue; ``LimitError`` where ``n`` is over
        it: not even an empty queue takes such a request, and retrying would never help."""
        limit = self.heavy_limit if n > self.max_batch else self.max_queue
        if n > limit:  # the most any request may queue: a heavy share under one batch
            raise LimitError(  # named itself ("at most 36" where 64 were taken)
                f"{n} aspects in one request; this server queues at most "
                f"{self.request_limit} for one request (max_queue setting): split it"
            )
        return limit

    def admit(self, n: int) -> None:
        """Refuse now if ``n`` more aspects would not fit in the queue: called before a
        request's encoding, so an overloaded server does no work it will throw away.
        ``QueueFull`` (retry later) or, for a request that could never fit, ``LimitError``."""
        if self._closing or self._wakeup is None:
            raise ShuttingDown("the service is shutting down")
        limit = self.fits(n)
        if self._pending + n > limit:  # counted as its 503 goes (errors._domain_error)
            raise QueueFull(f"{self._pending} aspects are waiting (limit {limit} for this request)")

    async def submit(
        self,
        model: RuntimeModel,
        items: list[Encoded],
        explain: bool = False,
        timings: list[dict[str, Any]] | None = None,
    ) -> list[Output]:
        (out,) = await self.submit_all([(model, items, explain)], timings)
        return out

    async def submit_all(
        self,
        jobs: Sequence[tuple[RuntimeModel, list[Encoded], bool]],
        timings: list[dict[str, Any]] | None = None,
    ) -> list[list[Output]]:
        """One request's jobs (model, items, explain), e.g. a batch's term and category items:
        admitted and queued together, or none of them (``admit``'s errors), so a refusal
        leaves no job running for nobody. ``timings``: each queued job's ``_Job.timing()``
        appended once all are answered."""
        self.admit(sum(len(items) for _, items, _ in jobs))  # refused while shutting down
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future] = []
        queued: list[_Job] = []
        for model, items, explain in jobs:
            fut: asyncio.Future = loop.create_future()
            futures.append(fut)
            if not items:
                fut.set_result([])
                continue
            queued.append(_Job(model, items, fut, explain))
            self._queue.append(queued[-1])
            self._pending += len(items)
        self.metrics.queue_depth.set(self._pending)
        assert self._wakeup is not None  # admit() refuses before start() and after close()
        self._wakeup.set()
        try:
            done = [await fut for fut in futures]  # all queued already: awaited in turn
            if timings is not None:
                timings.extend(job.timing() for job in queued)
            return done
        finally:  # cancelled (the client hung up) or failed: the rest run for nobody
            for fut in futures:
                fut.cancel()  # a done one stays as it is; an undone one is dropped (_take)

    def _take(self) -> list[tuple[_Job, int, int]]:
        """Slices (job, start, end) for one model call, same model, up to max_batch aspects:
        whole jobs from the head of the queue; a job too big for one call gives its next
        slice and goes to the back of the queue with the rest. Abandoned jobs are dropped."""
        out: list[tuple[_Job, int, int]] = []
        n = 0
        model = None
        while self._queue and n < self.max_batch:
            job = self._queue[0]
            left = len(job.items) - job.taken
            if job.future.done():  # the client went away: do not run the rest
                self._queue.popleft()
                self._pending -= left
                continue
            if model is None:
                model = job.model
            elif job.model is not model or n + left > self.max_batch:
                break
            k = min(left, self.max_batch - n)
            self._queue.popleft()
            out.append((job, job.taken, job.taken + k))
            job.taken += k
            n += k
            if job.taken < len(job.items):
                self._queue.append(job)  # the rest waits its turn behind lighter requests
                break
        self._pending -= n
        self.metrics.queue_depth.set(self._pending)
        return out

    async def _fill(self) -> None:
        """Wait up to max_wait for the queue to hold a full batch: max_batch aspects, or all
        the queue admits where max_queue is smaller (more could never come)."""
        assert self._wakeup is not None
        deadline = time.monotonic() + self.max_wait
        full = min(self.max_batch, self.max_queue)
        while self._pending < full and not self._closing:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except TimeoutError:
                return

    async def _loop(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if self.max_wait > 0:
                await self._fill()
            slices = self._take()
            if not slices:
                continue
            items = [it for job, a, b in slices for it in job.items[a:b]]
            model = slices[0][0].model
            explain = any(job.explain for job, _, _ in slices)
            t0 = time.perf_counter()
            self._running = [job for job, _, _ in slices]
            try:
                outputs = await loop.run_in_executor(self._executor, model.forward, items, explain)
            except Exception as e:  # noqa: BLE001 - handed to every waiting request
                log.exception("inference failed for a batch of %d", len(items))
                for job, _, _ in slices:
                    if not job.future.done():
                        job.future.set_exception(e)  # its other slices are then dropped
                continue
            took = time.perf_counter() - t0
            self.metrics.inference.observe(took)
            self.metrics.batch_size.observe(len(items))
            for job in dict.fromkeys(job for job, _, _ in slices):  # a job once a call
                job.first_run = t0 if job.first_run is None else job.first_run
                job.model_s += took
                job.batches.append(len(items))
            k = 0
            for job, a, b in slices:
                job.results.extend(outputs[k : k + b - a])
                k += b - a
                if b == len(job.items) and not job.future.done():  # skip a cancelled request
                    job.future.set_result(job.results)
            self._running = []
