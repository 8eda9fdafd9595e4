"""The one record type every data reader yields."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class Invalid:
    """A record a reader passed over (``skip_invalid``), and its sentence where it had one:
    an --exclude file's bad record still names a sentence to keep out of training."""

    source: str
    reason: str
    text: str | None = None


@dataclass
class ReadResult:
    examples: list[Example] = field(default_factory=list)  # CategoryExample: category readers
    skipped: list[Invalid] = field(default_factory=list)
