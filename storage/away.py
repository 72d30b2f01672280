"""Who is away, until when, and who decides for them meanwhile (``/signoff away``): one
Redis hash, a field per person away; an entry past its date no longer counts."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .client import RedisClient
from .epoch import from_ms, to_ms
from .ids import check_id
from .keys import Keys


@dataclass(frozen=True, kw_only=True)
class Away:
    """``user`` is away until ``until``; ``delegate`` (if any) decides for them meanwhile."""

    user: str
    until: datetime
    delegate: str | None = None


class AwayList:
    """Reads and writes who is away."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def set(self, away: Away) -> None:
        check_id("user", away.user)
        if away.delegate is not None:
            check_id("user", away.delegate)
        entry = json.dumps({"until": to_ms(away.until), "delegate": away.delegate})
        async with self._client.guard("note someone away"):
            await self._client.raw.hset(self._keys.away, away.user, entry)

    async def clear(self, user: str) -> bool:
        """``user`` is back; False when they were not away."""
        key = self._keys.away
        marker = self._keys.taken(key, secrets.token_hex(8))
        taken = await self._client.take_field(
            key, check_id("user", user), marker=marker, action="note someone back"
        )
        return taken is not None

    async def of(self, users: Iterable[str], now: datetime) -> dict[str, Away]:
        """Those of ``users`` away at ``now`` (one round trip)."""
        wanted = list(dict.fromkeys(users))
        if not wanted:
            return {}
        async with self._client.guard("read who is away"):
            entries = await self._client.raw.hmget(self._keys.away, wanted)
        found = {}
        for user, raw in zip(wanted, entries, strict=True):
            if raw is None:
                continue
            try:
                data = json.loads(raw)
                away = Away(
                    user=user, until=from_ms(int(data["until"])), delegate=data.get("delegate")
                )
            except (ValueError, KeyError, TypeError):
                continue  # a damaged entry: nobody is taken for away on its word
            if away.until > now:
                found[user] = away
        return found
