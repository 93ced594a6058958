"""Cancelling a caller once the run it handed to a worker thread has started."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


@asynccontextmanager
async def cancelled_once_started(
    started: threading.Event, release: threading.Event
) -> AsyncIterator[anyio.CancelScope]:
    """A cancel scope for the block, cancelled once ``started`` is set (by the run, in its
    thread); ``release`` is set after the cancellation, to let the run go on to its next
    stop point. The scope is yielded, for ``cancelled_caught``."""
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_when_started() -> None:
                await anyio.to_thread.run_sync(started.wait, 5)
                scope.cancel()
                release.set()

            group.start_soon(cancel_when_started)
            yield scope
