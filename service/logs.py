"""ABSA_LOG_FORMAT=json: the server's log lines as JSON objects, for a log collector. Every
line has time (ISO 8601, UTC), level, logger, process and message; uvicorn's access lines
add client, method, path and status as fields of their own. Built on python-json-logger.

A line logged while a request is handled carries its ``request_id`` (the X-Request-ID the
answer carries: the client's own, or one made for it), and an access line the request's
``duration_s`` too (from its arrival to its answer's start): a field of each in JSON, and
"(request ID, 0.012 s)" at the end of a text access line; with ABSA_TRACING, a JSON line
also has the ``trace_id`` and ``span_id`` of its request's span. ``Observe``
(service/observe.py) says which request a task handles (``handling``); ``RequestFields``, a
filter on the handlers, reads it as each line is logged: uvicorn writes its access line in
the request's own task, as it sends the answer's start.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter
from uvicorn.logging import AccessFormatter

#: the request the current task handles: its id and when it came (time.perf_counter())
_REQUEST: ContextVar[tuple[str, float] | None] = ContextVar("absa_request", default=None)


def handling(request_id: str) -> None:
    """The current task handles this request from now on. Not undone when the app returns:
    uvicorn runs each request in a task of its own (a copy of the context), and logs after
    the app has returned (Starlette's 500, uvicorn's access line of it) are the request's."""
    _REQUEST.set((request_id, time.perf_counter()))


class RequestFields(logging.Filter):
    """Adds ``request_id`` to a record logged while a request is handled, and to an access
    line ``duration_s`` (seconds, from the request's arrival); with ABSA_TRACING, the
    ``trace_id`` and ``span_id`` of the span the line was logged in (hex, as a collector
    shows them), which joins a log line to its trace."""

    def filter(self, record: logging.LogRecord) -> bool:
        handled = _REQUEST.get()
        if handled is not None and not hasattr(record, "request_id"):
            record.request_id = handled[0]
            if record.name == "uvicorn.access":
                record.duration_s = round(time.perf_counter() - handled[1], 6)
            span = _span_context()
            if span is not None:
                record.trace_id = f"{span.trace_id:032x}"
                record.span_id = f"{span.span_id:016x}"
        return True


def _span_context() -> Any:
    """The current span's context where there is one (ABSA_TRACING; a trace the sampler
    left out has its IDs all the same, as OpenTelemetry's own log correlation gives them),
    else None; OpenTelemetry is not imported for it (off, or not installed)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    return context if context.is_valid else None


class Throttle(logging.Filter):
    """Lines at most once per ``every_s`` seconds for each kind; the next one let through
    says how many were left out. As a filter on loggers, a kind is a logger's message (its
    template, at its level: the OTLP exporter logs two lines per failed export, a few a
    second while the collector is down, and the SDK's "Queue full, dropping span" is a line
    of its own); ``passes`` takes any kind (service/connections.py: the requests its parser
    refused)."""

    def __init__(self, every_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every_s, self._clock = every_s, clock
        self._last: dict[object, float] = {}
        self._unsaid: dict[object, int] = {}

    def passes(self, kind: object) -> str | None:
        """None where a line of ``kind`` went out less than ``every_s`` ago (this one is
        counted), else what to add to it: how many were left out since ("" for none)."""
        now = self._clock()
        if now - self._last.get(kind, -self.every_s) < self.every_s:
            self._unsaid[kind] = self._unsaid.get(kind, 0) + 1
            return None
        self._last[kind] = now
        unsaid = self._unsaid.pop(kind, 0)
        if not unsaid:
            return ""
        return f" (and {unsaid} more like it in the last {self.every_s:g} s, not logged)"

    def filter(self, record: logging.LogRecord) -> bool:
        more = self.passes((record.name, record.levelno, record.msg))
        if more:
            record.msg, record.args = record.getMessage() + more, ()
        return more is not None


#: what uvicorn logs of a request its parser refused, just before ``send_400_response``
UVICORN_REFUSAL = "Invalid HTTP request received."
#: what uvicorn logs of an exception out of the app: Starlette raises a 500's error again
#: once its handler (errors._unexpected) has logged it and answered
UVICORN_APP_ERROR = "Exception in ASGI application\n"
#: the error the current task's request has logged (``logged``)
_LOGGED: ContextVar[BaseException | None] = ContextVar("absa_logged", default=None)


def logged(error: BaseException) -> None:
    """The service has logged ``error`` (with its traceback and request id): uvicorn's own
    line of it, as the app raises it again, is left out."""
    _LOGGED.set(error)


#: whether the bytes being parsed are absa serve's protocol's (service/connections.py),
#: which logs a request its parser refused in a line of its own: plain uvicorn's does not
_OWN_PROTOCOL: ContextVar[bool] = ContextVar("absa_own_protocol", default=False)


@contextmanager
def parsed_by_own_protocol() -> Iterator[None]:
    """The block parses a request in absa serve's protocol: uvicorn's line of a refusal
    there is left out (``_SaidOnce``)."""
    token = _OWN_PROTOCOL.set(True)
    try:
        yield
    finally:
        _OWN_PROTOCOL.reset(token)


class _SaidOnce(logging.Filter):
    """Drops uvicorn's own line of what the service says in one line of its own: a request
    absa serve's parser refused (its ``send_400_response`` logs it with the request id and
    what the parser found; under plain uvicorn, uvicorn's line is the only one, and kept)
    and an error the app raised that was logged already (``logged``: its traceback with
    the request id). Each was logged twice, uvicorn's line with neither."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == UVICORN_REFUSAL and _OWN_PROTOCOL.get():
            return False
        if record.msg == UVICORN_APP_ERROR and record.exc_info:
            said = _LOGGED.get()
            return said is None or record.exc_info[1] is not said
        return True


