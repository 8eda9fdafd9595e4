"""POST /v1/predict and /v1/predict/batch: preprocess and postprocess with the served
``Predictor``; its forward pass goes through the micro-batcher.

Capacity is checked before any work (``engine.admit``). Heavy requests (explain, or many
aspects) are encoded and answered in the engine's one thread for such work
(``engine.offload``) so the event loop stays free for other requests and for /healthz;
light ones stay on the loop, where a thread hop would cost more than the work. The answer
is serialized here, once (no response-model round trip).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from absa.errors import InputError, LimitError
from absa.model.category_predictor import CategoryPredictor
from absa.model.predictor import RuntimeModel
from absa.service.deps import (
    CategoryModelDep,
    EngineDep,
    MetricsDep,
    SettingsDep,
    get_category_model,
)
from absa.service.errors import error_body, status_of, validation_body
from absa.service.metrics import Metrics
from absa.service.schemas import (
    BATCH_FIELDS,
    MAX_UNKNOWN,
    BatchRequest,
    BatchResponse,
    ErrorResponse,
    InvalidItem,
    PredictRequest,
    PredictResponse,
    too_many_unknown,
    unknown_fields,
)
from absa.service.shadow_slot import shadow_now
from absa.service.twice import Twice, marked_json, refuse_twice, twice_said

ERRORS: dict[int | str, dict] = {
    408: {
        "model": ErrorResponse,
        "description": "the body did not all arrive within ABSA_CLIENT_TIMEOUT_S of the headers",
    },
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
    500: {"model": ErrorResponse, "description": "a server error (its X-Request-ID is logged)"},
}

#: aspects in a request above which its encoding and answer are built off the event loop
HEAVY_ASPECTS = 8
#: characters of text in a request above which it is encoded off the event loop too:
#: tokenising costs 0.25 us a character of English, 1.3 of Hindi or emoji and up to 4.5 of
#: decomposed accents (a token a character), so at most some 9 ms of the loop's time a request
HEAVY_CHARS = 2000


class JSONBytes(Response):
    media_type = "application/json"


def _dumps(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _heavy(reqs: list[PredictRequest]) -> bool:
    """Work for the engine's thread, not the event loop: explanations, many aspects, long
    texts, and any extraction (an onnxruntime call: 80 ms for a 2,000-character text, which
    held /healthz for seconds under a few clients)."""
    return (
        any(r.explain or r.extracts for r in reqs)
        or sum(r.n_aspects for r in reqs) > HEAVY_ASPECTS
        or sum(len(r.text) for r in reqs) > HEAVY_CHARS
    )


def _model(
    req: PredictRequest, terms: RuntimeModel, category: CategoryPredictor | None, where: str = ""
) -> RuntimeModel:
    """The model that answers ``req``: ``terms``, or for categories the category model
    (InputError where the service has none)."""
    if req.categories is None:
        return terms
    if category is None:
        raise _no_category_model(where)
    return category


def _no_category_model(where: str = "") -> InputError:
    return InputError(
        f"{where}this service has no aspect-category model: ask with aspects, or start it "
        "with ABSA_CATEGORY_MODEL=DIR"
    )


def _asked(req: PredictRequest) -> Any:
    """The categories, or the aspects (None or "auto": to be extracted)."""
    return req.categories if req.categories is not None else req.aspects


def _preprocess(model: Any, req: PredictRequest, metrics: Metrics, where: str = "") -> Any:
    """``model.preprocess`` of ``req``; a request whose aspects are extracted is timed into
    ``absa_extraction_seconds``, refused or not, where an extractor runs, and counted by
    what came of it (``absa_extractions_total{outcome}``: found, none or refused)."""
    if not req.extracts or getattr(model, "extractor", None) is None:
        return model.preprocess(req.text, _asked(req), req.explain, where)
    start, outcome = time.perf_counter(), "refused"
    try:
        prepared = model.preprocess(req.text, _asked(req), req.explain, where)
        outcome = "found" if prepared.items else "none"
        return prepared
    finally:
        metrics.extraction.observe(time.perf_counter() - start)
        metrics.extractions.labels(outcome).inc()


def _sample(
    request: Request, answered: list[tuple[str, str, list[dict]]], terms: RuntimeModel
) -> None:
    """A request's answers, (text, model, results) a text, offered to the answer samples
    (ABSA_SAMPLE_PATH), each keeping its kind's, and to the shadow model (ABSA_SHADOW_MODEL),
    with the digest of ``terms``, the term model that answered."""
    request_id = getattr(request.state, "request_id", "-")
    for sample in request.app.state.samples:
        sample.offer(answered, request_id)
    shadow = shadow_now(request.app)
    if shadow is not None:
        shadow.offer(answered, terms.runtime.digest, request_id)


def _count(results: list[dict], model_id: str, metrics: Metrics) -> None:
    """One model's answers (``model_id``, as they name it), by label."""
    for r in results:
        if "term" in r:  # the term model's: a category model's answers are another model's
            metrics.aspects.labels(r["label"], model_id).inc()
            metrics.confidence.labels(r["label"], model_id).observe(r["score"])
        else:
            metrics.categories.labels(r["label"], model_id).inc()


