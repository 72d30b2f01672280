"""Click deciders: decide the clicks the HTTP handler (or Socket Mode listener) queued.

Each decider is one consumer of one shard of storage's click stream. It reads a batch, decides its
clicks concurrently (``decide_click``: storage's atomic step, then ``chat.update`` or a
refusal) and acknowledges each after its decision. Clicks a dead decider read but did
not acknowledge are reclaimed once its heartbeat stops for ``reclaim_after``; storage
remembers which entries it decided, so deciding one again sends no second refusal. A
refusal stays queued until the step that acknowledges its click: one whose decider died
before telling it is told by the scheduler instead.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from bot.services import Services
from bot.services.consumer_loop import ConsumerLoop
from storage.clicks import ClickEntry
from storage.errors import StorageError
from storage.resume import TAKEOVER_AFTER

from .clicks import decide_click

log = logging.getLogger(__name__)


class ClickDecider(ConsumerLoop[ClickEntry]):
    """One consumer of the click stream; ``run`` until ``stop`` is called."""

    def __init__(
        self,
        services: Services,
        *,
        consumer: str,
        shard: int = 0,
        batch: int = 32,
        reclaim_after: timedelta = TAKEOVER_AFTER,
    ) -> None:
        super().__init__(
            consumer=consumer, batch=batch, outage=services.outage, reclaim_after=reclaim_after
        )
        self._services = services
        self._shard = shard

    async def take_over(self, *, min_idle: timedelta, count: int) -> list[ClickEntry]:
        return await self._services.storage.clicks.reclaim(
            self.consumer, shard=self._shard, min_idle=min_idle, count=count
        )

    async def read(self, *, count: int, block: timedelta) -> list[ClickEntry]:
        return await self._services.storage.clicks.claim(
            self.consumer, shard=self._shard, count=count, block=block
        )

    async def keep(self, entries: list[ClickEntry]) -> None:
        await self._services.storage.clicks.heartbeat(entries, consumer=self.consumer)

    async def handle(self, entries: list[ClickEntry]) -> None:
        """Decide the batch concurrently; acknowledge every click that was decided (a
        refused one as soon as it is told, see ``_decide``)."""
        done = await asyncio.gather(*(self._decide(entry) for entry in entries))
        try:
            await self._services.storage.clicks.done([e for e in done if e is not None])
        except StorageError as exc:
            # Taken over later; deciding them again changes nothing.
            log.error("click decider %s cannot acknowledge clicks: %s", self.consumer, exc)

    async def _decide(self, entry: ClickEntry) -> ClickEntry | None:
        """Decide one click; the entry when it may be acknowledged with its batch, None when
        it was already or is to be retried later. A click whose refusal was told is
        acknowledged at once, the refusal taken off the untold ones in the same step: a
        slower click of its batch must not keep it queued past its lease, or the scheduler
        would tell it again."""
        try:
            refusal = await decide_click(self._services, entry)
        except StorageError as exc:
            # Left unacknowledged: taken over once idle past ``reclaim_after``.
            log.error("click %s by %s on %s: %s", entry.id, entry.user_id, entry.record_id, exc)
            return None
        except Exception:
            log.exception("click %s by %s on %s failed", entry.id, entry.user_id, entry.record_id)
            return entry
        if refusal is None:
            return entry
        try:
            await self._services.storage.clicks.done([entry], told=[refusal])
        except StorageError as exc:  # taken over later, told nothing: the scheduler tells it again
            log.error("click %s told, not acknowledged: %s", entry.id, exc)
        return None
