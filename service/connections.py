"""uvicorn's HTTP protocol (httptools where installed, else h11: what uvicorn's "auto"
picks) with a deadline for a connection's first request: a client that connects and sends
no request, or its headers slowly, is disconnected ``client_timeout_s`` after connecting.
uvicorn waits for ever there (its keep-alive timeout starts only after a response), so
enough such clients held every file descriptor of the process. The body has the same
deadline after the headers (``BodyLimit``, a 408). ``absa serve`` names this class to uvicorn
by its import path, so each worker process loads it (and reads the setting) itself.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from absa.service.errors import error_body
from absa.service.logs import Throttle, parsed_by_own_protocol, said_once
from absa.service.metrics import PROTOCOL_ERRORS

log = logging.getLogger("absa.service")


@functools.cache
def client_timeout_s() -> float:
    """The setting, read once a process (``absa serve`` has put its flags in the environment)."""
    from absa.settings import Settings

    return Settings().client_timeout_s


#: the most bytes of one request's line and headers: h11 stops at 16 KiB by itself, httptools
#: (what uvicorn runs where it is installed, as here) at nothing: 100 MB of small headers,
#: sent in 2 s with no API key, took a worker to 1.24 GB and were answered 200
MAX_HEAD_BYTES = 64 * 1024
#: a client's bad requests are logged one a kind per this many seconds (the one after says
#: how many were not): a scanner sending thousands wrote as many WARNING lines, each the
#: client's to trigger (absa_protocol_errors_total counts them all)
LOG_EVERY_S = 60.0
#: after a refusal (400, 431), how long what the client still sends is read and dropped before
#: the connection closes: closed with its bytes unread, the kernel answered them with a reset,
#: which could drop the refusal before the client read it ("connection reset", no 431)
LINGER_S = 2.0
#: and at most this many of its bytes: past them the connection closes at once (a client that
#: never stops sending is not read for the whole ``LINGER_S``)
LINGER_BYTES = 1024 * 1024


class _Throttled:
    """``log.warning`` at most once per ``LOG_EVERY_S`` for each kind of line."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._throttle = Throttle(LOG_EVERY_S, clock)

    def warning(self, kind: str, msg: str, *args: object) -> None:
        more = self._throttle.passes(kind)
        if more is not None:
            log.warning(msg + more, *args)


_THROTTLED = _Throttled()
HEAD_TOO_LARGE = (
    f"the request line and headers are over {MAX_HEAD_BYTES // 1024} KiB: send fewer request "
    "headers"
)

#: a request the HTTP parser refused (uvicorn's "Invalid HTTP request received.")
NOT_HTTP = (
    "the request is not valid HTTP/1.1 (its method, request line or headers, such as a "
    "Content-Length that is not one number): send a well-formed request"
)


class _HeadTooLarge(Exception):  # noqa: N818 - stops the parser; answered 431
    """A request's line and headers went past ``MAX_HEAD_BYTES``."""


#: where h11's words of a refused request give the bytes it refused ("illegal request line:
#: bytearray(b'GET /?api_key=... HTTP/1.1 x')"): a key, a token may be in them
_REQUEST_BYTES = re.compile(r"""\s*(bytearray\(|b'|b").*""", re.DOTALL)


def _parser_said() -> str:
    """What the HTTP parser found wrong: the error uvicorn is handling as it calls
    ``send_400_response`` (httptools' HttpParserError, h11's RemoteProtocolError), without
    the request's bytes an h11 error quotes."""
    err = sys.exc_info()[1]
    said = _REQUEST_BYTES.sub("", str(err)) if err is not None else ""
    said = " ".join(said.split())[:200].rstrip(":")  # a line, bounded
    return said or (type(err).__name__ if err is not None else "no reason given")