def _count_words(outputs: list[Any], metrics: Metrics) -> None:
    """The words of one text the term model answered (its first aspect's: every aspect's
    item holds the same words), known to its vocabulary or not."""
    if outputs:
        unknown = sum(outputs[0].oov)
        metrics.words.labels("false").inc(unknown)
        metrics.words.labels("true").inc(len(outputs[0].oov) - unknown)


def _explained(prepared: Any, budget: tuple[int, int], where: str = "") -> tuple[int, int]:
    """The explain budget (aspects explained so far in this request, the limit) after
    ``prepared``; LimitError past it."""
    if not prepared.explain:
        return budget
    used, limit = budget[0] + len(prepared.items), budget[1]
    if used > limit:
        raise LimitError(
            f"{where}too many aspects with explain ({used} in this request, each occurrence "
            f"counted; the limit is {limit}, the max_explain_aspects setting): ask for "
            "explain on fewer aspects"
        )
    return used, limit


def _results(predictor: RuntimeModel, prepared: Any, outputs: list) -> list[dict]:
    out = []
    for p in predictor.postprocess(prepared, outputs):
        d = p.to_dict()
        d.setdefault("attention", None)  # the documented shape: present, null without explain
        if "term" in d:
            d.setdefault("self_attention", None)
        out.append(d)
    return out


def _listed(item: object) -> int:
    """How many aspects (or categories) a raw request item lists: 0 where it lists none."""
    if not isinstance(item, dict):
        return 0
    lists = (item.get("aspects"), item.get("categories"))
    return sum(len(asked) for asked in lists if isinstance(asked, list))


def _over_max_aspects(item: object, limit: int) -> str | None:
    """Why a raw request item lists more aspects (or categories) than one text may have, as
    the model says it once validated; None where it does not."""
    if not isinstance(item, dict):
        return None
    aspects, categories = item.get("aspects"), item.get("categories")
    if isinstance(aspects, list) and len(aspects) > limit:
        return f"too many aspects ({len(aspects)} listed; the limit is {limit})"
    if isinstance(categories, list) and len(categories) > limit:
        return f"too many categories ({len(categories)}; the limit is {limit})"
    return None


async def _lists_fit(request: Request, batch: bool) -> None:
    """Before the body is validated: too many batch items, or more aspects than any one
    request may queue, are refused (413, as they would be once validated), and so are more
    than ``MAX_UNKNOWN`` unknown fields (422). Validating and reporting a megabyte of bad
    entries one by one held the event loop for seconds (18 s for 400,000). Reads the body
    as FastAPI parsed it (Starlette keeps it)."""
    engine = getattr(request.app.state, "engine", None)
    if engine is None:
        return  # the route says the model is not loaded
    found: list[Twice] = []
    try:
        body = await marked_json(request, found)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return  # FastAPI's parsing says what is wrong
    if found:
        refuse_twice(body, batch)
    settings = request.app.state.settings
    limit = settings.max_aspects
    if not batch:
        asked = body.get("categories") if isinstance(body, dict) else None
        alone = isinstance(asked, list) and body.get("aspects") is None  # else: validation's
        if alone and await get_category_model(request) is None:
            raise _no_category_model()  # not "too many categories": none would be answered
        over = _over_max_aspects(body, limit)
        if over is not None:  # named before the queue's limit, which a list that long is
            raise LimitError(over)  # over too ("split it" would not help)
        engine.fits(_listed(body))
        _few_unknown(body)
        return
    items = body.get("items") if isinstance(body, dict) else None
    if isinstance(items, list):
        if len(items) > settings.max_items:
            raise LimitError(f"{len(items)} items; the limit is {settings.max_items}")
        try:
            engine.fits(sum(_listed(it) for it in items))
        except LimitError:  # more than the queue holds: refused whole, its lists unread
            whys = [_over_max_aspects(it, limit) for it in items]
            # the items within max_aspects over the queue alone: its own refusal, since
            # mending the items over max_aspects would not make the batch fit
            within = (it for it, why in zip(items, whys, strict=True) if why is None)
            engine.fits(sum(_listed(it) for it in within))
            for i, why in enumerate(whys):  # else the first item over max_aspects is why
                if why is not None:
                    raise LimitError(f"items[{i}]: {why}") from None
            raise
    # its own fields, whatever its items (missing, or no list: validated one by one, slowly);
    # its items' each alone, as they are validated
    _few_unknown(body, BATCH_FIELDS)


