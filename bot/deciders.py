"""Click deciders: decide the clicks the HTTP handler (or Socket Mode listener) queued.

Each decider is one consumer of storage's click stream. It reads a batch, decides its
clicks concurrently (``decide_click``: storage's atomic step, then ``chat.update`` or a
refusal) and acknowledges each after its decision. Clicks a dead decider read but did
not acknowledge are reclaimed once idle past ``reclaim_after``; storage remembers which
entries it decided, so deciding one again sends no second refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from storage.clicks import ClickEntry
from storage.errors import StorageError

from .clicks import decide_click
from .services import Services

log = logging.getLogger(__name__)


class ClickDecider:
    """One consumer of the click stream; ``run`` until ``stop`` is called."""

    def __init__(
        self,
        services: Services,
        *,
        consumer: str,
        batch: int = 32,
        block: timedelta = timedelta(seconds=1),
        reclaim_after: timedelta = timedelta(seconds=60),
    ) -> None:
        self._services = services
        self.consumer = consumer
        self._batch = batch
        self._block = block
        self._reclaim_after = reclaim_after
        self._reclaim_due = 0.0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        while not self._stopping.is_set():
            try:
                entries = await self._next_clicks()
            except StorageError as exc:
                log.error("click decider %s cannot read clicks: %s", self.consumer, exc)
                await self._pause(1.0)
                continue
            done = await asyncio.gather(*(self._decide(entry) for entry in entries))
            try:
                await self._services.storage.clicks.ack(*(e.id for e in done if e is not None))
            except StorageError as exc:
                # Reclaimed later; deciding them again changes nothing.
                log.error("click decider %s cannot acknowledge clicks: %s", self.consumer, exc)

    async def _decide(self, entry: ClickEntry) -> ClickEntry | None:
        """Decide one click; the entry when it may be acknowledged, None to retry it later."""
        try:
            await decide_click(self._services, entry)
        except StorageError as exc:
            # Left unacknowledged: reclaimed once idle past ``reclaim_after``.
            log.error("click %s by %s on %s: %s", entry.id, entry.user_id, entry.record_id, exc)
            return None
        except Exception:
            log.exception("click %s by %s on %s failed", entry.id, entry.user_id, entry.record_id)
        return entry

    async def _next_clicks(self) -> list[ClickEntry]:
        """Reclaimed clicks, then new ones; a blocking read gives way at once to ``stop``.

        A read cut short may leave a click delivered to this consumer unacknowledged; it is
        reclaimed by another decider after ``reclaim_after``, never lost.
        """
        clicks = self._services.storage.clicks
        now = asyncio.get_running_loop().time()
        if now >= self._reclaim_due:
            entries = await clicks.reclaim(
                self.consumer, min_idle=self._reclaim_after, count=self._batch
            )
            if entries:
                return entries
            # Nothing idle that long: look again in half the timeout, not before every read.
            self._reclaim_due = now + self._reclaim_after.total_seconds() / 2
        block = min(self._block, timedelta(seconds=max(self._reclaim_due - now, 0.001)))
        read = asyncio.ensure_future(clicks.claim(self.consumer, count=self._batch, block=block))
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
