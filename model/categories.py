"""Aspect categories (Wang et al.'s own task): a model that takes a category id, not a span.

A sentence-pair category model (``ModelConfig.category_pair``, Sun et al. 2019) reads
``[CLS] text [SEP] category words [SEP]``: ``category_words`` turns a label into words.

A category model's artifact records ``task: "category"`` and its ``categories`` in
metadata.json; a term model's records ``task: "terms"`` (older artifacts record none and
are term models). ``check_task`` keeps each kind of model on its own path: a category model
is never served as a term model, nor the other way round. No torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from absa.errors import ArtifactError, InputError
from absa.model.text import Encoded, Pipeline, TextError

#: the shipped restaurant category model (benchmarks/category_model.py builds it)
SHIPPED_CATEGORY_MODEL = Path(__file__).resolve().parent / "artifacts" / "category"

TERMS = "terms"
CATEGORY = "category"
TASKS = (TERMS, CATEGORY)
#: where a category model is given (an error about one given elsewhere says so)
CATEGORY_GOES = (
    "serve it with ABSA_CATEGORY_MODEL; absa predict asks it with --text and --category, and "
    "scores a file of text and category rows with --input and --output (absa.load(DIR).batch "
    "in Python)"
)


class Categorised(Protocol):
    """A labelled aspect-category example."""

    @property
    def text(self) -> str: ...
    @property
    def category(self) -> str: ...


def task_of(metadata: Mapping[str, object]) -> str:
    """The task an artifact's metadata records (none recorded: an aspect-term model)."""
    task = metadata.get("task", TERMS)
    if task not in TASKS:
        raise ArtifactError(f"unknown model task {task!r}; this code knows {', '.join(TASKS)}")
    return str(task)


def check_task(metadata: Mapping[str, object], expected: str, where: object) -> None:
    """ArtifactError unless the artifact is a model for ``expected`` (terms or category)."""
    task = task_of(metadata)
    if task != expected:
        what = {TERMS: "an aspect-term model", CATEGORY: "an aspect-category model"}
        raise ArtifactError(
            f"{where}: is {what[task]} (task {task!r}), but {what[expected]} is needed here"
            + (f" ({CATEGORY_GOES})" if task == CATEGORY else "")
        )


def category_ids(categories: Sequence[str], wanted: Sequence[object], where: str = "") -> list[int]:
    """The ids of the ``wanted`` categories, each once, in the order first asked for (as a
    term listed twice is answered once), each found as ``category_id`` finds it. InputError
    naming the known ones for any other, and where (``where``, the item) it was asked."""
    out: list[int] = []
    for i, name in enumerate(wanted):
        try:
            found = category_id(categories, name)
        except InputError as e:
            raise InputError(f"{where}categories[{i}]: {e}") from None
        if found not in out:
            out.append(found)
    return out


def category_id(categories: Sequence[str], name: object) -> int:
    """The id of the model's category ``name``: a name in any case ("Food", "FOOD") stands
    for the model's own where it is the one that case folds alike, and spaces around a name
    are not read. InputError naming the known ones for any other."""
    given = name.strip() if isinstance(name, str) else None  # " food ": food
    if given is not None and given in categories:
        return list(categories).index(given)
    like = [
        i
        for i, c in enumerate(categories)
        if given is not None and c.casefold() == given.casefold()
    ]
    if len(like) > 1:
        several = ", ".join(categories[j] for j in like)
        raise InputError(
            f"{name!r} is several categories but for case ({several}): give one as it is spelt"
        )
    if not like:
        raise InputError(f"unknown category {name!r}; {_known(categories, given or '')}")
    return like[0]


#: up to this many categories, a message lists them all; past it, the names near the one asked
LISTED = 12


def _known(categories: Sequence[str], given: str) -> str:
    """What an unknown-category message says of the known ones: all of a short list; of a
    long one (ACOS's 61), the names near ``given`` and how many there are."""
    if len(categories) <= LISTED:
        return f"known: {', '.join(categories)}"
    import difflib

    folded = {c.casefold(): c for c in categories}
    close = difflib.get_close_matches(given.casefold(), list(folded), n=3, cutoff=0.6)
    near = f"close: {', '.join(folded[c] for c in close)}; " if close else ""
    return f"{near}{len(categories)} known"  # a model's: its metadata.json, GET /v1/model


def category_words(category: str) -> str:
    """A category label as words: "anecdotes/miscellaneous" -> "anecdotes miscellaneous",
    "LAPTOP#PRICE" -> "laptop price", "DESIGN_FEATURES" -> "design features"."""
    return " ".join(re.split(r"[#/_\s]+", category.lower())).strip()


def encode_category(
    pipeline: Pipeline, text: str, category: int, words: str | None = None
) -> Encoded:
    """A category model's item: the whole text (its first ``max_len`` tokens) and the id;
    with ``words`` (a sentence-pair model) the pair ``[CLS] text [SEP] words [SEP]``."""
    if not text.strip():
        raise TextError("text is empty")
    if words is not None:
        encode_pair = getattr(pipeline, "encode_pair", None)
        if encode_pair is None:
            raise ArtifactError("a sentence-pair category model needs a WordPiece pipeline")
        if not getattr(pipeline, "pair_types", True):
            raise ArtifactError(
                "a sentence-pair category model needs a tokenizer whose pairs carry token "
                "types (BERT's): this one's (RoBERTa's, MPNet's) are all 0, and the category "
                "words would be read as text"
            )
        return replace(encode_pair(text, words), category=category)
    return replace(pipeline.encode_text(text), category=category)


def encode_example(
    pipeline: Pipeline, example: object, categories: Sequence[str], pair: bool = False
) -> Encoded:
    """A labelled example of either task encoded: a category example (``category``) by its
    id in ``categories`` (and, ``pair``, its words after the text), an aspect-term one
    (``text[start:end]``) by its span."""
    category = getattr(example, "category", None)
    if category is None:
        return pipeline.encode(example.text, example.start, example.end)  # type: ignore[attr-defined]
    if category not in categories:
        raise TextError(f"category {category!r} is not one of the model's: {', '.join(categories)}")
    words = category_words(category) if pair else None
    return encode_category(pipeline, example.text, categories.index(category), words)  # type: ignore[attr-defined]
