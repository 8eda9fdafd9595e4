"""Prometheus metrics of one app instance (its own registry, so apps don't collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "absa_requests", "HTTP requests", ["route", "method", "status"], registry=r
        )
        self.latency = Histogram(
            "absa_request_latency_seconds",
            "HTTP request latency",
            ["route"],
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
        self.queue_depth = Gauge("absa_queue_depth", "aspects waiting for a batch", registry=r)
        self.rejected = Counter("absa_rejected", "aspects refused: queue full", registry=r)
        self.aspects = Counter("absa_aspects", "aspects classified", ["label"], registry=r)
        self.model_info = Gauge(
            "absa_model_info", "the model being served", ["name", "version"], registry=r
        )
