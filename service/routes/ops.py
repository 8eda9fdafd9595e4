"""Health, readiness, model information and Prometheus metrics."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from absa.service.deps import EngineDep, MetricsDep
from absa.service.schemas import ModelInfo

router = APIRouter(tags=["operations"])


STATIC = Path(__file__).resolve().parents[1] / "static"


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    """The web page: type a sentence, see labels and the attention heatmap."""
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/healthz")
async def healthz() -> dict:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "model not loaded or warming up"}})
async def readyz(request: Request) -> JSONResponse:
    """The model is loaded and warmed up: traffic may come."""
    if getattr(request.app.state, "ready", False):
        return JSONResponse({"status": "ready"})
    return JSONResponse({"status": "not ready"}, status_code=503)


@router.get("/v1/model", response_model=ModelInfo)
async def model_info(engine: EngineDep) -> ModelInfo:
    """The model being served: name, version, labels, metrics, creation time."""
    rt = engine.model.runtime
    meta = rt.metadata
    return ModelInfo(
        name=str(meta.get("name")),
        version=str(meta.get("version")),
        labels=rt.labels,
        created=meta.get("created"),
        preset=meta.get("preset"),
        metrics=meta.get("metrics", {}),
        providers=rt.providers,
    )


@router.get("/metrics", include_in_schema=False)
async def metrics(m: MetricsDep) -> Response:
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
