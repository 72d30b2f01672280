"""Who has opened the app's Home tab lately, and which pages of it they are on: after a
decision, only their Home is redrawn (one ``views.publish`` each), on those pages."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import cast

from .client import RedisClient
from .epoch import to_ms
from .keys import Keys, check_id

RECENT = timedelta(days=7)


class HomeViewers:
    """A sorted set of user ids scored by when they last opened Home, and a hash of where
    each one's Home lists start (text the bot writes and checks when it reads it back)."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def opened(self, user: str, now: datetime) -> None:
        """Note that ``user`` opened Home now, which shows its lists from their first pages."""
        user = check_id("user", user)
        async with self._client.guard("note a Home view"):
            pipe = self._client.pipeline()
            pipe.zadd(self._keys.home_viewers, {user: to_ms(now)})
            pipe.hdel(self._keys.home_places, user)
            await pipe.execute()

    async def place(self, user: str) -> str:
        """Where ``user``'s Home lists start, as last kept ("" for their first pages)."""
        async with self._client.guard("read a Home place"):
            kept = await self._client.raw.hget(self._keys.home_places, check_id("user", user))
        return cast(str | None, kept) or ""

    async def keep(self, user: str, place: str) -> None:
        """Remember where ``user``'s Home lists start now ("": their first pages)."""
        user = check_id("user", user)
        async with self._client.guard("keep a Home place"):
            if place:
                await self._client.raw.hset(self._keys.home_places, user, place)
            else:
                await self._client.raw.hdel(self._keys.home_places, user)

    async def recent(self, users: Iterable[str], now: datetime) -> dict[str, str]:
        """Those of ``users`` who opened Home within ``RECENT``, in the order given, each
        with where its lists start (``place``); one round trip."""
        wanted = list(dict.fromkeys(users))
        if not wanted:
            return {}
        async with self._client.guard("read Home viewers"):
            pipe = self._client.pipeline()
            pipe.zmscore(self._keys.home_viewers, wanted)
            pipe.hmget(self._keys.home_places, wanted)
            scores, places = await pipe.execute()
        since = to_ms(now - RECENT)
        seen = zip(wanted, scores, places, strict=True)
        return {u: p or "" for u, s, p in seen if s is not None and s >= since}
