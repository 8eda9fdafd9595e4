"""ABSA_LOG_FORMAT=json: the server's log lines as JSON objects, for a log collector. Every
line has time (ISO 8601, UTC), level, logger, process and message; uvicorn's access lines
add client, method, path and status as fields of their own. Built on python-json-logger."""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

#: uvicorn's access log passes these as the record's arguments, in this order
ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


class JsonLines(JsonFormatter):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(process)d %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",
            # uvicorn's copy of some messages with terminal colour codes: not for a collector
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
            **kwargs,
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            log_data.update(zip(ACCESS_FIELDS, args, strict=True))
