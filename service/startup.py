"""A worker that cannot start says why in one line. Starlette hands uvicorn the whole
traceback of a lifespan that raised, and uvicorn logs it as the reason: forty lines of
library frames around an error that names a file ("metadata.json: kind None is not
'absa-artifact'"). Where the lifespan fails for what the operator must mend (an artifact, a
registry, a path, a setting), it sets ``app.state.start_refused`` to the error's message,
and ``OneLineRefusal`` puts that one line in place of the traceback. Any other error (a bug)
keeps its traceback."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class OneLineRefusal:
    """For the lifespan scope: a startup failure the app said why of (``start_refused``) is
    reported as that line alone (uvicorn then logs "Application startup failed. Exiting.")."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        state = scope["app"].state  # set by Starlette before the middleware runs

        async def sending(message: Message) -> None:
            refused = getattr(state, "start_refused", None)
            if message["type"] == "lifespan.startup.failed" and refused:
                message = {**message, "message": f"cannot start: {refused}"}
            await send(message)

        await self.app(scope, receive, sending)
