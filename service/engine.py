"""Micro-batching: concurrent requests are grouped into one onnxruntime call.

Requests queue their encoded aspects; one worker task takes everything waiting (up to
``max_batch`` aspects, waiting at most ``max_wait_ms`` for a batch to fill), runs it in a
single inference thread, and hands each request its outputs. The queue is bounded in
aspects: beyond ``max_queue`` a request is refused with ``QueueFull`` (HTTP 503) instead
of letting latency and memory grow. ``swap`` replaces the model (a ``Predictor``); batches
already taken finish on the model that encoded them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from absa.errors import Overloaded, ShuttingDown
from absa.model.predictor import Predictor
from absa.model.runtime import Output
from absa.model.text import Encoded
from absa.service.metrics import Metrics

log = logging.getLogger(__name__)


class QueueFull(Overloaded):
    """Too many aspects are waiting; try again later."""


__all__ = ["BatchEngine", "QueueFull", "ShuttingDown"]


@dataclass
class _Job:
    model: Predictor
    items: list[Encoded]
    future: asyncio.Future = field(repr=False)


class BatchEngine:
    def __init__(
        self,
        model: Predictor,
        metrics: Metrics,
        max_batch: int = 64,
        max_wait_ms: float = 0.0,
        max_queue: int = 2048,
    ) -> None:
        self.model = model
        self.metrics = metrics
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue
        self._queue: deque[_Job] = deque()
        self._pending = 0  # aspects waiting
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False

    @property
    def pending(self) -> int:
        return self._pending

    async def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="absa-infer")
        self._task = asyncio.create_task(self._loop(), name="absa-batcher")

    async def stop(self) -> None:
        """Stop taking work, finish everything queued, then stop the worker."""
        self._closing = True
        if self._wakeup is not None:
            self._wakeup.set()
        if self._task is not None:
            await self._task
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def swap(self, model: Predictor) -> Predictor:
        """Serve new requests with ``model``; returns the old one."""
        old, self.model = self.model, model
        return old

    @property
    def full(self) -> bool:
        """No room for even one more aspect: refuse before reading a request's body."""
        return self._pending >= self.max_queue

    def admit(self, n: int) -> None:
        """Refuse now (``QueueFull``) if ``n`` more aspects would not fit in the queue: called
        before a request's encoding, so an overloaded server does no work it will throw away."""
        if self._closing or self._wakeup is None:
            raise ShuttingDown("the service is shutting down")
        if self._pending + n > self.max_queue:
            self.metrics.rejected.inc(n)
            raise QueueFull(f"{self._pending} aspects are waiting (limit {self.max_queue})")

    async def submit(self, model: Predictor, items: list[Encoded]) -> list[Output]:
        if self._closing or self._wakeup is None:
            raise ShuttingDown("the service is shutting down")
        if not items:
            return []
        if self._pending + len(items) > self.max_queue:
            self.metrics.rejected.inc(len(items))
            raise QueueFull(f"{self._pending} aspects are waiting (limit {self.max_queue})")
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._queue.append(_Job(model, items, fut))
        self._pending += len(items)
        self.metrics.queue_depth.set(self._pending)
        self._wakeup.set()
        return await fut

    def _take(self) -> list[_Job]:
        """Whole jobs from the head of the queue, same model, up to max_batch aspects."""
        jobs = [self._queue.popleft()]
        n = len(jobs[0].items)
        while self._queue and self._queue[0].model is jobs[0].model:
            if n + len(self._queue[0].items) > self.max_batch:
                break
            job = self._queue.popleft()
            jobs.append(job)
            n += len(job.items)
        self._pending -= n
        self.metrics.queue_depth.set(self._pending)
        return jobs

    async def _fill(self) -> None:
        """Wait up to max_wait for the queue to hold a full batch."""
        assert self._wakeup is not None
        deadline = time.monotonic() + self.max_wait
        while self._pending < self.max_batch and not self._closing:
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
            jobs = self._take()
            items = [it for j in jobs for it in j.items]
            model = jobs[0].model
            t0 = time.perf_counter()
            try:
                outputs = await loop.run_in_executor(self._executor, model.forward, items)
            except Exception as e:  # noqa: BLE001 - handed to every waiting request
                log.exception("inference failed for a batch of %d", len(items))
                for j in jobs:
                    if not j.future.done():
                        j.future.set_exception(e)
                continue
            self.metrics.inference.observe(time.perf_counter() - t0)
            self.metrics.batch_size.observe(len(items))
            k = 0
            for j in jobs:
                if not j.future.done():  # a cancelled request (client gone) is skipped
                    j.future.set_result(outputs[k : k + len(j.items)])
                k += len(j.items)
