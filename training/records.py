"""The one record type every data reader yields."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from absa.errors import DataError
from absa.model.text import LABELS

__all__ = [
    "TRANSFER",
    "CategoryExample",
    "DataError",
    "Example",
    "Invalid",
    "Labelled",
    "ReadResult",
    "category_examples",
    "term_examples",
]

# the source prefix of a transfer-set item: "transfer:" and its candidate's own source
TRANSFER = "transfer:"


@dataclass(frozen=True)
class Example:
    """One labelled aspect: ``text[start:end]`` is the aspect term."""

    text: str
    start: int
    end: int
    label: str  # one of model.text.LABELS
    source: str = ""  # where it came from, "path:line" or "path:sentence id"

    @property
    def term(self) -> str:
        return self.text[self.start : self.end]

    @property
    def label_id(self) -> int:
        return LABELS.index(self.label)


@dataclass(frozen=True)
class CategoryExample:
    """One labelled aspect category of a sentence (e.g. ``food``, ``LAPTOP#PRICE``): the
    category need not be named in the text (implicit aspects)."""

    text: str
    category: str
    label: str  # one of model.text.LABELS
    source: str = ""  # "path:line" or "path:sentence id"

    @property
    def label_id(self) -> int:
        return LABELS.index(self.label)


#: a labelled example of either task: the training loop takes both
Labelled = Example | CategoryExample


def _all_terms(examples: Sequence[Labelled]) -> TypeGuard[Sequence[Example]]:
    return all(isinstance(e, Example) for e in examples)


def _all_categories(examples: Sequence[Labelled]) -> TypeGuard[Sequence[CategoryExample]]:
    return all(isinstance(e, CategoryExample) for e in examples)


def term_examples(examples: Sequence[Labelled]) -> Sequence[Example]:
    """``examples`` themselves (not a copy), each an aspect term's: what reads spans (a
    teacher, augment, the union of files) is given no category example (TypeError)."""
    if not _all_terms(examples):
        raise TypeError("aspect-term examples expected, and a category example was given")
    return examples


def category_examples(examples: Sequence[Labelled]) -> Sequence[CategoryExample]:
    """``examples`` themselves (not a copy), each a category's (a category reader's)."""
    if not _all_categories(examples):
        raise TypeError("category examples expected, and an aspect-term example was given")
    return examples


@dataclass(frozen=True)
class Invalid:
    """A record a reader passed over (``skip_invalid``), and its sentence where it had one:
    an --exclude file's bad record still names a sentence to keep out of training."""

    source: str
    reason: str
    text: str | None = None


@dataclass
class ReadResult:
    examples: list[Labelled] = field(default_factory=list)  # CategoryExample: category readers
    skipped: list[Invalid] = field(default_factory=list)
