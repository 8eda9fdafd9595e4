"""POST /v1/predict and /v1/predict/batch: preprocess and postprocess with the served
``Predictor``; its forward pass goes through the micro-batcher."""

from __future__ import annotations

from fastapi import APIRouter

from absa.errors import InputError, LimitError
from absa.model.predictor import AspectPrediction, Predictor, Prepared
from absa.service.deps import EngineDep, MetricsDep, SettingsDep
from absa.service.metrics import Metrics
from absa.service.schemas import (
    BatchRequest,
    BatchResponse,
    ErrorResponse,
    PredictRequest,
    PredictResponse,
)

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


def _prepare(predictor: Predictor, req: PredictRequest, where: str = "") -> Prepared:
    return predictor.preprocess(req.text, req.aspects, req.explain, where)


def _response(
    predictor: Predictor, results: list[AspectPrediction], metrics: Metrics
) -> PredictResponse:
    for r in results:
        metrics.aspects.labels(r.label).inc()
    return PredictResponse(model=predictor.model_id, results=[r.to_dict() for r in results])


@router.post("/predict", response_model=PredictResponse, responses=ERRORS)
async def predict(req: PredictRequest, engine: EngineDep, metrics: MetricsDep) -> PredictResponse:
    """Sentiment of each aspect in the text, with probabilities (and attention with explain)."""
    predictor = engine.model  # one model for the whole request, even across a hot reload
    prepared = _prepare(predictor, req)
    outputs = await engine.submit(predictor, prepared.items)
    return _response(predictor, predictor.postprocess(prepared, outputs), metrics)


@router.post("/predict/batch", response_model=BatchResponse, responses=ERRORS)
async def predict_batch(
    req: BatchRequest, engine: EngineDep, settings: SettingsDep, metrics: MetricsDep
) -> BatchResponse:
    """Several texts at once; the answer keeps the order of ``items``."""
    if not req.items:
        raise InputError("items is empty")
    if len(req.items) > settings.max_items:
        raise LimitError(f"{len(req.items)} items; the limit is {settings.max_items}")
    predictor = engine.model
    # every item is validated before any is queued; then they go as one job
    prepared = [_prepare(predictor, it, f"items[{i}]: ") for i, it in enumerate(req.items)]
    outputs = await engine.submit(predictor, [e for p in prepared for e in p.items])
    answers, k = [], 0
    for p in prepared:
        n = len(p.items)
        answers.append(_response(predictor, predictor.postprocess(p, outputs[k : k + n]), metrics))
        k += n
    return BatchResponse(model=predictor.model_id, items=answers)
