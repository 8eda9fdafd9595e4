"""Stop working for a client that has gone: a predict request whose client hangs up before
its answer is cancelled, and the aspects it queued are dropped before they reach the model.

uvicorn does not cancel a handler when its connection closes; it lets the handler finish and
throws the answer away. Under overload that is work done for nobody: clients that time out
and retry add their retries to the queue while their first tries are still computed.
``CancelOnHangUp`` reads the request's body first (``BodyLimit``, outside it, has already
read it from the socket), then watches the connection for ``http.disconnect`` while the app
runs (from ``WATCH_AFTER_S`` on), and cancels the app if the client leaves before the whole
answer was sent. The batcher skips a job whose request was cancelled (``BatchEngine._take``);
work already handed to a thread (encoding, an onnxruntime call) finishes, and its result is
dropped. No answer is sent: the request is counted with status 499 (``Observe``), and one
log line says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

#: how long a request runs before its connection is watched: a watch costs a task, about
#: as much again as the layer's own 5 us a request (benchmarks/hangup_overhead.py); a
#: hang-up within this is not noticed, and costs at most this much work
WATCH_AFTER_S = 0.05


class CancelOnHangUp:
    """Around the app, for POST requests to ``paths`` (the predict routes): their handlers
    are cancelled when the client hangs up first."""

    def __init__(
        self, app: ASGIApp, paths: frozenset[str], route_path: Callable[[Scope], str]
    ) -> None:
        self.app = app
        self.paths = paths
        self.route_path = route_path  # the path the router matches

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or self.route_path(scope) not in self.paths
        ):
            return await self.app(scope, receive, send)
        body: list[Message] = []
        while True:  # the body: BodyLimit has read it, this is its replay
            msg = await receive()
            if msg["type"] != "http.request":
                return  # the client went away before its body was read
            body.append(msg)
            if not msg.get("more_body", False):
                break
        gone = asyncio.Event()
        answered = False

        async def app_receive() -> Message:
            if body:
                return body.pop(0)
            await gone.wait()  # nothing more comes from the client but its leaving
            return {"type": "http.disconnect"}

        async def app_send(msg: Message) -> None:
            nonlocal answered
            if msg["type"] == "http.response.body" and not msg.get("more_body", False):
                answered = True
            await send(msg)

        task = asyncio.current_task()
        assert task is not None
        hung_up = finished = False

        def cancel(watch: asyncio.Task) -> None:
            nonlocal hung_up
            # the server says http.disconnect after the answer too: that is no hang-up; and
            # a callback scheduled as the app returned must not cancel what the task does next
            if finished or answered or watch.cancelled() or watch.exception() is not None:
                return
            hung_up = True
            gone.set()
            task.cancel()

        watch: asyncio.Task | None = None

        def start_watching() -> None:
            nonlocal watch
            if not (finished or answered):
                watch = asyncio.ensure_future(_disconnect(receive))
                watch.add_done_callback(cancel)

        # most answers are sent before this: they pay for a timer, not for a task
        timer = asyncio.get_running_loop().call_later(WATCH_AFTER_S, start_watching)
        try:
            await self.app(scope, app_receive, app_send)
        except asyncio.CancelledError:
            if not hung_up or task.uncancel() > 0:  # cancelled from outside too: go on
                raise
            rid = scope.get("state", {}).get("request_id")
            log.info(
                "%s (request %s): the client hung up; its work was dropped", scope["path"], rid
            )
        else:
            if hung_up:  # the app caught the cancellation and returned: it is over all the same
                task.uncancel()
        finally:
            finished = True
            timer.cancel()
            if watch is not None:
                watch.cancel()


async def _disconnect(receive: Receive) -> None:
    """Returns when the server says the connection is over."""
    while (await receive())["type"] != "http.disconnect":
        pass
