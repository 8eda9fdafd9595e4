"""Prometheus metrics of one app instance (its own registry, so apps don't collide).

With several workers (``absa serve --workers N``) every worker is its own process with its
own counters; ``absa serve`` then sets ``PROMETHEUS_MULTIPROC_DIR`` (a fresh directory,
removed on exit) before the workers import prometheus_client, each worker writes its values
there, and ``/metrics`` adds them up (``expose``). A directory the operator set instead is
emptied of prometheus_client's files by ``absa serve`` before its workers start (an earlier
run's counts would be added in), and refused where it holds another ``*.db`` (someone
else's: prometheus_client's collector reads every ``*.db`` there, and failed the scrape on
it); ``expose`` reads prometheus_client's own files alone. One process, or an app made
with ``create_app`` directly, keeps the per-app registry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from absa.service.multiproc_files import foreign_files, own_files

if TYPE_CHECKING:
    from absa.model.runtime import Runtime

log = logging.getLogger(__name__)

# no ``*_created`` series beside every counter and histogram (each child's creation time):
# they doubled the series for nothing, Prometheus reads resets from the counts themselves
disable_created_metrics()

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# a top label's probability is over 1/3 (three labels): finer where answers are sure
CONFIDENCE_BUCKETS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
# how far apart two models' probabilities of one aspect are (total variation, 0 to 1)
SHIFT_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)


#: requests uvicorn's HTTP parser refused, before any app saw them (service/connections.py,
#: absa serve's protocol): one counter per process, in every app's registry (an app's own
#: counters cannot reach the protocol) and, with several workers, in the multiprocess files
PROTOCOL_ERRORS = Counter(
    "absa_protocol_errors",
    "connections closed before a request reached the app: invalid (not HTTP/1.1: a 400), "
    "too_large (a request head over 64 KiB: a 431), timeout (no whole request head within "
    "the client timeout: closed unanswered)",
    ["reason"],
    registry=None,
)
PROTOCOL_ERROR_REASONS = ("invalid", "too_large", "timeout")
for _reason in PROTOCOL_ERROR_REASONS:  # each at 0 from the start, as absa_reloads_total
    PROTOCOL_ERRORS.labels(_reason)


class _OwnFilesCollector(Collector):
    """prometheus_client's MultiProcessCollector, reading prometheus_client's own files
    alone: it reads every ``*.db`` of the directory, and any other file failed the scrape.
    A file still at 0 bytes is left out: prometheus_client creates a worker's file, then
    sizes it (``MmapedDict``), and reading it in between failed the scrape (a replacement
    worker starting; one killed in that moment left it so for good: client_python issue
    1199). It holds no values. (A dead worker's live gauges taken away between the listing
    and the read, ``forget_dead_workers``, prometheus_client passes over itself.)"""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def collect(self) -> Iterable[Metric]:
        from prometheus_client import multiprocess

        files = [str(f) for f in own_files(self.directory) if _sized(f)]
        return multiprocess.MultiProcessCollector.merge(files, accumulate=True)


def _sized(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:  # taken away since the listing
        return False


def model_labels(runtime: Runtime) -> tuple[str, str, str]:
    """``absa_model_info``'s name, version and digest (the runtime's, computed as it loaded)."""
    meta = runtime.metadata
    return str(meta.get("name")), str(meta.get("version")), runtime.digest[:12]


class Metrics:
    def __init__(self, multiproc_dir: Path | None = None) -> None:
        self.multiproc_dir = multiproc_dir
        self._foreign_seen: set[str] = set()  # foreign files warned of
        if multiproc_dir is not None:  # a worker starts, maybe in place of one that died
            forget_dead_workers(multiproc_dir)
        self.registry = CollectorRegistry()
        r = self.registry
        if multiproc_dir is None:
            # the process's memory, CPU, file descriptors, and Python's GC and version (the
            # default registry's, which this one left out). Not under several workers:
            # prometheus_client cannot add them up across processes (its docs: custom
            # collectors do not work in multiprocess mode), and one worker's, at random a
            # scrape, would mislead; the container's own metrics (cAdvisor) measure it all
            for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
                r.register(collector)
        r.register(PROTOCOL_ERRORS)
        self.requests = Counter(
            "absa_requests", "HTTP requests", ["route", "method", "status"], registry=r
        )
        self.latency = Histogram(
            "absa_request_latency_seconds",
            "HTTP request latency (503 answers apart: overload's, held on purpose), by status "
            "class (2xx, 4xx, 5xx): fast refusals do not hide slow answers",
            ["route", "status_class"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "absa_batch_size", "aspects per onnxruntime call", buckets=BATCH_BUCKETS, registry=r
        )
        self.inference = Histogram(
            "absa_inference_seconds",
            "time of one onnxruntime batch",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        # the extractor's work is done before a request's aspects reach a batch: not in
        # absa_inference_seconds (that is the sentiment model's batches alone)
        self.extraction = Histogram(
            "absa_extraction_seconds",
            "time to find one text's aspects with the extractor (its words read, its "
            "onnxruntime call, the spans): requests and batch items without aspects",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge(
            "absa_queue_depth",
            "aspects waiting for a batch (all workers)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.rejected = Counter("absa_rejected", "requests refused: queue full", registry=r)
        self.shed = Counter("absa_shed", "requests refused at once: too many in flight", registry=r)
        self.extractions = Counter(
            "absa_extractions",
            "texts whose aspects the extractor was asked to find, by what came of it: found, "
            "none (answered with no results: a rising share is text the extractor does not "
            "know) or refused (the text was)",
            ["outcome"],
            registry=r,
        )
        # model: name:version, as the answers name it: after a reload the new model's answers
        # are series of their own, to compare with the old one's
        self.aspects = Counter(
            "absa_aspects", "aspect terms classified (categories apart)", ["label", "model"],
            registry=r,
        )  # fmt: skip
        self.categories = Counter(
            "absa_categories", "aspect categories classified (the category model)",
            ["label", "model"], registry=r,
        )  # fmt: skip
        self.words = Counter(
            "absa_words",
            "words of the texts the term model answers (each text once a request), by whether "
            "its vocabulary knows them: the share unknown rises as traffic leaves what it "
            "trained on",
            ["known"],
            registry=r,
        )
        self.confidence = Histogram(
            "absa_confidence",
            "the probability of each answer's label; calibrated, so their mean is the accuracy "
            "to expect on this traffic",
            ["label", "model"],
            buckets=CONFIDENCE_BUCKETS,
            registry=r,
        )
        # a batch answers 200 with some items refused: absa_requests cannot show those
        self.item_errors = Counter(
            "absa_batch_item_errors",
            "items of /v1/predict/batch answered with an error in their place",
            ["status"],
            registry=r,
        )
        self.model_info = Gauge(
            "absa_model_info",
            "the model being served: 1 for the one a worker serves, 0 for one it served before",
            # digest: the artifact's (its first 12 hex digits), as /v1/model gives it whole:
            # two exports under one name and version are two models
            ["name", "version", "digest"],
            registry=r,
            multiprocess_mode="liveall",  # one sample per live worker (label pid)
        )
        self.reloads = Counter(
            "absa_reloads",
            "model reloads, per worker: swapped (a new model serves), refused (the old one keeps "
            "serving)",
            ["result"],
            registry=r,
        )
        self.sample_lines = Counter(
            "absa_sample_lines",
            "lines of the answer sample (ABSA_SAMPLE_PATH), by kind (term, category) and "
            "result: written, or dropped (the file at its cap until rotated, a disk stalled or "
            "full): dropped lines are answers the retraining job will not see; repeated: an "
            "unsure answer about a text and aspect the worker kept lately, not kept again",
            ["kind", "result"],
            registry=r,
        )
        # ABSA_SHADOW_MODEL (service/shadow.py): a challenger answering beside the served model
        self.shadow_aspects = Counter(
            "absa_shadow_aspects",
            "aspect terms the shadow model (ABSA_SHADOW_MODEL, named by model) answered beside "
            "the served one, by the served label and the shadow's: where they differ is what "
            "promoting it would change",
            ["served", "shadow", "model"],
            registry=r,
        )
        self.shadow_agreed = Counter(
            "absa_shadow_agreed",
            "aspect terms the shadow model answered with the served label: over "
            "absa_shadow_aspects_total, the share it agrees on",
            ["model"],
            registry=r,
        )
        self.shadow_texts = Counter(
            "absa_shadow_texts",
            "texts offered to the shadow model, by what came of them: compared; dropped (its "
            "queue was full: it fell behind the traffic); refused (it could not read the text: "
            "its limits, its vocabulary); failed (an error, logged); same (answered by the "
            "shadow's own model, promoted since: nothing to compare)",
            ["outcome"],
            registry=r,
        )
        self.shadow_seconds = Histogram(
            "absa_shadow_seconds",
            "time of one shadow batch: its texts encoded, its onnxruntime call, the answers "
            "compared (in a thread of its own, off the request path)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.shadow_shift = Histogram(
            "absa_shadow_shift",
            "how far the shadow's probabilities of an aspect are from the served ones: total "
            "variation, half the sum of the labels' differences (0 the same, 1 disjoint)",
            buckets=SHIFT_BUCKETS,
            registry=r,
        )
        self.worker_starts = Counter(
            "absa_worker_starts",
            "worker processes that started serving, one a start: with --workers N, those "
            "uvicorn starts in place of workers that died count too (a crash loop shows "
            "nowhere else: process metrics are left out under several workers)",
            registry=r,
        )
        self.behind = Gauge(
            "absa_registry_behind",
            "1 while the registry's CURRENT names a version this worker refused and it serves "
            "another (until CURRENT moves or the version's files change); 0 otherwise",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.behind.set(0)
        self.files_changed = Gauge(
            "absa_model_files_changed",
            "1 while a file of the model this worker serves no longer has the sha256 its "
            "metadata records (changed on disk after it loaded: it serves on from memory, and "
            "a worker started now refuses it); 0 otherwise (looked at every reload interval)",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.files_changed.set(0)
        # each result's series from the start, at 0: a series that first appears at 1 is no
        # increase to Prometheus, and the first refusal would raise no alert
        for result in ("swapped", "refused"):
            self.reloads.labels(result)

    def swapped(self, old: Runtime, new: Runtime) -> None:
        """``absa_model_info`` after a swap from ``old`` to ``new`` (their runtimes): 0 for
        the model served before, 1 for the one served now."""
        before, now = model_labels(old), model_labels(new)
        if before != now:
            self.model_info.labels(*before).set(0)
        self.model_info.labels(*now).set(1)

    def expose(self) -> bytes:
        """The text exposition: every worker's values in multiprocess mode, else this app's."""
        if self.multiproc_dir is None:
            return generate_latest(self.registry)
        forget_dead_workers(self.multiproc_dir)
        self._warn_of_foreign_files(self.multiproc_dir)
        merged = CollectorRegistry()
        merged.register(_OwnFilesCollector(self.multiproc_dir))
        return generate_latest(merged)

    def _warn_of_foreign_files(self, directory: Path) -> None:
        """Names, once each, a ``*.db`` there that is not prometheus_client's: left out of
        /metrics (prometheus_client's collector read it, and the scrape was a 500)."""
        for f in foreign_files(directory):
            if f.name not in self._foreign_seen:
                self._foreign_seen.add(f.name)
                log.warning(
                    "PROMETHEUS_MULTIPROC_DIR %s: %s is not prometheus_client's; left out "
                    "of /metrics (move it: the directory is the server's)",
                    directory,
                    f.name,
                )

    def close(self) -> None:
        """A worker stops: its live gauges leave the multiprocess sums."""
        if self.multiproc_dir is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid(), path=str(self.multiproc_dir))


def forget_dead_workers(multiproc_dir: Path) -> None:
    """Take the live gauges of workers that are gone out of the sums. A worker that stops
    cleanly does this itself (``Metrics.close``); one that is killed (OOM, kill -9) does not,
    and uvicorn starts another in its place: the dead one's last queue depth and model would
    stay in /metrics beside the new one's."""
    from prometheus_client import multiprocess

    for f in Path(multiproc_dir).glob("gauge_live*_*.db"):
        pid = f.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            multiprocess.mark_process_dead(int(pid), path=str(multiproc_dir))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
