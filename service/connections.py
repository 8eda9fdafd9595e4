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
import logging
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

log = logging.getLogger("absa.service")


@functools.cache
def client_timeout_s() -> float:
    """The setting, read once a process (``absa serve`` has put its flags in the environment)."""
    from absa.settings import Settings

    return Settings().client_timeout_s


class FirstRequestDeadline(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """A connection without a whole request head ``client_timeout_s`` after it was made, or
    after its last response, is closed: a request under way is left to the app (BodyLimit),
    an idle keep-alive connection to uvicorn (whose timer stops at a new request's first
    byte: a second request begun and never finished held the connection for ever)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

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
