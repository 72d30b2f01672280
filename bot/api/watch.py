"""Wakes a long-poll the moment its request changes.

Every transition of a request appends to the audit stream, and to its copy for external
requests, in the same atomic step, so one blocking read of that copy per process (per
shard on Redis Cluster; ``XREAD BLOCK``, no polling) sees each decision, vote, reminder,
expiry, escalation and withdrawal as it lands, whichever process made it. A waiter
registers before it reads the request, so no change falls between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from datetime import timedelta

from bot.services.outage import Outage
from storage import Storage
from storage.errors import StorageError

log = logging.getLogger(__name__)

_BLOCK = timedelta(milliseconds=500)
"""How long one read waits for an entry: bounds how long ``stop`` takes and how long the
reader outlives its last waiter, not how soon a waiter wakes."""


class RequestWatch:
    """One process's readers of the request events (one per shard), waking the waiters of
    each request; they read only while someone waits, so an idle process sends nothing."""

    def __init__(self, storage: Storage, outage: Outage) -> None:
        self._storage = storage
        self._outage = outage
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._stopping = asyncio.Event()
        self._readers: dict[int, asyncio.Task[None]] = {}

    @property
    def closing(self) -> bool:
        """True once the process is stopping: waiters answer now, and clients ask again."""
        return self._stopping.is_set()

    async def stop(self) -> None:
        """Stop reading, and wake every waiter so no long-poll holds up the shutdown."""
        self._stopping.set()
        self._wake_all()
        await asyncio.gather(*self._readers.values())

    @contextlib.contextmanager
    def watching(self, run_id: str) -> Iterator[asyncio.Event]:
        """An event set each time request ``run_id`` changes, while the block runs."""
        event = asyncio.Event()
        self._waiters.setdefault(run_id, set()).add(event)
        for shard in self._storage.keys.all_shards:
            if shard not in self._readers and not self.closing:
                reader = asyncio.create_task(self._follow(shard), name=_reader(shard))
                self._readers[shard] = reader
        try:
            yield event
        finally:
            waiting = self._waiters.get(run_id)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiters[run_id]

    async def _follow(self, shard: int) -> None:
        """Read ``shard``'s request events while anyone waits, waking their waiters. The
        reader leaves ``_readers`` in the same step as it sees nobody waiting, so a new
        waiter either finds it still reading or starts another. One that fails says so:
        until a new waiter starts another, long-polls answer only when their wait is over."""
        try:
            await self._read(shard)
        except Exception:  # Redis failing is retried in _read; this is anything else
            log.exception(
                "%s stopped on an unexpected error: a change wakes no long-poll until the "
                "next long-poll starts it again",
                _reader(shard),
            )
        finally:
            del self._readers[shard]
            self._outage.forget(_reader(shard))

    async def _read(self, shard: int) -> None:
        after: str | None = None
        audit = self._storage.audit
        while self._waiters and not self.closing:
            try:
                if after is None:
                    after = await audit.last_request_event(shard)
                    # Changes before this point were not seen: every waiter reads again.
                    self._wake_all()
                entries = await audit.follow_requests(shard=shard, after=after, block=_BLOCK)
            except StorageError as exc:
                after = None
                wait = self._outage.failed(_reader(shard), exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), wait)
                continue
            self._outage.cleared(_reader(shard))
            for entry in entries:
                after = entry.entry_id or after
                for event in self._waiters.get(entry.run_id, ()):
                    event.set()

    def _wake_all(self) -> None:
        for waiting in self._waiters.values():
            for event in waiting:
                event.set()


def _reader(shard: int) -> str:
    return f"request watch {shard}"
