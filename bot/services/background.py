"""Work that runs after a listener has acknowledged Slack, owned so shutdown can wait for it.

A listener acks, hands its slow part to ``Background.spawn`` and returns, so Slack gets
its answer in about a millisecond; ``close`` waits for (then cancels, and logs) what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Background:
    """A set of tasks with a clean shutdown; a failing task is logged, never lost silently."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def spawn(self, work: Coroutine[Any, Any, None], *, name: str) -> None:
        """Run ``work`` as a task; once shutting down, drop it with a warning instead: the
        caller (an HTTP handler still finishing, say) has stored its change, and answers."""
        if self._closed:
            work.close()
            log.warning("%s not done: the process is shutting down", name)
            return
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def idle(self) -> None:
        """Wait until every task spawned so far (and any they spawn) has finished."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def close(self, *, grace: float = 5.0) -> None:
        """Refuse new work, give running tasks ``grace`` seconds, then cancel the rest,
        logging each one cut off so a change it left half done is not a mystery."""
        self._closed = True
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in late:
            if task.cancel():
                log.warning(
                    "background task %s cancelled: still running %g s after shutdown began",
                    task.get_name(),
                    grace,
                )
        if late:
            await asyncio.wait(late)
