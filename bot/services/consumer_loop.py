"""The loop resume workers and click deciders share: read a consumer group until stopped.

While a batch is handled, a heartbeat (every third of ``reclaim_after``) keeps its
entries this consumer's, however long they take. Entries another consumer read and
stopped heartbeating for ``reclaim_after`` (it died) are taken over first; otherwise new
ones are read, blocking at most ``READ_BLOCK`` (and never past the next take-over check,
so a failed entry is retried on time). A new entry ends the wait at once, so the bound
only sets how long ``stop`` may wait: redis-py lets a command cancelled before it was
sent run to its end. An entry a stopped read may have left delivered but unhandled is
taken over by another consumer later, never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from datetime import timedelta
from typing import Generic, TypeVar

from storage.errors import StorageError
from storage.resume import TAKEOVER_AFTER

from .outage import Outage

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_BLOCK = timedelta(milliseconds=250)
"""The longest a read waits for a new entry."""


class ConsumerLoop(ABC, Generic[T]):
    """One consumer of a stream's consumer group; ``run`` until ``stop`` is called."""

    def __init__(
        self,
        *,
        consumer: str,
        batch: int,
        outage: Outage,
        reclaim_after: timedelta = TAKEOVER_AFTER,
    ) -> None:
        self.consumer = consumer
        self._batch = batch
        self._outage = outage
        self._reclaim_after = reclaim_after
        self._reclaim_due = 0.0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        while not self._stopping.is_set():
            try:
                entries = await self._next()
            except StorageError as exc:
                await self._pause(self._outage.failed(self.consumer, exc))
                continue
            self._outage.cleared(self.consumer)
            if not entries:
                continue
            handled = asyncio.Event()
            heartbeat = asyncio.create_task(self._heartbeat(entries, handled), name=self.consumer)
            try:
                await self.handle(entries)
            finally:
                handled.set()  # not cancel(): a cancelled Redis call may swallow it
                await heartbeat

    @abstractmethod
    async def take_over(self, *, min_idle: timedelta, count: int) -> list[T]:
        """Entries other consumers left unacknowledged for ``min_idle``."""

    @abstractmethod
    async def read(self, *, count: int, block: timedelta) -> list[T]:
        """New entries, waiting up to ``block`` for one."""

    @abstractmethod
    async def handle(self, entries: list[T]) -> None:
        """Handle a batch; what is not acknowledged is taken over again later."""

    @abstractmethod
    async def keep(self, entries: list[T]) -> None:
        """Tell storage these entries are still being handled by this consumer."""

    async def _heartbeat(self, entries: list[T], handled: asyncio.Event) -> None:
        every = self._reclaim_after.total_seconds() / 3
        while not handled.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(handled.wait(), every)
                return
            try:
                await self.keep(entries)
            except StorageError as exc:
                log.warning("%s: heartbeat failed: %s", self.consumer, exc)

    async def _next(self) -> list[T]:
        now = asyncio.get_running_loop().time()
        if now >= self._reclaim_due:
            entries = await self.take_over(min_idle=self._reclaim_after, count=self._batch)
            if entries:
                return entries
            # Nothing idle that long: look again in half the timeout, not before every read.
            self._reclaim_due = now + self._reclaim_after.total_seconds() / 2
        block = min(READ_BLOCK, timedelta(seconds=max(self._reclaim_due - now, 0.001)))
        read = asyncio.ensure_future(self.read(count=self._batch, block=block))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({read, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not read.done():
            read.cancel()
            await asyncio.gather(read, return_exceptions=True)
            return []
        return read.result()

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)
