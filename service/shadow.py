"""Shadow scoring (ABSA_SHADOW_MODEL): a challenger model answers a share of the served
aspect-term requests beside the model that serves them, and what the two said is counted,
so that before it is promoted one can see how often it agrees with the served model on live
traffic, and where it does not (``absa_shadow_aspects{served, shadow}``), which a fixed test
set cannot show. Its answers are never served.

The served answer is never held for it: a request's text and the served answers go into a
bounded queue (``MAX_QUEUED`` texts) and one thread of its own scores them, what a tenth
of a second brought at a time (``GATHER_S``), at a lower scheduling priority than the
worker's other threads (``NICE``, Linux), with one onnxruntime thread, on the aspects' spans
as they were served (extracted ones too: the shadow needs no extractor). It encodes each
text with its own vocabulary. A shadow that falls behind the traffic drops what does not
fit, counted (``absa_shadow_texts{outcome="dropped"}``): a sample, not a second server."""

from __future__ import annotations

import logging
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from absa.errors import InputError
from absa.model.predictor import Limits, Predictor
from absa.model.runtime import Runtime, first_prediction
from absa.service.metrics import Metrics
from absa.service.sampling import AnswerSample
from absa.settings import Settings

log = logging.getLogger(__name__)

#: texts waiting for the shadow; past it, new ones are dropped (counted)
MAX_QUEUED = 1024
#: texts scored at a time, at most (in onnxruntime calls of max_batch_size aspects)
MAX_TEXTS = 64
#: how long the thread gathers texts once one is queued: one wake-up (a turn at the GIL the
#: event loop waits out) for all the texts of that time, and fuller onnxruntime batches.
#: Measured at ABSA_SHADOW_RATE 0.1 the served throughput is the same either way, within
#: this machine's noise (docs/benchmarks.md, "What a shadow model costs")
GATHER_S = 0.1
#: how much lower the shadow thread's scheduling priority is than the worker's (nice)
NICE = 10
#: how long closing waits for the texts queued to be scored (a worker's shutdown)
CLOSE_WAIT_S = 5.0
OUTCOMES = ("compared", "dropped", "refused", "failed", "same")

#: a request's answers as the routes offer them: (text, model name:version, results)
Answered = Sequence[tuple[str, str, list[dict]]]


@dataclass(frozen=True)
class _Offered:
    """A text queued for the shadow: its served answers, their model and request."""

    text: str
    model: str  # name:version of the model that served them
    results: list[dict]
    request_id: str


def load_shadow(settings: Settings, metrics: Metrics, path: Path) -> Shadow:
    """The shadow at ``path``, loaded, verified and warmed as a served model is
    (``ArtifactError`` where it cannot be), not yet started."""
    runtime = Runtime.load(path, settings.device, 1, settings.max_batch_size)
    limits = Limits(max_text_chars=settings.max_text_chars, max_aspects=settings.max_aspects)
    predictor = Predictor(runtime, limits)
    first_prediction(predictor, path)
    return Shadow(predictor, metrics, settings.shadow_rate)


def _lower_priority(nice: int) -> None:
    """This thread's scheduling priority ``nice`` lower (Linux: a thread's own); elsewhere,
    or where it is refused, it stays as it is."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
    except (AttributeError, OSError) as e:  # no setpriority (Windows), or not allowed
        log.debug("the shadow thread keeps its priority: %s", e)


def shift(served: dict[str, float], shadow: dict[str, float]) -> float:
    """Total variation distance of two answers' probabilities (labels missing from one: 0)."""
    labels = served.keys() | shadow.keys()
    return 0.5 * sum(abs(served.get(k, 0.0) - shadow.get(k, 0.0)) for k in labels)


