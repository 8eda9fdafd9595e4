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
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

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
HEAD_TOO_LARGE = (
    f"the request line and headers are over {MAX_HEAD_BYTES // 1024} KiB: send fewer request "
    "headers"
)


class _HeadTooLarge(Exception):  # noqa: N818 - stops the parser; answered 431
    """A request's line and headers went past ``MAX_HEAD_BYTES``."""


class FirstRequestDeadline(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """A connection without a whole request head ``client_timeout_s`` after it was made, or
    after its last response, is closed: a request under way is left to the app (BodyLimit),
    an idle keep-alive connection to uvicorn (whose timer stops at a new request's first
    byte: a second request begun and never finished held the connection for ever). A head
    past ``MAX_HEAD_BYTES`` is answered 431 and the connection closed (httptools' callbacks;
    h11 has a limit of its own)."""

    _head_bytes = 0
    _head_too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        super().on_message_begin()

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
        if not self._head_too_large:
            return super().send_400_response(msg)
        log.warning("closed a connection whose request head was over %d bytes", MAX_HEAD_BYTES)
        body = json.dumps({"detail": HEAD_TOO_LARGE}).encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n".encode()
            + b"connection: close\r\n\r\n"
            + body
        )
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._deadline.cancel()
        self._arm()

    def _arm(self) -> None:
        waiting = self.cycle  # the request answered last (None: none yet)
        self._deadline = self.loop.call_later(client_timeout_s(), self._no_request, waiting)

    def _no_request(self, waiting: object) -> None:
        if self.cycle is waiting and not self.transport.is_closing():  # no new head since
            log.info("closed a connection that sent no whole request within the client timeout")
            self.transport.close()

    def connection_lost(self, exc: Any) -> None:
        self._deadline.cancel()
        super().connection_lost(exc)
