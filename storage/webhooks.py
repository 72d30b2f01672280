"""The webhook outbox: every change of an external request, delivered to its callback URL.

Each transition of a request appends to the request events (the audit stream's copy for
external requests) in its own atomic step; a consumer group (``webhooks``) reads them,
so no event is skipped even when every sender was down. An event for a request with a
callback URL becomes a delivery, stored under the event's id (its delivery id: storing
it twice keeps one), then leased to one sender at a time and retried with backoff until
it is delivered or ``GIVE_UP_AFTER`` has passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from pydantic import BaseModel, ConfigDict, ValidationError

from .audit import AuditEntry, entries_of
from .client import RedisClient
from .consumer_group import ConsumerGroup
from .damage import what_is_wrong
from .epoch import to_ms
from .errors import CorruptRecordError
from .keys import Keys

GIVE_UP_AFTER = timedelta(hours=24)
"""How long a delivery is retried before it is dropped (and logged)."""
SEND_LEASE = timedelta(seconds=60)
"""How long a sender holds a delivery before another may try it."""
FINISHED = "finished"
"""What a delivery's key holds once it was delivered or given up."""


class WebhookDelivery(BaseModel):
    """One event on its way to one URL; ``body`` is the exact JSON that is signed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    url: str
    client: str
    client_since: datetime | None = None
    """When that client was created: a later client of the same name is another one."""
    event: str
    body: str
    created_at: datetime
    attempts: int = 0


@dataclass(frozen=True)
class LeasedDelivery:
    """A delivery handed to one sender until ``leased_until_ms`` (as Redis keeps it)."""

    delivery: WebhookDelivery
    leased_until_ms: int


class WebhookOutbox:
    """Reads request events from the audit stream and keeps deliveries until delivered."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._client = client
        self._keys = keys
        self.shard_groups = [
            ConsumerGroup(
                client, key=keys.request_events(shard), group="webhooks", what="webhook events"
            )
            for shard in keys.all_shards
        ]

    async def ensure_group(self) -> None:
        for events in self.shard_groups:
            await events.ensure()

    async def read_events(
        self, consumer: str, *, shard: int = 0, count: int = 100, block: timedelta | None = None
    ) -> list[AuditEntry]:
        """New request events of ``shard`` for ``consumer``."""
        read = await self.shard_groups[shard].read(consumer, count=count, block=block)
        return entries_of(read, self._keys.entry_shard(shard))

    async def take_over_events(
        self, consumer: str, *, shard: int = 0, min_idle: timedelta, count: int = 100
    ) -> list[AuditEntry]:
        """Entries of ``shard`` a sender that died read but did not acknowledge."""
        taken = await self.shard_groups[shard].take_over(consumer, min_idle=min_idle, count=count)
        return entries_of(taken, self._keys.entry_shard(shard))

    async def ack_events(self, entries: Sequence[AuditEntry]) -> None:
        """Acknowledge handled request events."""
        for shard in {entry.shard or 0 for entry in entries}:
            ids = [e.entry_id for e in entries if (e.shard or 0) == shard and e.entry_id]
            await self.shard_groups[shard].ack(*ids)

    async def add(self, delivery: WebhookDelivery, *, due: datetime) -> bool:
        """Store a delivery, due at ``due``; False when one with its id is stored already."""
        key = self._keys.webhook(delivery.id)
        keep = int((GIVE_UP_AFTER + SEND_LEASE).total_seconds() * 1000)
        async with self._client.guard("store a webhook delivery"):
            pipe = self._client.raw.pipeline(transaction=True)
            pipe.set(key, delivery.model_dump_json(), nx=True, px=keep)
            pipe.zadd(self._keys.webhooks, {delivery.id: to_ms(due)}, nx=True)
            stored, _ = await pipe.execute()
        return bool(stored)

    async def claim_due(
        self, now: datetime, *, limit: int = 20, lease: timedelta = SEND_LEASE
    ) -> list[LeasedDelivery]:
        """Deliveries due by ``now``, leased to this caller for ``lease``."""
        lease_ms = int(lease.total_seconds() * 1000)
        args: list[str | int] = [to_ms(now), limit, lease_ms]
        ids = cast(list[str], await self._client.eval("lease_due", [self._keys.webhooks], args))
        if not ids:
            return []
        async with self._client.guard("read webhook deliveries"):
            texts = await self._client.raw.mget([self._keys.webhook(i) for i in ids])
        found: list[LeasedDelivery] = []
        for delivery_id, text in zip(ids, cast(list[str | None], texts), strict=True):
            if text is None or text == FINISHED:  # expired, or finished by another sender
                await self.done(delivery_id)
                continue
            try:
                delivery = WebhookDelivery.model_validate_json(text)
            except ValidationError as exc:
                await self.done(delivery_id)
                raise CorruptRecordError(
                    self._keys.webhook(delivery_id), what_is_wrong(exc)
                ) from exc
            found.append(LeasedDelivery(delivery, leased_until_ms=to_ms(now) + lease_ms))
        return found

    async def retry(self, leased: LeasedDelivery, *, at: datetime) -> bool:
        """Count a failed attempt and make the delivery due again at ``at``, if it is still
        leased to this caller; False when its lease ran out and another sender took it over
        (and may have finished it, which stands)."""
        delivery = leased.delivery
        again = delivery.model_copy(update={"attempts": delivery.attempts + 1})
        keys = [self._keys.webhooks, self._keys.webhook(delivery.id)]
        args: list[str | int] = [
            delivery.id,
            leased.leased_until_ms,
            again.model_dump_json(),
            to_ms(at),
        ]
        return bool(await self._client.eval("webhook_retry", keys, args))

    async def done(self, delivery_id: str) -> None:
        """Finish a delivery (delivered, or given up): it is sent no more, and its id is kept
        for as long as it could have been sent, so the same event stored again (handled
        twice, or a request's items read in two batches) is not sent again."""
        async with self._client.guard("finish a webhook delivery"):
            pipe = self._client.raw.pipeline(transaction=True)
            pipe.set(self._keys.webhook(delivery_id), FINISHED, xx=True, keepttl=True)
            pipe.zrem(self._keys.webhooks, delivery_id)
            await pipe.execute()

    async def waiting(self) -> int:
        """Deliveries not yet delivered (for ``/metrics``)."""
        async with self._client.guard("count webhook deliveries"):
            return int(await self._client.raw.zcard(self._keys.webhooks))
