"""Which threads an AG-UI app's round runs on now: held by the process running it, so a
round left mid-run by a process that died (its hold lapsed) is told from one still running."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .client import RedisClient
from .keys import Keys
from .leases import held
from .resume import TAKEOVER_AFTER

HOLD_MS = int(TAKEOVER_AFTER.total_seconds() * 1000)
"""A round's hold lapses this long after its process's last renewal, as a resume worker's
run lease does."""


class AppRuns:
    """Holds, per thread, the round an AG-UI request runs."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client, self._keys = client, keys

    @asynccontextmanager
    async def running(self, thread_id: str) -> AsyncIterator[bool]:
        """Hold ``thread_id`` while this process runs its round; yields False when a round
        another request runs (in any process) holds it."""
        async with held(self._client, self._keys.app_run(thread_id), lasts_ms=HOLD_MS) as ok:
            yield ok
