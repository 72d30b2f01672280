"""Who has opened the app's Home tab lately: after a decision, only their Home is redrawn
(one ``views.publish`` each), never every approver's."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from .client import RedisClient
from .epoch import to_ms
from .keys import Keys, check_id

RECENT = timedelta(days=7)


class HomeViewers:
    """A sorted set of user ids scored by when they last opened Home."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def opened(self, user: str, now: datetime) -> None:
        async with self._client.guard("note a Home view"):
            await self._client.raw.zadd(
                self._keys.home_viewers, {check_id("user", user): to_ms(now)}
            )

    async def recent(self, users: Iterable[str], now: datetime) -> list[str]:
        """Those of ``users`` who opened Home within ``RECENT``, in the order given."""
        wanted = list(dict.fromkeys(users))
        if not wanted:
            return []
        async with self._client.guard("read Home viewers"):
            scores = await self._client.raw.zmscore(self._keys.home_viewers, wanted)
        since = to_ms(now - RECENT)
        return [u for u, s in zip(wanted, scores, strict=True) if s is not None and s >= since]
