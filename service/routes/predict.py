"""POST /v1/predict and /v1/predict/batch: preprocess and postprocess with the served
``Predictor``; its forward pass goes through the micro-batcher.

Capacity is checked before any work (``engine.admit``). Heavy requests (explain, or many
aspects) are encoded and answered in a worker thread so the event loop stays free for
other requests and for /healthz; light ones stay on the loop, where a thread hop would cost
more than the work. The answer is serialized here, once (no response-model round trip).
"""

from __future__ import annotations

import json
from typing import Any

from anyio import to_thread
from fastapi import APIRouter
from fastapi.responses import Response

from absa.errors import InputError, LimitError
from absa.model.predictor import Predictor, Prepared
from absa.service.deps import EngineDep, MetricsDep, SettingsDep
from absa.service.errors import error_body, status_of, validation_body
from absa.service.metrics import Metrics
from absa.service.schemas import (
    BatchRequest,
    BatchResponse,
    ErrorResponse,
    InvalidItem,
    PredictRequest,
    PredictResponse,
)

router = APIRouter(prefix="/v1", tags=["predict"])

ERRORS: dict[int | str, dict] = {
    413: {"model": ErrorResponse, "description": "body, text, aspects or items over their limits"},
    415: {"model": ErrorResponse, "description": "the body is not sent as application/json"},
    422: {
        "model": ErrorResponse,
        "description": "invalid: not JSON, not the schema, aspect not in the text, ...",
    },
    503: {
        "model": ErrorResponse,
        "description": "overloaded (too many requests in flight, or queue full; see "
        "Retry-After) or shutting down",
    },
}

#: aspects in a request above which its encoding and answer are built off the event loop
HEAVY_ASPECTS = 8


class JSONBytes(Response):
    media_type = "application/json"


def _dumps(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _n_aspects(req: PredictRequest) -> int:
    """The aspects a request names (one for a request whose aspects are to be extracted)."""
    return len(req.aspects) if isinstance(req.aspects, list) else 1


def _heavy(reqs: list[PredictRequest]) -> bool:
    return any(r.explain for r in reqs) or sum(map(_n_aspects, reqs)) > HEAVY_ASPECTS


def _count(predictor: Predictor, results: list[dict], metrics: Metrics) -> None:
    for r in results:
        metrics.aspects.labels(r["label"]).inc()


def _explained(prepared: Prepared, budget: int, where: str = "") -> int:
    """What is left of the explain budget after ``prepared``; LimitError past it."""
    if not prepared.explain:
        return budget
    budget -= len(prepared.spans)
    if budget < 0:
        raise LimitError(
            f"{where}too many aspects with explain in one request (the limit is the "
            "max_explain_aspects setting): ask for explain on fewer aspects"
        )
    return budget


def _results(predictor: Predictor, prepared: Prepared, outputs: list) -> list[dict]:
    out = []
    for p in predictor.postprocess(prepared, outputs):
        d = p.to_dict()
        d.setdefault("attention", None)  # the documented shape: present, null without explain
        d.setdefault("self_attention", None)
        out.append(d)
    return out


@router.post("/predict", response_model=PredictResponse, responses=ERRORS)
async def predict(
    req: PredictRequest, engine: EngineDep, settings: SettingsDep, metrics: MetricsDep
) -> Response:
    """Sentiment of each aspect in the text, with probabilities (and attention with explain)."""
    predictor = engine.model  # one model for the whole request, even across a hot reload
    engine.admit(_n_aspects(req))  # before any work: an overloaded server refuses at once
    heavy = _heavy([req])

    def prepare() -> Prepared:
        p = predictor.preprocess(req.text, req.aspects, req.explain)
        _explained(p, settings.max_explain_aspects)
        return p

    prepared = await to_thread.run_sync(prepare) if heavy else prepare()
    outputs = await engine.submit(predictor, prepared.items)

    def answer() -> tuple[list[dict], bytes]:
        results = _results(predictor, prepared, outputs)
        return results, _dumps({"model": predictor.model_id, "results": results})

    results, body = await to_thread.run_sync(answer) if heavy else answer()
    _count(predictor, results, metrics)
    return JSONBytes(body)


@router.post("/predict/batch", response_model=BatchResponse, responses=ERRORS)
async def predict_batch(
    req: BatchRequest, engine: EngineDep, settings: SettingsDep, metrics: MetricsDep
) -> Response:
    """Several texts at once; the answer keeps the order of ``items``. An item that cannot be
    answered gets ``{"error": {"status", "detail"}}`` in its place; the others are answered."""
    if len(req.items) > settings.max_items:
        raise LimitError(f"{len(req.items)} items; the limit is {settings.max_items}")
    predictor = engine.model
    valid = [it for it in req.items if isinstance(it, PredictRequest)]
    engine.admit(sum(map(_n_aspects, valid)))

    def prepare() -> list[Prepared | dict]:
        out: list[Prepared | dict] = []
        budget = settings.max_explain_aspects
        for i, it in enumerate(req.items):
            if isinstance(it, InvalidItem):
                out.append({"error": {"status": 422, **validation_body(it.error, ("items", i))}})
                continue
            where = f"items[{i}]: "
            try:
                p = predictor.preprocess(it.text, it.aspects, it.explain, where)
                budget = _explained(p, budget, where)
            except InputError as e:
                out.append({"error": {"status": status_of(e), **error_body(str(e))}})
                continue
            out.append(p)
        return out

    heavy = _heavy(valid)
    prepared = await to_thread.run_sync(prepare) if heavy else prepare()
    ok = [p for p in prepared if isinstance(p, Prepared)]
    outputs = await engine.submit(predictor, [e for p in ok for e in p.items])

    def answer() -> tuple[list[dict], bytes]:
        entries: list[dict[str, Any]] = []
        every: list[dict] = []
        k = 0
        for p in prepared:
            if not isinstance(p, Prepared):
                entries.append(p)
                continue
            n = len(p.items)
            results = _results(predictor, p, outputs[k : k + n])
            k += n
            every += results
            entries.append({"model": predictor.model_id, "results": results})
        return every, _dumps({"model": predictor.model_id, "items": entries})

    results, body = await to_thread.run_sync(answer) if heavy else answer()
    _count(predictor, results, metrics)
    return JSONBytes(body)
