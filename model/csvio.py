"""What every CSV reader shares: training's readers, ``absa predict --input`` and bulk
scoring. No torch."""

from __future__ import annotations

import csv

__all__ = ["CSV_FIELD_LIMIT", "any_field_length"]

#: the longest CSV field read (the csv module's default, 131,072 characters, stopped the file
#: on one long text; the text-length limits, not the reader, decide about long texts)
CSV_FIELD_LIMIT = 2**31 - 1


def any_field_length() -> None:
    """Raise the csv module's field size limit to ``CSV_FIELD_LIMIT`` (process-wide; raised,
    never lowered), before a reader is made: every reader of the project's CSV files calls
    it, so that each counts the same records (a second reader that stopped on a long field
    lost the first one's line numbers)."""
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
