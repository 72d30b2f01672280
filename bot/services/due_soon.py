"""Wakes this process's scheduler early when an interrupt created here falls due before
its planned next tick; other processes' schedulers find it on their next tick."""

from __future__ import annotations

import asyncio
from datetime import datetime


class DueSoon:
    """When the scheduler plans to wake, and the signal that something falls due sooner."""

    def __init__(self) -> None:
        self.planned: datetime | None = None
        """When the scheduler plans its next tick; None until it first plans one."""
        self._sooner = asyncio.Event()

    def plan(self, at: datetime) -> None:
        """The scheduler wakes by ``at``: set before it reads the due times, so nothing
        created after that read goes unsignalled."""
        self.planned = at
        self._sooner.clear()

    def due(self, *times: datetime | None) -> None:
        """Something was stored to fall due at ``times``: wake the scheduler if one is
        before its planned tick."""
        soonest = min((t for t in times if t is not None), default=None)
        if soonest is not None and self.planned is not None and soonest < self.planned:
            self._sooner.set()

    async def wait(self) -> None:
        """Return once something falls due before the planned tick."""
        await self._sooner.wait()
