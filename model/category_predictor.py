"""The prediction path of an aspect-category model: preprocess -> forward -> postprocess.

The same shape as ``absa.model.predictor.Predictor`` (the service's micro-batcher, the CLI
and the Python API drive both alike), for a model that takes a category (one of the
artifact's ``categories``) instead of a term in the text. No torch, no HTTP: bad input
raises ``InputError`` / ``LimitError``; an unknown category's error lists the known ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from absa.errors import ArtifactError, InputError, LimitError
from absa.model.categories import CATEGORY, category_ids
from absa.model.predictor import (
    Limits,
    RuntimeModel,
    WordWeight,
    add_explained,
    check_text,
    scored,
)
from absa.model.runtime import Output, Runtime
from absa.model.text import Encoded, TextError


@dataclass(frozen=True)
class CategoryPrediction:
    """The answer for one aspect category of a text."""

    category: str
    label: str
    score: float  # the winning probability
    scores: dict[str, float] = field(hash=False)  # every label's probability
    attention: list[WordWeight] | None = field(default=None, hash=False)  # with explain
    self_attention: list[list[float]] | None = field(default=None, hash=False)  # per head

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; the explain-only fields only when present."""
        out: dict[str, Any] = {
            "category": self.category,
            "label": self.label,
            "score": self.score,
            "scores": dict(self.scores),
        }
        return add_explained(out, self.attention, self.self_attention)


@dataclass(frozen=True)
class PreparedCategories:
    """A validated, encoded request: one item per category asked for."""

    text: str
    categories: list[str]
    items: list[Encoded]
    explain: bool = False


class CategoryPredictor(RuntimeModel):
    """Aspect categories: a runtime of a category model and the limits to apply."""

    def __init__(self, runtime: Runtime, limits: Limits | None = None) -> None:
        if runtime.task != CATEGORY or not runtime.categories:
            raise ArtifactError(f"{runtime.model_dir}: not an aspect-category model")
        super().__init__(runtime, limits)
        self.categories: list[str] = list(runtime.categories)

    def preprocess(
        self, text: str, categories: Sequence[Any], explain: bool = False, where: str = ""
    ) -> PreparedCategories:
        check_text(text, self.limits, where)
        if isinstance(categories, str) or not categories:
            raise InputError(
                f"{where}categories: name at least one, in a list; known: "
                f"{', '.join(self.categories)}"
            )
        lim = self.limits.max_aspects
        if lim is not None and len(categories) > lim:
            raise LimitError(f"{where}too many categories ({len(categories)}; the limit is {lim})")
        ids = category_ids(self.categories, categories, where)
        try:
            items = [self.runtime.encode_category(text, i) for i in ids]
        except TextError as err:
            raise InputError(f"{where}{err}") from None
        names = [self.categories[i] for i in ids]  # the model's own, each once
        return PreparedCategories(text, names, items, explain)

    def postprocess(
        self, prepared: PreparedCategories, outputs: Sequence[Output]
    ) -> list[CategoryPrediction]:
        return [
            CategoryPrediction(name, *scored(self.labels, out, prepared.explain, prepared.text))
            for name, out in zip(prepared.categories, outputs, strict=True)
        ]

    def __call__(
        self, text: str, categories: Sequence[str], explain: bool = False
    ) -> list[CategoryPrediction]:
        prepared = self.preprocess(text, categories, explain)
        return self.postprocess(prepared, self.forward(prepared.items, explain))
