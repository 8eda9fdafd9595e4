"""absa.service.engine.BatchEngine with a real Predictor (onnxruntime): draining, refusal, swap."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from absa.errors import LimitError
from absa.model.predictor import Predictor
from absa.model.runtime import Output, Runtime
from absa.model.text import Encoded
from absa.service.engine import BatchEngine, QueueFull, ShuttingDown
from absa.service.metrics import Metrics
from tests.helpers import ARTIFACT_EXAMPLES as EXAMPLES


def load(artifact: Path) -> Predictor:
    return Predictor(Runtime.load(artifact, device="cpu", threads=1))


def encode(rt: Predictor, n: int) -> list[Encoded]:
    return [rt.runtime.encode(e.text, e.start, e.end) for e in EXAMPLES[:n]]


def record_runs(rt: Predictor, calls: list[tuple[str, int]]) -> None:
    """Log (version, batch size) of every ``rt.forward`` the engine makes."""
    run = rt.forward
    version = rt.metadata["version"]

    def spy(items, explain=False):  # type: ignore[no-untyped-def]
        calls.append((version, len(items)))
        return run(items, explain)

    rt.forward = spy  # type: ignore[method-assign]


def test_stop_drains_queued_requests(artifact: Path) -> None:
    rt = load(artifact)
    items = encode(rt, 10)

    async def main() -> tuple[list[list[Output]], BatchEngine]:
        engine = BatchEngine(rt, Metrics(), max_batch=4, max_wait_ms=50)
        await engine.start()
        tasks = [asyncio.create_task(engine.submit(rt, [it])) for it in items]
        await asyncio.sleep(0)  # every request has queued its aspect
        await engine.stop()
        assert all(t.done() for t in tasks)
        with pytest.raises(ShuttingDown):
            await engine.submit(rt, items[:1])
        return [t.result() for t in tasks], engine

    results, engine = asyncio.run(main())
    assert engine.pending == 0
    ref = rt.forward(items)
    for (out,), want in zip(results, ref, strict=True):
        np.testing.assert_allclose(out.probs, want.probs, atol=1e-5)
        assert out.tokens == want.tokens


def test_submit_before_start_is_refused(artifact: Path) -> None:
    rt = load(artifact)
    engine = BatchEngine(rt, Metrics())
    with pytest.raises(ShuttingDown):
        asyncio.run(engine.submit(rt, encode(rt, 1)))


def test_full_queue_refuses_and_counts(artifact: Path) -> None:
    rt = load(artifact)
    items = encode(rt, 3)
    metrics = Metrics()

    async def main() -> None:
        engine = BatchEngine(rt, metrics, max_batch=64, max_wait_ms=100, max_queue=2)
        await engine.start()
        first = asyncio.create_task(engine.submit(rt, items[:2]))
        await asyncio.sleep(0)
        with pytest.raises(QueueFull):
            await engine.submit(rt, items[2:])
        assert len(await first) == 2  # the accepted request still gets its answer
        await engine.stop()

    asyncio.run(main())
    # counted as its 503 goes, by the HTTP layer (test_batching, test_overload): a client
    # gone in the shed pause gets none
    assert metrics.registry.get_sample_value("absa_rejected_total") == 0


def test_a_full_queue_is_a_full_batch(artifact: Path) -> None:
    """max_queue below max_batch: the batch can never reach max_batch, so a queue that is full
    runs at once instead of waiting out max_wait_ms for aspects that cannot be admitted."""
    rt = load(artifact)
    items = encode(rt, 2)

    async def main() -> float:
        engine = BatchEngine(rt, Metrics(), max_batch=64, max_wait_ms=5_000, max_queue=2)
        await engine.start()
        t0 = time.monotonic()
        await engine.submit(rt, items)
        took = time.monotonic() - t0
        await engine.stop()
        return took

    assert asyncio.run(main()) < 2.5  # half the wait: it did not wait for the deadline


def test_jobs_for_two_models_queue_together_or_not_at_all(
    artifact: Path, artifact_v2: Path
) -> None:
    """A batch request with term and category items submits a job per model: where the queue
    has room for one but not both, neither is queued (the first one ran for nobody, since the
    request was refused with 503 anyway)."""
    rt, other = load(artifact), load(artifact_v2)
    items = encode(rt, 4)
    metrics = Metrics()

    async def main() -> None:
        engine = BatchEngine(rt, metrics, max_batch=64, max_wait_ms=100, max_queue=3)
        await engine.start()
        first = asyncio.create_task(engine.submit(rt, items[:2]))
        await asyncio.sleep(0)  # queued: 2 of 3 places taken
        with pytest.raises(QueueFull):
            await engine.submit_all([(rt, items[2:3], False), (other, items[3:], False)])
        assert engine.pending == 2  # the refused request queued nothing
        assert len(await first) == 2
        a, b = await engine.submit_all([(rt, items[:1], False), (other, items[1:3], True)])
        assert len(a) == 1 and len(b) == 2
        assert await engine.submit_all([]) == []
        await engine.stop()

    asyncio.run(main())
    # counted as its 503 goes, by the HTTP layer (test_batching, test_overload): a client
    # gone in the shed pause gets none
    assert metrics.registry.get_sample_value("absa_rejected_total") == 0


def test_a_request_of_two_jobs_cancelled_runs_neither(artifact: Path, artifact_v2: Path) -> None:
    """A batch request with term and category items whose client hung up: cancelling it
    cancelled the job it was awaiting, the term model's, and the category model's ran for
    nobody (the README: a hung-up request's queued aspects never reach the model)."""
    rt, other = load(artifact), load(artifact_v2)
    items = encode(rt, 4)
    calls: list[tuple[str, int]] = []
    record_runs(rt, calls)
    record_runs(other, calls)

    async def main() -> int:
        engine = BatchEngine(rt, Metrics(), max_batch=64, max_wait_ms=200)
        await engine.start()
        request = asyncio.create_task(
            engine.submit_all([(rt, items[:2], False), (other, items[2:], False)])
        )
        await asyncio.sleep(0.05)  # queued, and the batcher waits for a fuller batch
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        await asyncio.sleep(0.3)  # past the wait: whatever is queued has run
        await engine.stop()
        return engine.pending

    assert asyncio.run(main()) == 0
    assert calls == []


def test_swap_serves_new_requests_with_the_new_runtime(artifact: Path, artifact_v2: Path) -> None:
    old_rt, new_rt = load(artifact), load(artifact_v2)
    calls: list[tuple[str, int]] = []
    record_runs(old_rt, calls)
    record_runs(new_rt, calls)
    items = encode(old_rt, 3)

    async def main() -> tuple[list[Output], list[Output]]:
        engine = BatchEngine(old_rt, Metrics(), max_batch=64, max_wait_ms=30)
        await engine.start()
        before = asyncio.create_task(engine.submit(engine.model, items[:2]))
        await asyncio.sleep(0)
        assert engine.swap(new_rt) is old_rt
        assert engine.model is new_rt
        after = asyncio.create_task(engine.submit(engine.model, items[2:]))
        outs = await before, await after
        await engine.stop()
        return outs

    before, after = asyncio.run(main())
    # queued together, but never mixed in one batch: each ran on the runtime that encoded it
    assert calls == [("v1", 2), ("v2", 1)]
    assert len(before) == 2 and len(after) == 1
    ref = old_rt.forward(items)  # same weights in both artifacts: the same probabilities
    np.testing.assert_allclose(
        np.stack([o.probs for o in before + after]), np.stack([o.probs for o in ref]), atol=1e-5
    )


def test_a_heavy_request_runs_in_slices_and_lets_light_ones_pass(artifact: Path) -> None:
    """A job bigger than max_batch gives one slice per call and goes to the back of the
    queue: a light request queued behind it is answered after one slice, not after all."""
    rt = load(artifact)
    calls: list[tuple[str, int]] = []
    record_runs(rt, calls)
    big, small = encode(rt, 10), encode(rt, 1)
    done: list[str] = []

    async def main() -> tuple[list[Output], list[Output]]:
        engine = BatchEngine(rt, Metrics(), max_batch=4)
        await engine.start()

        async def ask(name: str, items: list[Encoded]) -> list[Output]:
            out = await engine.submit(rt, items)
            done.append(name)
            return out

        heavy = asyncio.create_task(ask("big", big))
        light = asyncio.create_task(ask("small", small))
        outs = await heavy, await light
        assert engine.pending == 0
        await engine.stop()
        return outs

    heavy, light = asyncio.run(main())
    assert [n for _, n in calls] == [4, 1, 4, 2]
    assert done == ["small", "big"]
    ref = rt.forward(big + small)  # slicing changes nothing in the answers
    got = np.stack([o.probs for o in heavy + light])
    np.testing.assert_allclose(got, np.stack([o.probs for o in ref]), atol=1e-5)
    assert [o.tokens for o in heavy] == [o.tokens for o in ref[:10]]


def test_heavy_requests_leave_room_for_light_ones(artifact: Path) -> None:
    """Requests over one batch fill the queue only up to heavy_limit: several of them are
    admitted at once, a further one waits (503), a light one still gets in, and one that
    could never fit is over a limit (413), not told to retry."""
    rt = load(artifact)
    heavy, light = encode(rt, 6), encode(rt, 1)  # heavy: more than one batch of 2

    async def main() -> None:
        engine = BatchEngine(rt, Metrics(), max_batch=2, max_queue=16)
        assert engine.heavy_limit == 12  # a quarter (4 aspects) kept for light requests
        await engine.start()
        first = [asyncio.create_task(engine.submit(rt, heavy)) for _ in range(2)]
        await asyncio.sleep(0)
        assert engine.pending == 12
        with pytest.raises(QueueFull):
            engine.admit(len(heavy))
        engine.admit(len(light))  # a light request is still let in ...
        assert len(await engine.submit(rt, light)) == 1  # ... and answered
        with pytest.raises(LimitError, match="queues at most 12"):
            engine.admit(13)
        assert [len(await t) for t in first] == [6, 6]
        await engine.stop()

    asyncio.run(main())


def test_a_light_request_larger_than_a_small_queue_is_over_a_limit(artifact: Path) -> None:
    """max_queue under max_batch: a request of one batch or less that is still more than
    the whole queue could never be admitted, so it is 413 (LimitError), not a 503 that
    would be retried for ever with the queue empty."""
    rt = load(artifact)

    async def main() -> None:
        engine = BatchEngine(rt, Metrics(), max_batch=64, max_queue=4)
        await engine.start()
        with pytest.raises(LimitError, match="queues at most 4"):
            engine.admit(5)
        engine.admit(4)  # the whole queue is still fine
        await engine.stop()

    asyncio.run(main())


def test_a_batcher_that_dies_fails_its_requests_and_refuses_more(artifact: Path) -> None:
    """A bug that ends the batcher's task (here: a model call that returns no outputs) left
    every queued request waiting for ever and the worker looking healthy."""
    rt = load(artifact)
    items = encode(rt, 3)
    rt.forward = lambda items, explain=False: None  # type: ignore[method-assign,assignment,return-value]

    told: list[BaseException] = []  # the app's hook: it stops the worker (test_worker_failure)

    async def main() -> tuple[list[BaseException | list[Output]], BatchEngine]:
        engine = BatchEngine(rt, Metrics(), max_batch=2, max_wait_ms=20, on_failure=told.append)
        await engine.start()
        tasks = [asyncio.create_task(engine.submit(rt, [it])) for it in items]
        done = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
        with pytest.raises(ShuttingDown):
            await engine.submit(rt, items[:1])
        await engine.stop()  # does not raise the batcher's error again
        return done, engine

    done, engine = asyncio.run(main())
    assert all(isinstance(d, ShuttingDown) for d in done), done
    assert isinstance(engine.failed, TypeError) and engine.pending == 0
    assert told == [engine.failed]  # once, after the jobs were failed


def test_a_worker_whose_batcher_died_fails_its_liveness_probe(artifact: Path) -> None:
    from fastapi.testclient import TestClient

    from absa.service.app import create_app
    from tests.service.conftest import make_settings

    with TestClient(create_app(make_settings(artifact))) as c:
        request = {"text": "the food was great", "aspects": ["food"]}
        assert c.post("/v1/predict", json=request).status_code == 200
        assert c.get("/healthz").status_code == 200 and c.get("/readyz").status_code == 200
        engine = c.app.state.engine  # type: ignore[attr-defined]
        engine.model.forward = lambda items, explain=False: None
        r = c.post("/v1/predict", json=request)
        assert r.status_code == 503 and r.headers["Retry-After"], r.text
        health = c.get("/healthz")
        assert health.status_code == 503 and "batcher stopped" in health.json()["detail"]
        assert c.get("/readyz").status_code == 503
        assert c.post("/v1/predict", json=request).status_code == 503  # refused at once


def test_the_limit_a_refusal_names_is_the_most_one_request_may_queue(artifact: Path) -> None:
    """ABSA_MAX_QUEUE=100, batches of 64: a 65-aspect request was told "queues at most 36"
    (the heavy requests' share), while a request of 64 was taken: the most one request may
    queue is 64 (``request_limit``, what /v1/model says)."""
    rt = load(artifact)
    engine = BatchEngine(rt, Metrics(), max_batch=64, max_queue=100)
    assert engine.request_limit == 64
    with pytest.raises(LimitError, match="queues at most 64 for one request"):
        engine.fits(65)
    engine.fits(64)
