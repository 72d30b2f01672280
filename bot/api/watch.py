"""Wakes a long-poll the moment its request changes.

Every transition of a record appends to the audit stream in the same atomic step, so
one blocking read of that stream per process (``XREAD BLOCK``, no polling) sees each
decision, vote, expiry, escalation and withdrawal as it lands, whichever process made
it. A waiter registers before it reads the request, so no change falls between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from datetime import timedelta

from storage import Storage
from storage.errors import StorageError
from storage.requests import is_request_run

log = logging.getLogger(__name__)

_BLOCK = timedelta(milliseconds=500)
"""How long one read waits for an entry: bounds how long ``stop`` takes, not latency."""


class RequestWatch:
    """One process's reader of the audit stream, waking the waiters of each request."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._stopping.clear()
            self._task = asyncio.create_task(self._run(), name="request watch")

    @property
    def closing(self) -> bool:
        """True once the process is stopping: waiters answer now, and clients ask again."""
        return self._stopping.is_set()

    async def stop(self) -> None:
        """Stop reading, and wake every waiter so no long-poll holds up the shutdown."""
        self._stopping.set()
        self._wake_all()
        if self._task is not None:
            await self._task
            self._task = None

    @contextlib.contextmanager
    def watching(self, run_id: str) -> Iterator[asyncio.Event]:
        """An event set each time request ``run_id`` changes, while the block runs."""
        event = asyncio.Event()
        self._waiters.setdefault(run_id, set()).add(event)
        try:
            yield event
        finally:
            waiting = self._waiters.get(run_id)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiters[run_id]

    async def _run(self) -> None:
        after: str | None = None
        while not self._stopping.is_set():
            try:
                if after is None:
                    after = await self._storage.audit.last_id()
                    self._wake_all()  # anything may have changed while this was away
                entries = await self._storage.audit.follow(after=after, block=_BLOCK)
            except StorageError as exc:
                log.warning("request watch: %s; reading again in a second", exc)
                after = None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), 1.0)
                continue
            for entry in entries:
                after = entry.entry_id or after
                if is_request_run(entry.run_id):
                    for event in self._waiters.get(entry.run_id, ()):
                        event.set()

    def _wake_all(self) -> None:
        for waiting in self._waiters.values():
            for event in waiting:
                event.set()
