"""The click deciders, resume workers, scheduler and webhook senders a process runs.

``serve`` and ``socket`` run these loops in-process by default (with ``--no-workers``
they only acknowledge clicks, queued in Redis for another process to decide);
``worker`` runs only the loops, to scale out. ``stop`` ends each loop and waits for it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from datetime import timedelta

from bot.api.webhooks import WebhookEvents, WebhookSender
from bot.decisions.clicks import made_final
from bot.decisions.deciders import ClickDecider
from bot.runs.workers import ResumeWorker, consumer_name
from bot.schedule.scheduler import Scheduler
from bot.services import Services
from storage.resume import TAKEOVER_AFTER

log = logging.getLogger(__name__)

# Numbers the Loops of one process, so each decider has a consumer name of its own.
_LOOPS = itertools.count()


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
        webhooks: bool = True,
        tick: timedelta = timedelta(seconds=5),
        reclaim_after: timedelta = TAKEOVER_AFTER,
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
        self.scheduler = (
            Scheduler(services, interval=tick, made_final=made_final) if scheduler else None
        )
        self.webhook_sender = WebhookSender(services) if webhooks else None
        self.webhook_events = (
            WebhookEvents(
                services, consumer=f"{consumer_name(0)}-webhooks-{loop}", sender=self.webhook_sender
            )
            if self.webhook_sender
            else None
        )
        self._services = services
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for decider in self.deciders:
            self._tasks.append(asyncio.create_task(decider.run(), name=decider.consumer))
        for worker in self.workers:
            self._tasks.append(asyncio.create_task(worker.run(), name=worker.consumer))
        if self.scheduler is not None:
            self._tasks.append(asyncio.create_task(self.scheduler.run(), name="scheduler"))
        if self.webhook_sender is not None and self.webhook_events is not None:
            self._tasks.append(asyncio.create_task(self.webhook_sender.run(), name="webhooks"))
            events = self.webhook_events
            self._tasks.append(asyncio.create_task(events.run(), name=events.consumer))

    async def stop(self) -> None:
        """Stop the loops, then let the background work finish (or cancel it)."""
        for decider in self.deciders:
            decider.stop()
        for worker in self.workers:
            worker.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self.webhook_sender is not None and self.webhook_events is not None:
            self.webhook_sender.stop()
            self.webhook_events.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self._services.background.close()
