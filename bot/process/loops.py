"""The click deciders, resume workers, scheduler and webhook senders a process runs.

``serve`` and ``socket`` run these loops in-process by default (with ``--no-workers``
they only acknowledge clicks, queued in Redis for another process to decide);
``worker`` runs only the loops, to scale out. On Redis Cluster each stream is split
into shards, and every consumer runs once per shard. ``stop`` ends each loop and waits.
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


def lower_priority(increment: int) -> str:
    """Raise this process's nice value by ``increment``, so its loops leave the CPU to the
    click acks of a ``serve`` process sharing the host; how it now runs, for the log.

    At the lowest, 19, it also takes Linux's idle scheduling class: a nice 19 process
    still runs out its time slice before a waking ack, an idle one gives way at once.
    """
    nice = os.nice(increment)
    if increment and nice == 19 and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return "at nice 19 in the idle scheduling class"
    return f"at nice {nice}"


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
        shards = services.storage.keys.all_shards

        def named(name: str, shard: int) -> str:
            return name if len(shards) == 1 else f"{name}-s{shard}"

        self.deciders = [
            ClickDecider(
                services,
                consumer=named(f"{consumer_name(i)}-clicks-{loop}", shard),
                shard=shard,
                reclaim_after=reclaim_after,
            )
            for i in range(deciders)
            for shard in shards
        ]
        self.workers = [
            ResumeWorker(
                services,
                consumer=named(consumer_name(i), shard),
                shard=shard,
                reclaim_after=reclaim_after,
            )
            for i in range(workers)
            for shard in shards
        ]
        self.scheduler = (
            Scheduler(services, interval=tick, made_final=made_final) if scheduler else None
        )
        self.webhook_sender = WebhookSender(services) if webhooks else None
        self.webhook_events: list[WebhookEvents] = []
        if self.webhook_sender is not None:
            self.webhook_events = [
                WebhookEvents(
                    services,
                    consumer=named(f"{consumer_name(0)}-webhooks-{loop}", shard),
                    sender=self.webhook_sender,
                    shard=shard,
                )
                for shard in shards
            ]
        self._shards = len(shards)
        self._services = services
        self._tasks: list[asyncio.Task[None]] = []

    def __str__(self) -> str:
        """What runs, counted as started: on Redis Cluster each consumer runs once a shard."""
        counts = f"{_count(len(self.deciders), 'click decider')}, " + _count(
            len(self.workers), "resume worker"
        )
        if self._shards > 1:
            each = len(self.deciders) // self._shards, len(self.workers) // self._shards
            counts += f" ({each[0]} and {each[1]} on each of {self._shards} shards)"
        return counts + (" and the scheduler" if self.scheduler is not None else "")

    def start(self) -> None:
        for decider in self.deciders:
            self._tasks.append(asyncio.create_task(decider.run(), name=decider.consumer))
        for worker in self.workers:
            self._tasks.append(asyncio.create_task(worker.run(), name=worker.consumer))
        if self.scheduler is not None:
            self._tasks.append(asyncio.create_task(self.scheduler.run(), name="scheduler"))
        if self.webhook_sender is not None:
            self._tasks.append(asyncio.create_task(self.webhook_sender.run(), name="webhooks"))
        for events in self.webhook_events:
            self._tasks.append(asyncio.create_task(events.run(), name=events.consumer))
        for task in self._tasks:
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """A loop ends only when stopped; one that failed is logged and fails /healthz."""
        if task.cancelled() or task.exception() is None:
            return
        self._services.stopped_loops.add(task.get_name())
        log.error(
            "background loop %s stopped on an unexpected error; /healthz answers 503 from now on",
            task.get_name(),
            exc_info=task.exception(),
        )

    async def stop(self) -> None:
        """Stop the loops, then let the background work finish (or cancel it)."""
        for decider in self.deciders:
            decider.stop()
        for worker in self.workers:
            worker.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self.webhook_sender is not None:
            self.webhook_sender.stop()
        for events in self.webhook_events:
            events.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self._services.background.close()


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
