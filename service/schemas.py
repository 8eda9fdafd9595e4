"""Request and response bodies of the HTTP API.

Types are strict: ``"explain": "yes"`` or ``0`` and ``"start": 4.0`` are refused (422), not
coerced. What the service refuses anyway is in the schema too (``minLength``, ``minItems``,
``maxLength`` of an aspect), so generated clients and the docs say it.

Errors: every 4xx/5xx body is an ``ErrorResponse``: ``{"detail": str, "errors": [...]?}``.
``detail`` is one sentence for people; ``errors`` (only for a body that does not fit the
schema) has one ``{loc, msg, type}`` per problem.

``/v1/predict/batch`` answers per item, in the order of ``items``: an item that could be
answered is a ``PredictResponse`` (``{"model", "results"}``); an item that could not is
``{"error": {"status", "detail", "errors"?}}`` with the status the item alone would have got
from ``/v1/predict`` (422 invalid, 413 over a limit). The other items are answered. A body
that is not valid at all (not JSON, ``items`` not a list or empty, over ``max_items``), an
overload (503) or a shutdown still fails the whole request.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

# the longest aspect term accepted (characters): a longer one is refused before any work
from absa.model.aspects import MAX_TERM_CHARS
from absa.service.twice import Twice


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


Term = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TERM_CHARS)]


Category = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TERM_CHARS)]


class AspectSpan(Strict):
    term: Term = Field(description="the aspect as written in the text")
    start: StrictInt = Field(ge=0, description="character offset where the term starts")
    end: StrictInt = Field(ge=1, description="character offset just past the term")


#: both given, neither null: what ``_aspects_or_categories`` refuses (one given as null is
#: taken, as a generated client that writes every field out sends it)
BOTH_GIVEN: dict[str, Any] = {
    "required": ["aspects", "categories"],
    "properties": {k: {"not": {"type": "null"}} for k in ("aspects", "categories")},
}


class PredictRequest(Strict):
    # what _aspects_or_categories refuses, said in the JSON schema (generated clients, fuzzers)
    model_config = ConfigDict(json_schema_extra={"not": BOTH_GIVEN})

    text: StrictStr = Field(
        min_length=1,
        description="the sentence or review",
        examples=["The fries were soggy but the burger was great"],
    )
    aspects: Annotated[list[Term | AspectSpan], Field(min_length=1)] | Literal["auto"] | None = (
        Field(
            None,
            description=(
                "aspect terms: a string is looked up in the text (case-insensitive, any "
                "whitespace between its words, whole words first) and EVERY occurrence gets "
                "a result with its own span; an object pins "
                'one span. Left out (or "auto"), with no categories: the service\'s aspect '
                "extractor finds them (refused with 422 where the service has none). Give "
                "aspects or categories, not both"
            ),
            examples=[["burger", "fries"]],
        )
    )
    categories: list[Category] | None = Field(
        None,
        min_length=1,
        description="aspect categories (the category model's, see /v1/model, in any case): "
        "one result per category, each once; needs a category model (ABSA_CATEGORY_MODEL), e.g. "
        '["food", "service"]',
    )
    explain: StrictBool = Field(
        False, description="also return the attention weights over the words"
    )

    @field_validator("aspects", mode="before")
    @classmethod
    def _some_aspects(cls, value: object) -> object:
        if isinstance(value, list) and not value:  # one issue, not one per member of the union
            raise ValueError(
                'an empty list asks for nothing: give at least one aspect, or leave "aspects" '
                'out (or "auto") for the extractor to find them'
            )
        return value

    @model_validator(mode="after")
    def _aspects_or_categories(self) -> PredictRequest:
        if self.aspects is not None and self.categories is not None:
            raise ValueError("give either aspects (terms in the text) or categories, not both")
        return self

    @property
    def n_aspects(self) -> int:
        """Items the request asks the model for (before repeated terms are expanded; one for
        a request whose aspects are to be extracted)."""
        asked = self.categories if self.categories is not None else self.aspects
        return len(asked) if isinstance(asked, list) else 1

    @property
    def extracts(self) -> bool:
        """The aspects are to be found by the extractor (none given, or "auto")."""
        return self.categories is None and not isinstance(self.aspects, list)


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """Every 4xx/5xx body."""

    detail: str = Field(description="what is wrong, in one sentence")
    errors: list[ValidationIssue] | None = Field(
        None, description="for a body that does not fit the schema: one entry per problem"
    )


#: unknown fields one request, or one batch item, may carry before it is refused unvalidated:
#: each is an error of its own, and 75,000 in a megabyte took 0.3 s to report (0.6 s inside
#: an aspect object)
MAX_UNKNOWN = 64


def unknown_fields(obj: object, known: frozenset[str] | None = None) -> tuple[int, str]:
    """How many unknown fields a request object (``known``: its fields; default a
    ``PredictRequest``'s, whose aspect objects are counted with it) holds, and the first
    one's location relative to it ("k0", "aspects.0.k0")."""
    if not isinstance(obj, dict):
        return 0, ""
    objects = [(obj, _REQUEST_FIELDS if known is None else known, "")]
    aspects = obj.get("aspects") if known is None else None
    if isinstance(aspects, list):
        objects += [
            (a, _SPAN_FIELDS, f"aspects.{j}.") for j, a in enumerate(aspects) if isinstance(a, dict)
        ]
    unknown, first = 0, ""
    for o, fields, at in objects:
        extra = o.keys() - fields
        if extra and not first:
            first = f"{at}{min(extra)}"
        unknown += len(extra)
    return unknown, first


def too_many_unknown(where: str, unknown: int, first: str) -> str:
    """The refusal of a request object over ``MAX_UNKNOWN`` unknown fields (``where``: its
    location, "body." or "body.items.3.")."""
    return (
        f"invalid request: {where}{first}: Extra inputs are not permitted "
        f"(and {unknown - 1} more unknown fields)"
    )


class InvalidItem:
    """A batch item that does not fit ``PredictRequest`` (kept, answered with an error):
    its validation error, or, past ``MAX_UNKNOWN`` unknown fields, their count and the first
    (not validated: each would be an error of its own), or the key an object of it gives
    twice (``twice``)."""

    def __init__(
        self, error: ValidationError | None, unknown: tuple[int, str] = (0, ""), twice: str = ""
    ) -> None:
        self.error = error
        self.unknown = unknown
        self.twice = twice


def _item_or_invalid(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    if isinstance(value, Twice):  # which of the two values was meant, no one knows
        return InvalidItem(None, twice=value.key)
    counted = unknown_fields(value)
    if counted[0] > MAX_UNKNOWN:  # each batch item counted alone: the others are answered
        return InvalidItem(None, counted)
    try:
        return handler(value)
    except ValidationError as e:
        return InvalidItem(e)


#: a batch item: validated alone, so one bad item does not refuse the others
BatchItemRequest = Annotated[PredictRequest, WrapValidator(_item_or_invalid)]


class BatchRequest(Strict):
    items: list[BatchItemRequest] = Field(
        min_length=1, description="at most max_items (setting) items; answered in this order"
    )


_REQUEST_FIELDS = frozenset(PredictRequest.model_fields)
_SPAN_FIELDS = frozenset(AspectSpan.model_fields)
BATCH_FIELDS = frozenset(BatchRequest.model_fields)


class TokenWeight(BaseModel):
    token: str
    start: int
    end: int
    weight: float
    oov: bool = Field(False, description="the model's vocabulary does not know the word")


class Extracted(BaseModel):
    confidence: float = Field(
        description="the extractor's probability that it marks exactly the span it decoded "
        "(B, then I's, then a word that is not I; a CRF tagger sums that over every allowed "
        "tag sequence); an unpaired quote or bracket, or an emoji, at the span's edge is "
        "then left out of the term"
    )


class AspectResult(BaseModel):
    term: str
    start: int
    end: int
    label: str
    score: float = Field(description="the winning label's probability")
    scores: dict[str, float] = Field(description="every label's probability")
    attention: list[TokenWeight] | None = Field(
        None,
        description="with explain: weight per word the model read: every word, or of a text "
        "longer than its window (128 words for the shipped model; see its card) the window "
        "around the aspect",
    )
    self_attention: list[list[float]] | None = Field(
        None,
        description="with explain, for models with self-attention: per head, the weight the "
        "aspect's words give to each word",
    )
    extracted: Extracted | None = Field(
        None, description="present on an aspect the extractor found (the request named none)"
    )


class CategoryResult(BaseModel):
    category: str
    label: str
    score: float = Field(description="the winning label's probability")
    scores: dict[str, float] = Field(description="every label's probability")
    attention: list[TokenWeight] | None = Field(
        None,
        description="with explain: weight per word the model read: every word, or of a text "
        "longer than its window (see its card) the window's worth of first words",
    )


class PredictResponse(BaseModel):
    model: str
    results: list[AspectResult] | list[CategoryResult] = Field(
        description="one per aspect occurrence, or (a request with categories) per category"
    )


class ItemError(ErrorResponse):
    status: int = Field(description="the status this item alone would have got (422, 413)")


class BatchItemError(BaseModel):
    error: ItemError


class BatchResponse(BaseModel):
    model: str = Field(
        description="the term model serving the request; each answered item names the model "
        "that answered it (the category model for items with categories)"
    )
    items: list[PredictResponse | BatchItemError] = Field(
        description="one entry per request item, in order: its results, or its error"
    )


class CalibrationSet(BaseModel):
    n: int
    ece_before: float = Field(description="expected calibration error without calibration")
    ece_after: float = Field(description="expected calibration error as served")
    nll_before: float | None = None
    nll_after: float | None = None
    ece_temperature: float | None = Field(
        None, description="with a top-label map: the ECE of the temperature alone"
    )
    nll_temperature: float | None = None
    ece_floor: float | None = Field(
        None, description="the ECE a perfectly calibrated model would show on as many items"
    )


class TopMap(BaseModel):
    x: list[float] = Field(description="top probabilities after T (knots, increasing)")
    y: list[float] = Field(description="what each becomes; linear in between, flat outside")


class DomainCalibration(BaseModel):
    name: str = Field(description="the domain, e.g. laptop")
    temperature: float = Field(
        description="for requests that read as the domain, probabilities after T become "
        "softmax(log p / t)"
    )
    outside_temperature: float = Field(
        1.0, description="the same for the other requests (each fitted on its side of dev)"
    )
    dev_items: int = Field(description="the dev items that read as the domain (t fitted on them)")
    words: int = Field(description="the words the domain's classifier weighs (domain.json)")


class Calibration(BaseModel):
    method: str = Field(
        "temperature",
        description="temperature, then +domain and +top_map where the artifact has them",
    )
    temperature: float = Field(description="the graph's probabilities are softmax(logits / T)")
    domain: DomainCalibration | None = Field(
        None,
        description="a temperature of its own after T for requests whose words read as one "
        "domain (a word classifier fitted on the training sentences; no prediction changes)",
    )
    top_map: TopMap | None = Field(
        None,
        description="a map of the top probability after T, fitted on dev (the other classes "
        "keep their proportions; no prediction changes)",
    )
    bins: int = Field(description="equal-width confidence bins of the ECE")
    fitted_on: str = Field("dev", description="the data T was fitted on")
    dev: CalibrationSet | None = Field(None, description="the dev split T was fitted on")
    test: dict[str, CalibrationSet] = Field(
        default_factory=dict, description="test sets by name, never used to fit"
    )


class Limits(BaseModel):
    """What the server refuses beyond (413, with the limit named; a term or category over
    max_term_chars: 422, the schema's maxLength): the settings it runs with."""

    max_text_chars: int = Field(description="characters per text (ABSA_MAX_TEXT_CHARS)")
    max_aspects: int = Field(
        description="aspects per text, each occurrence of a repeated term counted, aspects "
        "listed (a term listed twice too), and terms the extractor may find (ABSA_MAX_ASPECTS)"
    )
    max_term_chars: int = Field(
        description="characters per aspect term or category; a longer one is invalid (422, "
        "the schema's maxLength), not 413"
    )
    max_items: int = Field(description="items per /v1/predict/batch request (ABSA_MAX_ITEMS)")
    max_explain_aspects: int = Field(
        description="aspects with explain per request, a batch's items together "
        "(ABSA_MAX_EXPLAIN_ASPECTS)"
    )
    max_body_bytes: int = Field(description="bytes per request body (ABSA_MAX_BODY_BYTES)")
    max_request_aspects: int = Field(
        description="aspects one request may queue, a batch's items together (each "
        "occurrence counted): past one onnxruntime batch (ABSA_MAX_BATCH_SIZE) a request may "
        "take only part of the queue (ABSA_MAX_QUEUE), the rest kept for small requests; "
        "more is refused (413, split it)"
    )


class Status(BaseModel):
    status: Literal["ok", "ready"] = Field(description="ok (/healthz) or ready (/readyz)")


class ShadowInfo(BaseModel):
    model: str = Field(description="its name:version, as absa_shadow_aspects names it")
    digest: str = Field(description="sha256 of its metadata, as the served model's digest")
    rate: float = Field(description="the share of requests whose term answers it scores")


class ModelInfo(BaseModel):
    name: str
    version: str
    digest: str = Field(
        description="sha256 of the artifact's metadata, which records every file's sha256: "
        "it changes whenever the model served does, even where a version name is reused"
    )
    labels: list[str]
    created: str | None
    preset: str | None
    metrics: dict = Field(
        description="the training run's: dev (its dev aspects, at the epoch it kept: the "
        "trained network, before export's vocabulary expansion and quantisation), eval (test "
        "files named at training); served_dev: the served graph's accuracy and macro-F1 on "
        "the same dev aspects as export measured them (macro_f1 null for an export that did "
        "not record it), null where export recorded neither"
    )
    calibration: Calibration | None = Field(
        None,
        description="temperature scaling and its ECE; null for an uncalibrated model (exported "
        "with --no-calibrate, or before calibration)",
    )
    providers: list[str]
    categories: list[str] | None = Field(
        None, description="the category model's categories (ABSA_CATEGORY_MODEL), if any"
    )
    category_model: str | None = Field(
        None, description="name:version of the category model (ABSA_CATEGORY_MODEL), if any"
    )
    extractor: str | None = Field(
        None, description="name:version of the aspect extractor; null: requests must name aspects"
    )
    limits: Limits | None = Field(None, description="what the server refuses beyond")
    shadow: ShadowInfo | None = Field(
        None, description="a challenger scored beside the served model (ABSA_SHADOW_MODEL)"
    )
