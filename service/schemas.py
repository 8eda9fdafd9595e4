"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AspectSpan(Strict):
    term: str = Field(description="the aspect as written in the text")
    start: int = Field(description="character offset where the term starts")
    end: int = Field(description="character offset just past the term")


class PredictRequest(Strict):
    text: str = Field(
        description="the sentence or review",
        examples=["The fries were soggy but the burger was great"],
    )
    aspects: list[str | AspectSpan] = Field(
        description=(
            "aspect terms: a string is looked up in the text (case-insensitive, whole words "
            "first) and EVERY occurrence gets a result with its own span; an object pins one span"
        ),
        examples=[["burger", "fries"]],
    )
    explain: bool = Field(False, description="also return the attention weights over the words")


class BatchRequest(Strict):
    items: list[PredictRequest]


class TokenWeight(BaseModel):
    token: str
    start: int
    end: int
    weight: float


class AspectResult(BaseModel):
    term: str
    start: int
    end: int
    label: str
    score: float = Field(description="the winning label's probability")
    scores: dict[str, float] = Field(description="every label's probability")
    attention: list[TokenWeight] | None = Field(None, description="with explain: weight per word")
    self_attention: list[list[float]] | None = Field(
        None,
        description="with explain, for models with self-attention: per head, the weight the "
        "aspect's words give to each word",
    )


class PredictResponse(BaseModel):
    model: str
    results: list[AspectResult]


class BatchResponse(BaseModel):
    model: str
    items: list[PredictResponse]


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """Every 4xx/5xx body: ``detail`` says what is wrong, as a sentence or, for a body that
    does not fit the schema, one entry per problem."""

    detail: str | list[ValidationIssue]


class ModelInfo(BaseModel):
    name: str
    version: str
    labels: list[str]
    created: str | None
    preset: str | None
    metrics: dict
    providers: list[str]