def _few_unknown(obj: object, known: frozenset[str] | None = None) -> None:
    """InputError (422) where a request body (``known``: its fields; default a
    ``PredictRequest``'s) holds more than ``MAX_UNKNOWN`` unknown fields, its aspect objects
    counted with it; fewer are left to validation, which names each. Called after ``fits``:
    the aspects are few. A batch's items are counted one by one as they are validated."""
    unknown, first = unknown_fields(obj, known)
    if unknown > MAX_UNKNOWN:
        raise InputError(too_many_unknown("body.", unknown, first))


class _ListsFirst(APIRoute):
    """The predict routes: ``_lists_fit`` before FastAPI validates the body. A route class,
    not a dependency: as a dependency the checks added 19.6 us to every request, as this
    6.0 (benchmarks/route_check_overhead.py, in-process, the machine busy)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        validated = super().get_route_handler()
        batch = self.path.endswith("/batch")

        async def handler(request: Request) -> Response:
            await _lists_fit(request, batch)
            return await validated(request)

        return handler


router = APIRouter(prefix="/v1", tags=["predict"], route_class=_ListsFirst)

#: whole requests for /docs: Swagger UI's "Try it out" otherwise builds one from every field,
#: categories beside aspects, which the service refuses (aspects or categories, not both)
EXAMPLES = {
    "terms": {
        "summary": "aspect terms",
        "value": {
            "text": "The fries were soggy but the burger was great",
            "aspects": ["burger", "fries"],
        },
    },
    "explain": {
        "summary": "a span, with attention",
        "value": {
            "text": "The fries were soggy but the burger was great",
            "aspects": [{"term": "fries", "start": 4, "end": 9}],
            "explain": True,
        },
    },
}


def _queued(req: PredictRequest, settings: Any) -> int:
    """The aspects ``req`` may queue: more than ``max_aspects`` are refused (413, that limit
    named) before any is queued, so they are not counted against the queue's room, whose
    refusal ("split it") would name the wrong limit, and in a batch refuse every item."""
    return req.n_aspects if req.n_aspects <= settings.max_aspects else 0


@contextmanager
def _inference(
    request: Request, model_id: str, n: int, **more: object
) -> Iterator[list[dict[str, Any]]]:
    """The request's span annotated (its model, aspects and ``more``), and a child span
    ``absa.inference`` around the block: the wait for the aspects' batches and their run.
    The block fills the list it is given with the engine's timings (``submit``'s), which go
    on the span: ``absa.queue_wait_ms`` (the longest a job waited for its first batch),
    ``absa.model_ms`` (the model calls its aspects were in) and ``absa.batch_sizes``."""
    tracing = request.app.state.tracing
    tracing.annotate(**{"absa.model": model_id, "absa.aspects": n, **more})
    timings: list[dict[str, Any]] = []
    with tracing.span("absa.inference", **{"absa.aspects": n}) as span:
        yield timings
        if span is not None and timings:
            span.set_attributes(
                {
                    "absa.queue_wait_ms": max(t["queue_wait_s"] for t in timings) * 1000,
                    "absa.model_ms": sum(t["model_s"] for t in timings) * 1000,
                    "absa.batch_sizes": [b for t in timings for b in t["batches"]],
                }
            )


def _preparing(request: Request, extracts: bool) -> AbstractContextManager[Any]:
    """A child span ``absa.preprocess`` of the request's: its texts read and encoded, and
    its aspects found where none were given (``absa.extracts``; where the work runs on the
    engine's thread, a span there would have no parent: it is timed from here)."""
    return request.app.state.tracing.span("absa.preprocess", **{"absa.extracts": extracts})


@router.post("/predict", response_model=PredictResponse, responses=ERRORS)
async def predict(
    request: Request,
    req: Annotated[PredictRequest, Body(openapi_examples=EXAMPLES)],
    engine: EngineDep,
    category: CategoryModelDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> Response:
    """Sentiment of each aspect in the text (or of each category, with ``categories``), with
    probabilities (and attention with explain)."""
    # one model for the whole request, even across a hot reload
    predictor: Any = _model(req, engine.model, category)
    # before any work: an overloaded server refuses at once
    engine.admit(_queued(req, settings))
    heavy = _heavy([req])

    def prepare() -> Any:
        p = _preprocess(predictor, req, metrics)
        _explained(p, (0, settings.max_explain_aspects))
        return p

    with _preparing(request, req.extracts):
        prepared = await engine.offload(prepare) if heavy else prepare()
    with _inference(request, predictor.model_id, len(prepared.items)) as timings:
        outputs = await engine.submit(predictor, prepared.items, req.explain, timings)

    def answer() -> tuple[list[dict], bytes]:
        results = _results(predictor, prepared, outputs)
        return results, _dumps({"model": predictor.model_id, "results": results})

    results, body = await engine.offload(answer) if heavy else answer()
    _count(results, predictor.model_id, metrics)
    if req.categories is None:  # the term model's words
        _count_words(outputs, metrics)
    _sample(request, [(req.text, predictor.model_id, results)], predictor)
    return JSONBytes(body)


@router.post("/predict/batch", response_model=BatchResponse, responses=ERRORS)
async def predict_batch(
    request: Request,
    req: BatchRequest,
    engine: EngineDep,
    category: CategoryModelDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> Response:
    """Several texts at once; the answer keeps the order of ``items``. An item that cannot be
    answered gets ``{"error": {"status", "detail"}}`` in its place; the others are answered.
    Items with ``categories`` go to the category model, the others to the term model."""
    # over max_items: refused by _ListsFirst before validation
    terms = engine.model
    valid = [it for it in req.items if isinstance(it, PredictRequest)]
    engine.admit(sum(_queued(it, settings) for it in valid))

    def prepare() -> list[tuple[RuntimeModel, Any] | dict]:
        out: list[tuple[RuntimeModel, Any] | dict] = []
        budget = (0, settings.max_explain_aspects)
        for i, it in enumerate(req.items):
            if isinstance(it, InvalidItem):
                if it.twice:
                    said = error_body(f"items[{i}]: {twice_said(it.twice)}")
                elif it.error is None:  # too many unknown fields: counted, not validated
                    said = error_body(too_many_unknown(f"body.items.{i}.", *it.unknown))
                else:
                    said = validation_body(it.error, ("body", "items", i))
                out.append({"error": {"status": 422, **said}})
                continue
            where = f"items[{i}]: "
            try:
                model: Any = _model(it, terms, category, where)
                p = _preprocess(model, it, metrics, where)
                budget = _explained(p, budget, where)
            except InputError as e:
                out.append({"error": {"status": status_of(e), **error_body(str(e))}})
                continue
            out.append((model, p))
        return out

    heavy = _heavy(valid)
    with _preparing(request, any(it.extracts for it in valid)):
        prepared = await engine.offload(prepare) if heavy else prepare()
    models = list(dict.fromkeys(e[0] for e in prepared if isinstance(e, tuple)))
    jobs = [
        [it for e in prepared if isinstance(e, tuple) and e[0] is m for it in e[1].items]
        for m in models
    ]
    explains = [
        any(isinstance(e, tuple) and e[0] is m and e[1].explain for e in prepared) for m in models
    ]
    n = sum(len(job) for job in jobs)
    with _inference(request, terms.model_id, n, **{"absa.items": len(req.items)}) as timings:
        done = await engine.submit_all(list(zip(models, jobs, explains, strict=True)), timings)
    outputs = {id(m): iter(o) for m, o in zip(models, done, strict=True)}

    answered: list[tuple[str, str, list[dict]]] = []  # for the answer sample

    def answer() -> bytes:
        entries: list[dict[str, Any]] = []
        for it, e in zip(req.items, prepared, strict=True):
            if not isinstance(e, tuple):
                entries.append(e)
                metrics.item_errors.labels(str(e["error"]["status"])).inc()
                continue
            model, p = e
            out = outputs[id(model)]
            got = [next(out) for _ in p.items]
            results = _results(model, p, got)
            if model is terms:
                _count_words(got, metrics)
            entries.append({"model": model.model_id, "results": results})
            answered.append((getattr(it, "text", ""), model.model_id, results))
        return _dumps({"model": terms.model_id, "items": entries})

    body = await engine.offload(answer) if heavy else answer()
    for _, model_id, results in answered:
        _count(results, model_id, metrics)
    _sample(request, answered, terms)
    return JSONBytes(body)