class Shadow:
    def __init__(
        self,
        predictor: Predictor,
        metrics: Metrics,
        rate: float,
        *,
        max_queued: int = MAX_QUEUED,
        draw: Callable[[], float] = random.random,
        nice: int = NICE,
    ) -> None:
        """Nothing is scored before ``start``: offers wait in the queue (``max_queued``)."""
        self.predictor, self.metrics, self.rate = predictor, metrics, rate
        self._draw, self._nice = draw, nice
        self._queue: queue.Queue[_Offered | None] = queue.Queue(max_queued)
        #: the term model's answer sample (ABSA_SAMPLE_PATH), where every answer the shadow
        #: labels otherwise is kept, with the shadow's answer (``kept: "disagreed"``)
        self.sample: AnswerSample | None = None
        self._thread: threading.Thread | None = None
        self._said_behind = False  # dropping was said; again once the queue has emptied
        for outcome in OUTCOMES:  # each series from 0: its first increase is one
            metrics.shadow_texts.labels(outcome)
        metrics.shadow_agreed.labels(self.model_id)
        for served in predictor.runtime.labels:  # the pairs of its labels (a served model
            for theirs in predictor.runtime.labels:  # of other labels adds its own later)
                metrics.shadow_aspects.labels(served, theirs, self.model_id)

    @property
    def model_id(self) -> str:
        return self.predictor.model_id

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="absa-shadow", daemon=True)
        self._thread.start()
        log.info(
            "shadow: %s scores %.0f%% of the requests' term answers",
            self.model_id,
            100 * self.rate,
        )

    @property
    def digest(self) -> str:
        return self.predictor.runtime.digest

    def offer(self, answered: Answered, served: str, request_id: str = "-") -> None:
        """One request's answers; the term model's are queued for the shadow, the request
        drawn at ``rate``. ``served``: the digest of the term model that answered (the
        shadow's own, promoted since, would agree with itself). Never blocks: past the
        queue's room they are dropped."""
        if self.rate < 1.0 and self._draw() >= self.rate:
            return
        for text, model_id, results in answered:
            if not results or "term" not in results[0]:  # none, or the category model's
                continue
            if served == self.digest:
                self.metrics.shadow_texts.labels("same").inc()
                continue
            try:
                self._queue.put_nowait(_Offered(text, model_id, results, request_id))
            except queue.Full:
                self.metrics.shadow_texts.labels("dropped").inc()
                if not self._said_behind:
                    self._said_behind = True
                    log.warning(
                        "shadow: %s falls behind the traffic (%d texts queued): texts are "
                        'dropped until it catches up (absa_shadow_texts{outcome="dropped"}; '
                        "a lower ABSA_SHADOW_RATE scores fewer)",
                        self.model_id,
                        self._queue.maxsize,
                    )

    def close(self, timeout: float = CLOSE_WAIT_S) -> None:
        """Score what is queued, then stop the thread: ``timeout`` seconds in all, after
        which what is left is said and left (the thread is a daemon)."""
        if self._thread is None:
            return
        deadline = time.monotonic() + timeout
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            log.warning(
                "shadow: stopped with %d texts unscored (%.0f s to score what was queued)",
                self._queue.qsize(),
                timeout,
            )

    def _run(self) -> None:
        _lower_priority(self._nice)
        while True:
            first = self._queue.get()
            if first is None:
                return
            if self._queue.qsize() < MAX_TEXTS - 1:  # a batch's worth is not there yet
                time.sleep(GATHER_S)
            batch = [first]
            while len(batch) < MAX_TEXTS:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._score(batch)
                    return
                batch.append(more)
            self._score(batch)
            if self._said_behind and self._queue.empty():
                self._said_behind = False
                log.info("shadow: %s caught up with the traffic", self.model_id)

    def _score(self, batch: list[_Offered]) -> None:
        """The shadow's answers to ``batch`` (texts, served answers), compared and counted;
        a text it refuses is counted so, and an error fails the batch (logged), never the
        thread."""
        start = time.perf_counter()
        m = self.metrics
        prepared: list = []
        served: list[_Offered] = []
        refused = 0
        try:
            for offered in batch:
                spans = [
                    {"term": r["term"], "start": r["start"], "end": r["end"]}
                    for r in offered.results
                ]
                try:
                    prepared.append(self.predictor.preprocess(offered.text, spans))
                except InputError as e:
                    refused += 1
                    m.shadow_texts.labels("refused").inc()
                    log.debug("shadow: refused a text: %s", e)
                    continue
                served.append(offered)
            answers = self.predictor.predict_many(prepared) if prepared else []
            pairs = [
                (offered, ours, other, shift(ours["scores"], dict(other.scores)))
                for offered, theirs in zip(served, answers, strict=True)
                for ours, other in zip(offered.results, theirs, strict=True)
            ]
        except Exception:  # noqa: BLE001 - counted and logged; the thread lives
            m.shadow_texts.labels("failed").inc(len(batch) - refused)  # those counted apart
            log.exception("shadow: %s failed on a batch of %d texts", self.model_id, len(batch))
            return
        disagreed: dict[int, list[dict]] = {}  # a text's answers labelled otherwise
        for offered, ours, other, moved in pairs:
            m.shadow_aspects.labels(ours["label"], other.label, self.model_id).inc()
            if ours["label"] == other.label:
                m.shadow_agreed.labels(self.model_id).inc()
            else:
                said = {"model": self.model_id, "predicted": other.label, "score": other.score,
                        "scores": dict(other.scores)}  # fmt: skip
                disagreed.setdefault(id(offered), []).append({**ours, "shadow": said})
            m.shadow_shift.observe(moved)
        m.shadow_texts.labels("compared").inc(len(served))
        if self.sample is not None:  # one write a text, as the sample writes a request's
            for offered in served:
                if id(offered) in disagreed:
                    theirs_otherwise = [(offered.text, offered.model, disagreed[id(offered)])]
                    self.sample.offer(theirs_otherwise, offered.request_id, disagreed=True)
        m.shadow_seconds.observe(time.perf_counter() - start)
