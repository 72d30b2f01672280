"""The outbox: stored interrupts whose card (or escalation step's card) Slack has not taken
yet, each handed to one poster at a time by a lease.

A post that fails leaves its entry due when its lease ends, and notes that due time on the
record (``outbox_waits``): while the entry still has it, nobody is posting it, so
``claim_waiting`` may hand it out at once (the app was just invited to its channel)
without racing a poster or the scheduler.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

from .epoch import to_ms
from .records import InterruptRecord
from .retention import millis
from .sweeps import POST_LEASE, DueSweeps


class Outbox(DueSweeps):
    """Claims, holds and releases of the outbox's entries; safe with several posters."""

    async def claim_outbox(
        self, now: datetime, *, limit: int = 20, lease: timedelta = POST_LEASE
    ) -> list[InterruptRecord]:
        """Pending records not yet posted (up to ``limit`` per shard), leased to this caller
        for ``lease``.

        Post each and call ``mark_posted``; one whose post fails comes back after the lease.
        """
        ids = await self._lease_due(self._keys.outbox, now, limit, lease)
        records, _ = await self._queries.many(ids)
        unposted = [
            r
            for r in records
            if r.state == "pending" and (not r.message_ts or r.escalation_unposted)
        ]
        await self._drop(self._keys.outbox, set(ids) - {r.id for r in unposted})
        return unposted

    async def claim_waiting(
        self, channel: str, now: datetime, *, limit: int = 100, lease: timedelta = POST_LEASE
    ) -> list[InterruptRecord]:
        """The pending records whose card for ``channel`` Slack refused and that wait for
        their lease to end (up to ``limit`` per shard), leased to this caller now, as
        ``claim_outbox`` leases them; one being posted by another caller is left to it."""
        async with self._client.guard("read the outbox"):
            pipe = self._client.pipeline()
            for shard in self._keys.all_shards:
                pipe.zrange(self._keys.outbox(shard), 0, limit - 1)
            found = await pipe.execute()
        ids = [str(rid) for members in found for rid in members]
        records, _ = await self._queries.many(ids)
        waiting = [r for r in records if r.state == "pending" and _unposted_in(r) == channel]
        token = secrets.token_hex(8)
        calls: list[tuple[list[str], list[str | int]]] = [
            (
                [self._outbox_of(r.id), self._keys.record(r.id)],
                [r.id, to_ms(now), millis(lease), token],
            )
            for r in waiting
        ]
        claimed = await self._client.eval_each("claim_waiting", calls) if calls else []
        return [r for r, got in zip(waiting, claimed, strict=True) if got == 1]

    async def post_failed(self, interrupt_id: str, error: str) -> bool:
        """Keep what Slack answered a failed post of the interrupt's card, for those who
        wait on it, until ``mark_posted``; nothing if it is gone or posted meanwhile. True
        for the card's first failed post."""
        args: list[str | int] = [interrupt_id, error[:200], secrets.token_hex(8)]
        keys = [self._keys.record(interrupt_id), self._outbox_of(interrupt_id)]
        first = await self._client.eval("post_failed", keys, args)
        return bool(first)

    async def repost_escalation(self, interrupt_id: str, *, at: datetime) -> None:
        """Put an escalated interrupt whose card Slack did not take in the outbox, from
        ``at``: ``claim_outbox`` hands it out until its card is posted."""
        keys = [self._outbox_of(interrupt_id), self._keys.record(interrupt_id)]
        await self._client.eval("outbox_wait", keys, [interrupt_id, to_ms(at)])

    async def hold_post(self, interrupt_id: str, *, until: datetime) -> None:
        """Keep an unposted interrupt out of ``claim_outbox`` until ``until``: its poster is
        still at it (a slow or rate-limited call), or Slack asked to wait that long."""
        async with self._client.guard("hold an outbox entry"):
            await self._client.raw.zadd(
                self._outbox_of(interrupt_id), {interrupt_id: to_ms(until)}, xx=True
            )

    def _outbox_of(self, interrupt_id: str) -> str:
        return self._keys.outbox(self._keys.shard_of_record(interrupt_id))

    async def _drop(self, index: Callable[[int], str], record_ids: set[str]) -> None:
        """Take ``record_ids`` (decided, or gone) off ``index``, which handed them out."""
        if not record_ids:
            return
        async with self._client.guard("drop done entries of an index"):
            pipe = self._client.pipeline()
            for rid in record_ids:
                pipe.zrem(index(self._keys.shard_of_record(rid)), rid)
            await pipe.execute()


def _unposted_in(record: InterruptRecord) -> str | None:
    """The channel of the record's card Slack has not taken: its own, or that of the
    escalation step it reached; None when both are posted (or it goes to a DM)."""
    if not record.message_ts:
        return record.channel
    if record.escalation_unposted:
        return record.reached_rungs[-1].channel or record.channel
    return None
