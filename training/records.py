"""The one record type every data reader yields."""

from __future__ import annotations

from dataclasses import dataclass, field

from absa.errors import DataError
from absa.model.text import LABELS

__all__ = ["DataError", "Example", "Invalid", "ReadResult"]


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
class Invalid:
    source: str
    reason: str


@dataclass
class ReadResult:
    examples: list[Example] = field(default_factory=list)
    skipped: list[Invalid] = field(default_factory=list)
