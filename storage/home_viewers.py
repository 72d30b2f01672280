"""Who has opened the app's Home tab lately, and which pages of it they are on: after a
decision, only their Home is redrawn (one ``views.publish`` each), on those pages."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import cast

from .client import RedisClient
from .epoch import to_ms
from .ids import check_id
from .keys import Keys

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

    async def drawn(
        self, user: str, now: datetime, *, place: str | None, seen_in: Collection[str]
    ) -> None:
        """Note what ``user``'s Home shows now: where its lists start (None: as kept; "":
        their first pages) and the channels whose open requests it lists (so whichever
        process decides one redraws it); one round trip, none with nothing to note."""
        user = check_id("user", user)
        if place is None and not seen_in:
            return
        since = to_ms(now - RECENT)
        async with self._client.guard("note what a Home shows"):
            pipe = self._client.pipeline()
            if place:
                pipe.hset(self._keys.home_places, user, place)
            elif place is not None:
                pipe.hdel(self._keys.home_places, user)
            for channel in seen_in:
                key = self._keys.home_seen_in(check_id("channel", channel))
                pipe.zadd(key, {user: to_ms(now)})
                pipe.zremrangebyscore(key, "-inf", f"({since}")
                pipe.pexpire(key, int(RECENT.total_seconds() * 1000))
            await pipe.execute()

    async def seen_in(self, channels: Iterable[str], now: datetime) -> list[str]:
        """Who had a request open to one of ``channels`` listed on their Home within
        ``RECENT``, the latest first; one round trip."""
        wanted = [check_id("channel", c) for c in dict.fromkeys(channels)]
        if not wanted:
            return []
        since = to_ms(now - RECENT)
        async with self._client.guard("read who saw a channel's requests on Home"):
            pipe = self._client.pipeline()
            for channel in wanted:
                pipe.zrange(
                    self._keys.home_seen_in(channel), "+inf", since, byscore=True, desc=True
                )
            found = await pipe.execute()
        return list(dict.fromkeys(u for users in found for u in cast(list[str], users)))

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
