"""Health, readiness, model information and Prometheus metrics."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST

from absa.model.aspects import MAX_TERM_CHARS
from absa.model.card import served_dev
from absa.service.deps import CategoryModelDep, EngineDep, MetricsDep, SettingsDep
from absa.service.errors import error_response
from absa.service.schemas import ErrorResponse, Limits, ModelInfo, ShadowInfo, Status
from absa.service.shadow_slot import shadow_now

router = APIRouter(tags=["operations"])


STATIC = Path(__file__).resolve().parents[1] / "static"


#: the page loads its own script, style and icon and calls the API, nothing else: a policy
#: that allows only that keeps injected markup inert, and no other site may frame the page
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # asked again each time (a 304 by its validator): cached by heuristic, an upgrade's old
    # page and script ran against the new API for hours
    "Cache-Control": "no-cache",
}


class Revalidated(StaticFiles):
    """Static files a browser asks again for each time (``no-cache``: answered 304 while
    they are the same), as the page is: the page's script must be the service's version."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        return response


@router.head("/", include_in_schema=False)  # an uptime check of the page
@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    """The web page: type a sentence, see labels and the attention heatmap."""
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)


def batcher_stopped(request: Request) -> bool:
    """The worker's batcher ended with an error: no request can be answered any more."""
    engine = getattr(request.app.state, "engine", None)
    return engine is not None and engine.failed is not None


@router.head("/healthz", include_in_schema=False)  # load-balancer probes may use HEAD
@router.get(
    "/healthz",
    response_model=Status,
    responses={503: {"model": ErrorResponse, "description": "the batcher stopped: restart"}},
)
async def healthz(request: Request) -> Response:
    """The process is alive, and its batcher too: a worker whose batcher stopped (a bug)
    answers 503, so that its liveness probe fails and the worker is restarted."""
    if batcher_stopped(request):
        return error_response(503, "the batcher stopped (see the log): restart the worker")
    return JSONResponse({"status": "ok"})


@router.head("/readyz", include_in_schema=False)
@router.get(
    "/readyz",
    response_model=Status,
    responses={503: {"model": ErrorResponse, "description": "not loaded or warming up"}},
)
async def readyz(request: Request) -> JSONResponse:
    """The model is loaded and warmed up: traffic may come."""
    failed = batcher_stopped(request)
    if getattr(request.app.state, "ready", False) and not failed:
        return JSONResponse({"status": "ready"})
    if failed:
        return error_response(503, "not ready: the batcher stopped")
    # the one error shape, with Retry-After, as every other 503
    # a stopping worker is never asked: uvicorn stops accepting (and ends kept-alive
    # connections after their answer) before the app's shutdown, so the Deployment's preStop
    # pause is what takes a stopping pod out of the Service
    return error_response(503, "not ready: the model is loading or warming up")


@router.head("/v1/model", include_in_schema=False)
@router.get(
    "/v1/model",
    response_model=ModelInfo,
    responses={
        503: {"model": ErrorResponse, "description": "overloaded or not loaded (Retry-After)"}
    },
)
async def model_info(
    request: Request, engine: EngineDep, category: CategoryModelDep, settings: SettingsDep
) -> ModelInfo:
    """The model being served: name, version, labels, metrics, calibration, creation time,
    the limits the server enforces (and the category model's name:version and categories,
    where one is served, and the shadow model, where one answers beside it)."""
    rt = engine.model.runtime
    meta = rt.metadata
    shadow = shadow_now(request.app)
    return ModelInfo(
        name=str(meta.get("name")),
        version=str(meta.get("version")),
        digest=rt.digest,
        labels=rt.labels,
        created=meta.get("created"),
        preset=meta.get("preset"),
        metrics={**public_metrics(meta.get("metrics") or {}), "served_dev": served_dev(meta)},
        calibration=fitted_calibration(meta),
        providers=rt.providers,
        categories=None if category is None else category.categories,
        category_model=None if category is None else category.model_id,
        extractor=None if engine.model.extractor is None else engine.model.extractor.model_id,
        limits=Limits(
            max_text_chars=settings.max_text_chars,
            max_aspects=settings.max_aspects,
            max_term_chars=MAX_TERM_CHARS,
            max_items=settings.max_items,
            max_explain_aspects=settings.max_explain_aspects,
            max_body_bytes=settings.max_body_bytes,
            max_request_aspects=engine.request_limit,
        ),
        shadow=None
        if shadow is None
        else ShadowInfo(model=shadow.model_id, digest=shadow.digest, rate=shadow.rate),
    )


def fitted_calibration(metadata: dict) -> dict | None:
    """The metadata's calibration where one was fitted; None for an artifact exported with
    ``--no-calibrate`` (its record says ``fitted: false``, temperature 1) or before
    calibration existed: /v1/model's schema promises no calibration for those."""
    cal = metadata.get("calibration")
    if not isinstance(cal, dict) or cal.get("fitted") is False:
        return None
    return cal


def _short_key(key: object) -> object:
    if not isinstance(key, str) or ("/" not in key and "\\" not in key):
        return key
    parts = [
        x for x in PureWindowsPath(PurePosixPath(key).as_posix()).parts if x not in ("/", "\\")
    ]
    return "/".join(parts[-2:]) or key


def file_name(path: str) -> str:
    """The last part of a path written on any machine ("/home/x/test.xml" -> "test.xml")."""
    return PureWindowsPath(PurePosixPath(path).name).name or path


def public_metrics(metrics: dict) -> dict:
    """The metadata's metrics as the public endpoint shows them: evaluation sets (keyed by
    the data path of the machine that trained) by file name only, and every other path
    shortened (``_names_only``)."""
    out = _names_only({k: v for k, v in metrics.items() if k != "eval"})
    assert isinstance(out, dict)
    evals = metrics.get("eval")
    if isinstance(evals, dict):
        out["eval"] = {file_name(str(k)): _names_only(v) for k, v in evals.items()}
    return out


def _names_only(value: object) -> object:
    """``value`` with every "path"/"data"/"file" string reduced to its file name, and every
    key that is a path (``dev.by_source``: "../shared/data/mams/train.xml") to its folder
    and file ("mams/train.xml"): nothing of the training machine's file system."""
    if isinstance(value, dict):
        return {
            _short_key(k): file_name(v)
            if k in ("path", "data", "file") and isinstance(v, str)
            else _names_only(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_names_only(v) for v in value]
    return value


@router.head("/metrics", include_in_schema=False)
@router.get("/metrics", include_in_schema=False)
async def metrics(m: MetricsDep) -> Response:
    """Prometheus metrics: every worker's, added up, when there are several."""
    return Response(m.expose(), media_type=CONTENT_TYPE_LATEST)
