"""What every CSV reader shares: training's readers, ``absa predict --input`` and bulk
scoring. No torch."""

from __future__ import annotations

__all__ = ["CSV_FIELD_LIMIT"]

#: the longest CSV field read (the csv module's default, 131,072 characters, stopped the file
#: on one long text; the text-length limits, not the reader, decide about long texts)
CSV_FIELD_LIMIT = 2**31 - 1
