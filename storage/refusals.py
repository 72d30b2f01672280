"""Refusals a click decider stored and has not told its clicker yet: queued by the step
that stores the refusal (``decide`` with ``untold``), taken off by the step that
acknowledges the click once its decider told it (``ClickStream.done``). A decider that
dies in between leaves the refusal here, and whoever claims it once its lease lapses
tells it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ValidationError

from .client import RedisClient
from .epoch import to_ms
from .keys import Keys
from .sweeps import POST_LEASE, lease_due

log = logging.getLogger(__name__)


class Refusal(BaseModel, frozen=True):
    """Whom to tell that their click on ``record_id`` changed nothing, and where: the
    click stream entry's own fields (``click``: its click id)."""

    record_id: str
    click: str
    user: str
    channel: str
    thread_ts: str = ""

    @property
    def member(self) -> str:
        """Its entry in the queue: the same JSON for the same click, whoever builds it."""
        return self.model_dump_json()


@dataclass(frozen=True, kw_only=True)
class LeasedRefusal:
    """A refusal handed to one caller until ``leased_until``, with the reason stored."""

    refusal: Refusal
    reason: str
    shard: int
    member: str
    leased_until: datetime


class RefusalQueue:
    """Per shard, the untold refusals (a sorted set of JSON entries, scored by when they
    may be told by another process) and the reason of each (a hash)."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys

    async def claim(
        self, now: datetime, *, limit: int = 20, lease: timedelta = POST_LEASE
    ) -> list[LeasedRefusal]:
        """Refusals whose decider's lease has lapsed (up to ``limit`` per shard), leased to
        this caller for ``lease``, each with its reason; an unreadable one leaves the queue."""
        due = await lease_due(self._client, self._keys, self._keys.refusals, now, limit, lease)
        found: list[tuple[int, str, Refusal | None]] = []
        for shard, members in zip(self._keys.all_shards, due, strict=True):
            for member in members:
                try:
                    refusal: Refusal | None = Refusal.model_validate_json(member)
                except ValidationError as exc:
                    log.error("an unreadable refusal left the queue: %s", exc.errors()[0]["msg"])
                    refusal = None
                found.append((shard, member, refusal))
        if not found:
            return []
        async with self._client.guard("read untold refusals"):
            pipe = self._client.pipeline()
            for shard, member, _ in found:
                pipe.hget(self._keys.refusal_reasons(shard), member)
            reasons = await pipe.execute()
        leased = []
        for (shard, member, refusal), reason in zip(found, reasons, strict=True):
            if refusal is None:
                await self._drop(shard, member)
                continue
            leased.append(
                LeasedRefusal(
                    refusal=refusal,
                    reason=str(reason or "unknown"),
                    shard=shard,
                    member=member,
                    leased_until=now + lease,
                )
            )
        return leased

    async def done(self, leased: LeasedRefusal) -> None:
        """Take a told refusal off the queue, unless it was queued again since it was leased."""
        keys = [self._keys.refusals(leased.shard), self._keys.refusal_reasons(leased.shard)]
        await self._client.eval("refusal_told", keys, [leased.member, to_ms(leased.leased_until)])

    async def hold(self, shard: int, member: str, leased_until: datetime, until: datetime) -> bool:
        """Renew the lease on refusal ``member`` of ``shard``, ending at ``leased_until``, to
        ``until``: False when it was told or queued again since (nothing to renew)."""
        keys = [self._keys.refusals(shard)]
        args: list[str | int] = [to_ms(leased_until), to_ms(until), member]
        return bool(await self._client.eval("lease_hold", keys, args))

    async def _drop(self, shard: int, member: str) -> None:
        async with self._client.guard("drop an unreadable refusal"):
            pipe = self._client.pipeline()
            pipe.zrem(self._keys.refusals(shard), member)
            pipe.hdel(self._keys.refusal_reasons(shard), member)
            await pipe.execute()
