"""POST /v1/predict and /v1/predict/batch."""

from __future__ import annotations

from fastapi import APIRouter

from model.runtime import Output, Runtime
from model.text import Encoded
from service.deps import EngineDep, MetricsDep, SettingsDep
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


Prepared = tuple[list[tuple[str, int, int]], list[Encoded]]


def _prepare(
    req: PredictRequest, settings: Settings, runtime: Runtime, where: str = ""
) -> Prepared:
    """Validate a request and encode its aspects: (spans, encoded items)."""
    spans = resolve_spans(req, settings, where)
    return spans, encode_spans(runtime, req.text, spans, where)


def _response(
    req: PredictRequest,
    prepared: Prepared,
    outputs: list[Output],
    runtime: Runtime,
    metrics: Metrics,
) -> PredictResponse:
    spans, _ = prepared
    results = [to_result(runtime, sp, o, req.explain) for sp, o in zip(spans, outputs, strict=True)]
    for r in results:
        metrics.aspects.labels(r.label).inc()
    return PredictResponse(model=model_id(runtime), results=results)


@router.post("/predict", response_model=PredictResponse, responses=ERRORS)
async def predict(
    req: PredictRequest, engine: EngineDep, settings: SettingsDep, metrics: MetricsDep
) -> PredictResponse:
    """Sentiment of each aspect in the text, with probabilities (and attention with explain)."""
    runtime = engine.runtime
    prepared = _prepare(req, settings, runtime)
    outputs = await engine.submit(runtime, prepared[1])
    return _response(req, prepared, outputs, runtime, metrics)


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
    # every item is validated before any is queued; then they go as one job
    prepared = [_prepare(it, settings, runtime, f"items[{i}]: ") for i, it in enumerate(req.items)]
    outputs = await engine.submit(runtime, [e for _, items in prepared for e in items])
    answers, k = [], 0
    for item, prep in zip(req.items, prepared, strict=True):
        n = len(prep[1])
        answers.append(_response(item, prep, outputs[k : k + n], runtime, metrics))
        k += n
    return BatchResponse(model=model_id(runtime), items=answers)
