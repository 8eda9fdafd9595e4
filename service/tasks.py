"""The background tasks a worker runs for its life (polls, sweeps, follows)."""

from __future__ import annotations

import asyncio
import contextlib


async def cancel_all(*tasks: asyncio.Task | None) -> None:
    """Cancel ``tasks`` (None: none) and wait until each has stopped."""
    for task in tasks:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
