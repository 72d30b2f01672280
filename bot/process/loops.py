"""One bot process: its services, and the click deciders, resume workers and scheduler
it runs.

``serve`` and ``socket`` run these loops in-process by default (with ``--no-workers``
they only acknowledge clicks, queued in Redis for another process to decide);
``worker`` runs only the loops, to scale out. ``stop`` ends each loop and waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path

from slack_sdk.web.async_client import AsyncWebClient

from storage import Storage, connect

from .background import Background
from .clock import Clock, SystemClock
from .deciders import ClickDecider
from .directory import Directory
from .errors import BotError
from .metrics import Metrics
from .policy import AgentSpec
from .registry import Registry, load_specs
from .scheduler import Scheduler
from .services import Services
from .settings import Settings
from .slack_client import close_client, make_client
from .workers import ResumeWorker, consumer_name

log = logging.getLogger(__name__)

# Numbers the Loops of one process, so each decider has a consumer name of its own.
_LOOPS = itertools.count()


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings,
    *,
    agents: str | None = None,
    specs: Sequence[AgentSpec] | None = None,
) -> AsyncIterator[Services]:
    """Services from ``settings``: the agents of ``specs``, else of the module ``agents`` (or
    SIGNOFF_AGENTS); the Slack client and storage connection are closed on exit."""
    if settings.bot_token is None:
        raise BotError("SLACK_BOT_TOKEN: not set; copy the bot token (xoxb-...) from the app")
    if specs is None:
        module = agents or settings.agents
        if not module:
            raise BotError("SIGNOFF_AGENTS: not set; name the module that declares your agents")
        specs = load_specs(module)
    data_dir = Path(settings.data_dir) if settings.data_dir else None
    storage = await connect(settings.redis_url, prefix=settings.redis_prefix, data_dir=data_dir)
    client = make_client(settings)
    try:
        yield make_services(
            client=client, storage=storage, specs=specs, default_channel=settings.channel
        )
    finally:
        await close_client(client)
        await storage.close()


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


def lower_priority(increment: int) -> int:
    """Raise this process's nice value by ``increment`` and return the new value, so its
    loops leave the CPU to the click acks of a ``serve`` process sharing the host."""
    return os.nice(increment)


class Loops:
    """The click deciders, resume workers and scheduler of one process, with a clean
    shutdown. ``reclaim_after``: how long a click or job read by a consumer that died
    waits before another takes it over."""

    def __init__(
        self,
        services: Services,
        *,
        workers: int,
        deciders: int = 1,
        scheduler: bool = True,
        tick: timedelta = timedelta(seconds=5),
        reclaim_after: timedelta = timedelta(seconds=60),
    ) -> None:
        loop = next(_LOOPS)
        self.deciders = [
            ClickDecider(
                services, consumer=f"{consumer_name(i)}-clicks-{loop}", reclaim_after=reclaim_after
            )
            for i in range(deciders)
        ]
        self.workers = [
            ResumeWorker(services, consumer=consumer_name(i), reclaim_after=reclaim_after)
            for i in range(workers)
        ]
        self.scheduler = Scheduler(services, interval=tick) if scheduler else None
        self._services = services
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for decider in self.deciders:
            self._tasks.append(asyncio.create_task(decider.run(), name=decider.consumer))
        for worker in self.workers:
            self._tasks.append(asyncio.create_task(worker.run(), name=worker.consumer))
        if self.scheduler is not None:
            self._tasks.append(asyncio.create_task(self.scheduler.run(), name="scheduler"))

    async def stop(self) -> None:
        """Stop the loops, then let the background work finish (or cancel it)."""
        for decider in self.deciders:
            decider.stop()
        for worker in self.workers:
            worker.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self._services.background.close()