_SAID_ONCE = _SaidOnce()


def said_once(logger: logging.Logger) -> None:
    """Put the filter on ``logger`` (uvicorn.error): once, as a logger holds a filter once."""
    logger.addFilter(_SAID_ONCE)


#: what an access line shows of a query parameter's value
HIDDEN = "***"


def without_query_values(path: str) -> str:
    """``path`` with its query parameters' values hidden (``?api_key=***&x=***``; a
    parameter without a ``=`` is hidden whole): a key or a token a client put in the URL
    stays out of the log."""
    path, mark, query = path.partition("?")
    if not mark:
        return path
    parts = (part.partition("=") for part in query.split("&"))
    return path + "?" + "&".join(name + "=" + HIDDEN if eq else HIDDEN for name, eq, _ in parts)


class _QueryValuesHidden(logging.Filter):
    """On uvicorn.access: the path its access line shows (a record argument: the text and
    the JSON formats both read it there) without the query's values."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == len(ACCESS_FIELDS):
            at = ACCESS_FIELDS.index("path")
            path = args[at]
            if isinstance(path, str) and "?" in path:
                record.args = (*args[:at], without_query_values(path), *args[at + 1 :])
        return True


_QUERY_VALUES_HIDDEN = _QueryValuesHidden()


def hide_query_values(logger: logging.Logger) -> None:
    """Put the filter on ``logger`` (uvicorn.access): once, as a logger holds a filter once."""
    logger.addFilter(_QUERY_VALUES_HIDDEN)


#: paths a kubelet probes and Prometheus scrapes every few seconds
PROBES = frozenset({"/healthz", "/readyz", "/metrics"})


class _ProbesLeftOut(logging.Filter):
    """On uvicorn.access: leaves out the line of a probe or a scrape (``PROBES``) that
    succeeded (2xx), a few a minute per pod that buried the API's lines; one that failed
    is logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == len(ACCESS_FIELDS):
            path, status = args[ACCESS_FIELDS.index("path")], args[ACCESS_FIELDS.index("status")]
            if isinstance(path, str) and isinstance(status, int) and 200 <= status < 300:
                return path.partition("?")[0] not in PROBES
        return True


_PROBES_LEFT_OUT = _ProbesLeftOut()


def leave_out_probes(logger: logging.Logger, leave_out: bool) -> None:
    """Put the filter on ``logger`` (uvicorn.access), or take it off (ABSA_ACCESS_LOG_PROBES):
    the last app made in a process decides, as a logger holds a filter once."""
    if leave_out:
        logger.addFilter(_PROBES_LEFT_OUT)
    else:
        logger.removeFilter(_PROBES_LEFT_OUT)


class AccessText(AccessFormatter):
    """uvicorn's text access line, with the request's id and duration at its end."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        rid, took = getattr(record, "request_id", None), getattr(record, "duration_s", None)
        if rid is None or took is None:
            return line
        return f"{line} (request {rid}, {took:.3f} s)"


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
