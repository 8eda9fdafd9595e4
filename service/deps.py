"""FastAPI dependencies: the engine, settings and metrics of the running app.

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency in a worker
thread, and three thread hops per request cost more than the rest of a one-aspect request
(profiled: ~10% of the worker's CPU, and the loop waits on each hop)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from absa.errors import ShuttingDown
from absa.model.category_predictor import CategoryPredictor
from absa.service.engine import BatchEngine
from absa.service.metrics import Metrics
from absa.settings import Settings


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


async def get_engine(request: Request) -> BatchEngine:
    engine = getattr(request.app.state, "engine", None)
    if engine is None:
        raise ShuttingDown("the model is not loaded")
    return engine


async def get_category_model(request: Request) -> CategoryPredictor | None:
    """The aspect-category model (``ABSA_CATEGORY_MODEL``), or None where none is served."""
    return getattr(request.app.state, "category_model", None)


SettingsDep = Annotated[Settings, Depends(get_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
EngineDep = Annotated[BatchEngine, Depends(get_engine)]
CategoryModelDep = Annotated[CategoryPredictor | None, Depends(get_category_model)]