class FirstRequestDeadline(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """A connection without a whole request head ``client_timeout_s`` after it was made, or
    after the first bytes of a later request, is closed: a request under way is left to the
    app (BodyLimit), an idle keep-alive connection between requests to uvicorn's keep-alive
    timer (``keep_alive_s``, absa serve's ``timeout_keep_alive``; it stops at a new
    request's first byte, where this deadline starts: a second request begun and never
    finished held the connection for ever). The client timeout armed again at each response
    closed idle connections after 30 s whatever the keep-alive, before a proxy's 60 s idle
    timeout (a 502). A head past ``MAX_HEAD_BYTES`` is answered 431 and the connection
    closed (httptools' callbacks, and the bytes of a head under way as they arrive; h11 has
    a limit of its own)."""

    _head_bytes = 0
    _head_too_large = False
    _in_head = False  # a request's line and headers begun, not yet all parsed (httptools)
    _lingering = False  # refused: our side shut, the client's bytes dropped till it closes
    _dropped = 0  # bytes dropped since
    _deadline: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        said_once(self.logger)  # a refused request: send_400_response's line alone

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        self._in_head = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def _count_head(self, n: int) -> None:
        self._head_bytes += n
        if self._head_bytes > MAX_HEAD_BYTES:
            self._head_too_large = True
            raise _HeadTooLarge  # httptools: a parser error, which uvicorn answers below

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request its parser refused (a text/plain "Invalid HTTP
        request received."): in the service's one error shape, with an X-Request-ID, and one
        log line with that id and what the parser found."""
        if self._head_too_large:
            status, detail = 431, HEAD_TOO_LARGE
        else:
            status, detail = 400, NOT_HTTP
        rid = uuid.uuid4().hex  # no request to take the client's from: a new one
        PROTOCOL_ERRORS.labels("too_large" if status == 431 else "invalid").inc()
        if status == 431:
            _THROTTLED.warning(
                "too_large",
                "closed a connection whose request head was over %d bytes (request %s)",
                MAX_HEAD_BYTES,
                rid,
            )
        else:
            _THROTTLED.warning(
                "invalid",
                "refused a request that is not HTTP/1.1 (request %s): %s",
                rid,
                _parser_said(),
            )
        body = json.dumps(error_body(detail)).encode()
        head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()]
        for name, value in self.server_state.default_headers:  # date, server: as uvicorn's
            head.append(name + b": " + value + b"\r\n")
        head.append(
            b"content-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n".encode()
            + b"x-request-id: "
            + rid.encode()
            + b"\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(b"".join(head) + body)
        self._close_lingering()

    def _close_lingering(self) -> None:
        """The answer sent and our side shut (``write_eof``), what the client still sends is
        read and dropped, and the connection closes on its end, after ``LINGER_S`` or past
        ``LINGER_BYTES`` (nginx's lingering close). A transport that cannot half-close (TLS)
        closes at once."""
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self._lingering = True
        self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # refused already: the rest of what it sends is dropped
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        if self._deadline is None:  # idle since its last response: a request begins
            self._arm()
        # httptools calls back with a header once it has ended, and buffers one under way
        # without a limit: a value never ended grew for ever. Bytes that arrive while a head
        # begun before them is still under way after them are all head; the chunk a head
        # begins in is counted by the callbacks alone (it may end an earlier body)
        began_before = self._in_head
        with parsed_by_own_protocol():  # a refusal is logged by send_400_response alone
            super().data_received(data)
        if (
            began_before
            and self._in_head
            and not self._lingering
            and not self.transport.is_closing()
        ):
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._head_too_large = True
                self.send_400_response("")  # answered 431, the connection closed

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._deadline is not None:  # idle now: uvicorn's keep-alive timer governs
            self._deadline.cancel()
            self._deadline = None

    def _arm(self) -> None:
        waiting = self.cycle  # the request answered last (None: none yet)
        self._deadline = self.loop.call_later(client_timeout_s(), self._no_request, waiting)

    def _no_request(self, waiting: object) -> None:
        if self.cycle is waiting and not self.transport.is_closing():  # no new head since
            log.info("closed a connection that sent no whole request within the client timeout")
            PROTOCOL_ERRORS.labels("timeout").inc()
            self.transport.close()

    def connection_lost(self, exc: Any) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)
