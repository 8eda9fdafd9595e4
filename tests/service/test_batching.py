"""Micro-batching and the bounded queue under a real uvicorn server and concurrent clients."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.service.conftest import EXAMPLES, make_settings, serve


async def post_all(url: str, bodies: list[dict]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as c:
        return await asyncio.gather(*(c.post("/v1/predict", json=b) for b in bodies))


def metric(url: str, name: str) -> float:
    """The value of one unlabelled sample in /metrics (0 when absent)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and not sample.labels:
                return sample.value
    return 0.0


def bodies(n: int) -> list[dict]:
    """``n`` one-aspect requests over the training sentences (texts of several lengths)."""
    out = []
    for i in range(n):
        e = EXAMPLES[i % len(EXAMPLES)]
        out.append({"text": e.text, "aspects": [{"term": e.term, "start": e.start, "end": e.end}]})
    return out


def test_concurrent_requests_share_batches(artifact: Path) -> None:
    n = 32
    reqs = bodies(n)
    with serve(make_settings(artifact, max_wait_ms=20, max_batch_size=64)) as url:
        # alone: one request at a time
        alone = [httpx.post(f"{url}/v1/predict", json=b, timeout=10).json() for b in reqs[:4]]
        count0 = metric(url, "absa_batch_size_count")
        sum0 = metric(url, "absa_batch_size_sum")
        responses = asyncio.run(post_all(url, reqs))
        batches = metric(url, "absa_batch_size_count") - count0
        aspects = metric(url, "absa_batch_size_sum") - sum0
    assert [r.status_code for r in responses] == [200] * n
    assert aspects == n  # every aspect went through the engine once
    assert 1 <= batches < n  # ... in fewer onnxruntime calls than requests
    # batched with other texts (padded), the answers are those given alone
    for r, a in zip(responses[:4], alone, strict=True):
        (got,) = r.json()["results"]
        (ref,) = a["results"]
        assert got["label"] == ref["label"]
        assert got["scores"] == pytest.approx(ref["scores"], abs=1e-5)


def test_full_queue_answers_503_with_retry_after(artifact: Path) -> None:
    n = 20
    settings = make_settings(artifact, max_queue=4, max_wait_ms=300, max_batch_size=64)
    with serve(settings) as url:
        responses = asyncio.run(post_all(url, bodies(n)))
        rejected = metric(url, "absa_rejected_total")
    codes = [r.status_code for r in responses]
    assert set(codes) <= {200, 503}, codes
    assert 200 in codes and 503 in codes, codes
    for r in responses:
        if r.status_code == 503:
            assert r.headers["retry-after"].isdigit()
            assert "overloaded" in r.json()["detail"]
    assert rejected == codes.count(503)
