"""One bot process: its services, and the resume workers and scheduler it runs.

``serve`` and ``socket`` run the workers and the scheduler in-process by default;
``worker`` runs only them, to scale out. ``stop`` ends each loop and waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta

from slack_sdk.web.async_client import AsyncWebClient

from storage import Storage

from .background import Background
from .clock import Clock, SystemClock
from .directory import Directory
from .metrics import Metrics
from .policy import AgentSpec
from .registry import Registry
from .scheduler import Scheduler
from .services import Services
from .workers import ResumeWorker, consumer_name

log = logging.getLogger(__name__)


def make_services(
    *,
    client: AsyncWebClient,
    storage: Storage,
    specs: Sequence[AgentSpec],
    clock: Clock | None = None,
    default_channel: str | None = None,
) -> Services:
    """Wire the bot's collaborators together."""
    the_clock = clock or SystemClock()
    return Services(
        client=client,
        storage=storage,
        registry=Registry(specs, sessions=storage.sessions),
        directory=Directory(client, clock=the_clock),
        clock=the_clock,
        background=Background(),
        metrics=Metrics(),
        default_channel=default_channel,
    )


class Loops:
    """The resume workers and the scheduler of one process, with a clean shutdown."""

    def __init__(
        self,
        services: Services,
        *,
        workers: int,
        scheduler: bool = True,
        tick: timedelta = timedelta(seconds=5),
        reclaim_after: timedelta = timedelta(seconds=60),
    ) -> None:
        self.workers = [
            ResumeWorker(services, consumer=consumer_name(i), reclaim_after=reclaim_after)
            for i in range(workers)
        ]
        self.scheduler = Scheduler(services, interval=tick) if scheduler else None
        self._services = services
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for worker in self.workers:
            self._tasks.append(asyncio.create_task(worker.run(), name=worker.consumer))
        if self.scheduler is not None:
            self._tasks.append(asyncio.create_task(self.scheduler.run(), name="scheduler"))

    async def stop(self) -> None:
        """Stop the loops, then let the background work finish (or cancel it)."""
        for worker in self.workers:
            worker.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self._services.background.close()
