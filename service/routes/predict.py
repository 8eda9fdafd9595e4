"""POST /v1/predict and /v1/predict/batch."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from model.runtime import Runtime
from service.deps import EngineDep, MetricsDep, SettingsDep
from service.engine import BatchEngine
from service.metrics import Metrics
from service.predictor import RequestError, encode_spans, resolve_spans, to_result
from service.schemas import (
    BatchRequest,
    BatchResponse,
    ErrorResponse,
    PredictRequest,
    PredictResponse,
)
from service.settings import Settings

router = APIRouter(prefix="/v1", tags=["predict"])

ERRORS: dict[int | str, dict] = {
    400: {"model": ErrorResponse, "description": "the body could not be read (e.g. not UTF-8)"},
    413: {"model": ErrorResponse, "description": "body, text, aspects or items over their limits"},
    422: {
        "model": ErrorResponse,
        "description": "invalid: empty text, aspect not in the text, ...",
    },
    503: {"model": ErrorResponse, "description": "queue full (see Retry-After) or shutting down"},
}


def model_id(runtime: Runtime) -> str:
    return f"{runtime.metadata.get('name')}:{runtime.metadata.get('version')}"


async def _predict(
    req: PredictRequest,
    engine: BatchEngine,
    settings: Settings,
    metrics: Metrics,
    runtime: Runtime,
    where: str = "",
) -> PredictResponse:
    spans = resolve_spans(req, settings, where)
    items = encode_spans(runtime, req.text, spans, where)
    outputs = await engine.submit(runtime, items)
    results = [to_result(runtime, sp, o, req.explain) for sp, o in zip(spans, outputs, strict=True)]
    for r in results:
        metrics.aspects.labels(r.label).inc()
    return PredictResponse(model=model_id(runtime), results=results)


@router.post("/predict", response_model=PredictResponse, responses=ERRORS)
async def predict(
    req: PredictRequest, engine: EngineDep, settings: SettingsDep, metrics: MetricsDep
) -> PredictResponse:
    """Sentiment of each aspect in the text, with probabilities (and attention with explain)."""
    return await _predict(req, engine, settings, metrics, engine.runtime)


@router.post("/predict/batch", response_model=BatchResponse, responses=ERRORS)
async def predict_batch(
    req: BatchRequest, engine: EngineDep, settings: SettingsDep, metrics: MetricsDep
) -> BatchResponse:
    """Several texts at once; the answer keeps the order of ``items``."""
    if not req.items:
        raise RequestError(422, "items is empty")
    if len(req.items) > settings.max_items:
        raise RequestError(413, f"{len(req.items)} items; the limit is {settings.max_items}")
    runtime = engine.runtime  # one model for the whole batch
    # validate every item before queueing any
    for i, item in enumerate(req.items):
        resolve_spans(item, settings, f"items[{i}]: ")
    answers = await asyncio.gather(
        *(
            _predict(item, engine, settings, metrics, runtime, f"items[{i}]: ")
            for i, item in enumerate(req.items)
        )
    )
    return BatchResponse(model=model_id(runtime), items=list(answers))
