"""Interrupt records in Redis: create, post, expire, remind, cancel (and decide, from
``storage/decisions.py``).

Every change of a record is one Lua script, so a double click, a racing sweeper or a
crash between two commands can never leave a half-made decision. Reads are in
``storage/queries.py``.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from agent_runtime.interrupts import Decision

from .decisions import Decisions
from .epoch import to_ms
from .errors import (
    CorruptRecordError,
    DuplicateInterruptError,
    InvalidIdError,
    PendingLimitError,
    StorageResponseError,
)
from .ids import check_id, split_record_id
from .outbox import Outbox
from .records import InterruptRecord
from .requests import is_request_run, shard_share
from .retention import millis
from .sweeps import POST_LEASE

log = logging.getLogger(__name__)

GROUP_CHECK_EVERY = timedelta(minutes=5)
"""How often the members of a pending interrupt's user groups are checked again."""


@dataclass(frozen=True)
class Cancelled:
    """What ``cancel_run`` did: the pending interrupts it cancelled, and the records whose
    decisions were waiting for them and now never run."""

    ids: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return len(self.ids)


_CANCEL_TRIES = 3
"""Reads of a run's pending records before cancelling them gives up, each overtaken by a
change to the run."""


class InterruptStore(Decisions, Outbox):
    """Writes interrupt records; every method is one atomic step per record."""

    async def create_interrupt(
        self, record: InterruptRecord, *, post_lease: timedelta = POST_LEASE
    ) -> InterruptRecord:
        """Store a new pending record, index it and put it in the outbox, atomically."""
        await self.create_interrupts([record], post_lease=post_lease)
        return record

    async def create_interrupts(
        self,
        records: Sequence[InterruptRecord],
        *,
        post_lease: timedelta = POST_LEASE,
        pending_limit: int | None = None,
    ) -> None:
        """Store the pending interrupts of one run together, so none is decided alone first.

        The caller posts them: ``claim_outbox`` hands them out only ``post_lease`` after
        their creation, when that first post failed. DuplicateInterruptError (nothing
        written) when any of them already exists; for an external request with a
        ``pending_limit``, PendingLimitError (nothing written) when its client's requests
        would hold more pending records than that (``shard_share`` of it per shard). An
        external request's run starts in the same step with no job start, outcome or end
        kept, nor marks of them audited: any there were an earlier request's, made under
        its idempotency key.
        """
        if not records:
            return
        run_ids = {r.run_id for r in records}
        if len(run_ids) != 1:
            raise InvalidIdError(f"create_interrupts takes one run's records, got runs {run_ids}")
        if any(r.state != "pending" or r.votes for r in records):
            raise InvalidIdError("only pending records without votes can be created")
        now = min(to_ms(r.created_at) for r in records)
        k, run_id = self._keys, records[0].run_id
        shard = k.shard_of(run_id)
        keys = [k.run_pending(run_id), k.due(shard), k.reminders(shard), k.outbox(shard)]
        keys += [k.by_user(shard), k.by_channel(shard), k.audit_stream(shard)]
        keys += [k.group_checks(shard), k.run_creation(run_id), k.run_place(run_id)]
        keys += [k.run_job(run_id), k.run_ended(run_id), k.run_audited(run_id)]
        keys += [k.record(r.id) for r in records]
        client = records[0].requested_by if is_request_run(run_id) and pending_limit else ""
        args: list[str | int] = [
            now,
            millis(self._retention.pending),
            self._retention.audit_entries,
            millis(post_lease),
            millis(GROUP_CHECK_EVERY),
            secrets.token_hex(8),
            client,
            shard_share(pending_limit or 0, self._keys),
        ]
        for record in records:
            fields = record.to_hash()
            args.append(len(fields))
            for name, value in fields.items():
                args += [name, value]
        result = cast(list[str], await self._client.eval("create", keys, args))
        if result[0] == "exists":
            raise DuplicateInterruptError(
                f"interrupt {result[1]} is already stored; each interrupt is created once"
            )
        if result[0] == "full":
            raise PendingLimitError(client, limit=pending_limit or 0)
        log.info("stored interrupts %s", ", ".join(r.id for r in records))

    async def set_permalink(self, interrupt_id: str, permalink: str) -> None:
        """Keep the link to a posted interrupt's message (``chat.getPermalink``'s answer)."""
        await self._client.eval("set_permalink", [self._keys.record(interrupt_id)], [permalink])

    async def supersede(
        self,
        interrupt_id: str,
        *,
        by: str,
        now: datetime,
        over: str | None = None,
        stale_after: timedelta = timedelta(minutes=1),
    ) -> InterruptRecord | None:
        """Mark an approved interrupt (edited, or answered with a reply) whose precondition
        changed before it ran: it did not run, and interrupt ``by`` asks again; a mark by
        ``over``, a request never made, is taken over once ``stale_after`` old. The record,
        or None if it was not marked (not approved, its command started, or asked again
        by another first)."""
        args: list[str | int] = [
            by,
            to_ms(now),
            self._retention.audit_entries,
            over or "",
            millis(stale_after),
        ]
        job = self._keys.run_job(split_record_id(interrupt_id)[0])
        status, text = await self._transition("supersede", interrupt_id, args, extra_keys=[job])
        if status != "marked":
            return None
        log.info("interrupt %s changed since it was approved; %s asks again", interrupt_id, by)
        return InterruptRecord.from_json(self._keys.record(interrupt_id), text)

    async def unsupersede(self, interrupt_id: str, *, by: str, now: datetime) -> None:
        """Undo ``supersede`` by interrupt ``by``, which was not made: the approved
        interrupt is not asked again after all (audited); a mark by another is kept."""
        args: list[str | int] = [by, to_ms(now), self._retention.audit_entries]
        [status] = await self._transition("unsupersede", interrupt_id, args)
        if status == "undone":
            log.info("interrupt %s is not asked again: %s was refused", interrupt_id, by)

    async def set_escalation_message(
        self, interrupt_id: str, channel: str, ts: str, *, step: int, now: datetime
    ) -> bool:
        """Keep where the card of escalation step ``step`` was posted; its clicks then
        decide the interrupt (and the outbox, if it was there, posts it no more). False when
        the record is gone (or was never escalated)."""
        check_id("channel", channel)
        check_id("message ts", ts)
        place = self._keys.run_place(split_record_id(interrupt_id)[0])
        audit = self._keys.audit_stream(self._keys.shard_of_record(interrupt_id))
        keys = [self._keys.record(interrupt_id), self._outbox_of(interrupt_id), place, audit]
        args: list[str | int] = [channel, ts, to_ms(now), self._retention.audit_entries, step]
        return bool(await self._client.eval("set_escalation_message", keys, args))

    async def escalation_post_failed(
        self, interrupt_id: str, error: str, *, step: int, now: datetime
    ) -> bool:
        """Keep what Slack answered a failed post of the card of escalation step ``step``,
        the one the interrupt reached, until it is posted (audited once a step). True for
        the step's first failed post; False too when it is gone, decided, posted or on to
        another step meanwhile."""
        args: list[str | int] = [interrupt_id, error[:200], to_ms(now)]
        args += [self._retention.audit_entries, step]
        keys = self._transition_keys(interrupt_id)
        return bool(await self._client.eval("escalation_post_failed", keys, args))

    async def redraw_later(self, interrupt_id: str, *, at: datetime) -> None:
        """Queue a redraw of the interrupt's cards from ``at``: Slack did not take the last
        one. ``claim_redraws`` hands it out until ``redrawn`` is called."""
        key = self._keys.redraws(self._keys.shard_of_record(interrupt_id))
        async with self._client.guard("queue a redraw"):
            await self._client.raw.zadd(key, {interrupt_id: to_ms(at)})

    async def claim_redraws(
        self, now: datetime, *, limit: int = 20, lease: timedelta = POST_LEASE
    ) -> list[tuple[InterruptRecord, datetime]]:
        """Records whose cards are due to be redrawn (up to ``limit`` per shard), each
        with the end of its lease to this caller; one not ``redrawn`` comes back then."""
        ids = await self._lease_due(self._keys.redraws, now, limit, lease)
        records, gone = await self._queries.many(ids)
        await self._drop(self._keys.redraws, set(gone))
        return [(record, now + lease) for record in records]

    async def redrawn(self, interrupt_id: str, *, leased_until: datetime) -> None:
        """Take a redraw claimed until ``leased_until`` off the queue, unless it was queued
        again meanwhile (a later step Slack did not take either)."""
        key = self._keys.redraws(self._keys.shard_of_record(interrupt_id))
        await self._client.eval("unlease", [key], [interrupt_id, to_ms(leased_until)])

    async def claim_group_checks(
        self, now: datetime, *, limit: int = 50, every: timedelta = GROUP_CHECK_EVERY
    ) -> list[InterruptRecord]:
        """Pending records with user groups whose members are due to be checked again (each
        handed to one caller, then due again ``every`` later); decided ones leave the list."""
        ids = await self._lease_due(self._keys.group_checks, now, limit, every)
        records, _ = await self._queries.many(ids)
        pending = [r for r in records if r.state == "pending"]
        await self._drop(self._keys.group_checks, set(ids) - {r.id for r in pending})
        return pending

    async def mark_posted(
        self,
        interrupt_id: str,
        channel: str,
        ts: str,
        *,
        thread_ts: str | None = None,
        permalink: str | None = None,
        now: datetime,
    ) -> InterruptRecord | None:
        """Record the Slack message an interrupt was posted as (and its link, when known);
        None for an unknown id."""
        check_id("channel", channel)
        check_id("message ts", ts)
        if thread_ts is not None:
            check_id("thread ts", thread_ts)
        args: list[str | int] = [channel, ts, thread_ts or "", to_ms(now)]
        args += [self._retention.audit_entries, permalink or ""]
        place = self._keys.run_place(split_record_id(interrupt_id)[0])
        result = await self._transition("mark_posted", interrupt_id, args, extra_keys=[place])
        if result[0] == "unknown":
            return None
        log.info("interrupt %s posted in %s at %s", interrupt_id, channel, ts)
        return self._record(interrupt_id, result[2:])

    async def set_group_members(
        self,
        record: InterruptRecord,
        members: Sequence[str],
        *,
        now: datetime,
        asked_by: str,
        step_members: Sequence[Sequence[str]] | None = None,
    ) -> InterruptRecord | None:
        """Replace the stored members of ``record``'s user groups with ``members`` (Slack's
        current list), and of its escalation steps' groups with ``step_members`` (one
        list per step; None keeps them), and re-index who may decide; the updated record,
        or None when it is no longer pending."""
        steps = step_members
        if steps is None:
            steps = [rung.group_members for rung in record.policy.rungs]
        policy = record.policy.with_members([members, *steps])
        policy_json = json.dumps(policy.model_dump(mode="json"), separators=(",", ":"))
        args: list[str | int] = [
            policy_json,
            to_ms(now),
            self._retention.audit_entries,
            asked_by,
        ]
        result = await self._transition("set_group_members", record.id, args)
        if result[0] != "updated":
            return None
        log.info("interrupt %s: members of %s refreshed", record.id, policy.allowed_groups)
        return self._record(record.id, result[2:])

    async def cancel_run(
        self,
        run_id: str,
        *,
        reason: str,
        now: datetime,
        by: str | None = None,
        lost: str | None = None,
    ) -> Cancelled:
        """Cancel every pending interrupt of a run in one atomic step (no resume follows, and
        no decision lands between two of them). Decisions that waited for them never run:
        an agent's run marks them withdrawn by ``by``; every record keeps ``lost``, the
        request whose loss from Redis ended the run, when that is why."""
        decision = json.dumps(Decision.reject(reason).to_dict(), separators=(",", ":"))
        args: list[str | int] = [
            by or "",
            to_ms(now),
            decision,
            millis(self._retention.decided),
            self._retention.audit_entries,
            secrets.token_hex(8),
            lost or "",
        ]
        k = self._keys
        for _ in range(_CANCEL_TRIES):
            async with self._client.guard("cancel run"):
                pipe = self._client.pipeline()
                pipe.smembers(k.run_pending(run_id))
                pipe.smembers(k.run_decided(run_id))
                members, waiting = await pipe.execute()
            pending = sorted(cast(set[str], members))
            decided = sorted(cast(set[str], waiting))
            if not pending:
                return Cancelled()
            keys = self._transition_keys(pending[0])
            keys += [k.record(rid) for rid in (*pending[1:], *decided)]
            reply = cast(
                list[str],
                await self._client.eval("cancel", keys, [*args, len(pending), *pending, *decided]),
            )
            if reply[0] == "moved":  # a decision or a new round changed the run meanwhile
                continue
            marker = reply.index("gone")
            damaged, gone = reply[2:marker], reply[marker + 1 :]
            for rid in damaged:
                log.error("%s", CorruptRecordError(k.record(rid), "its policy is not JSON"))
            log.info("run %s: cancelled %s pending interrupts", run_id, reply[1])
            cancelled = tuple(rid for rid in pending if rid not in (*damaged, *gone))
            return Cancelled(ids=cancelled, not_run=tuple(decided))
        raise StorageResponseError(f"run {run_id} kept changing while it was being cancelled")
