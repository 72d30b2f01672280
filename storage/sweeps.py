"""The sweeps over the time-ordered indexes: expiries, ends of undo windows, reminders,
leasing the due members of an index, and finding the pending records Redis lost. Each
reads every shard in one pipeline (on a cluster, the shards' nodes answer in parallel)
and handles each record in its own step.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Literal, cast

from agent_runtime.interrupts import Decision

from .client import RedisClient
from .epoch import from_ms, to_ms
from .errors import CorruptRecordError
from .ids import is_record_id, split_record_id
from .keys import Keys
from .outcomes import ExpiryOutcome, ExpiryResult, GoneScan, LostRecord, ReminderDue
from .records import InterruptRecord
from .retention import millis
from .transitions import RecordTransitions

log = logging.getLogger(__name__)

CLICKS_HOLD_EXPIRY = timedelta(minutes=10)
"""How long acknowledged clicks no decider has taken may hold a due expiry back."""
APPROVED_BY_DEFAULT = json.dumps(
    Decision.approve().to_dict() | {"message": "nobody decided in time"}, separators=(",", ":")
)
"""The decision of a request whose policy approves it when nobody decides in time."""


LOST = (
    "its record was lost from Redis while pending (evicted, or deleted by hand): "
    "it can no longer be decided"
)
"""What the log line and the audit entry of a request whose record Redis lost say."""

POST_LEASE = timedelta(seconds=30)
"""How long a new interrupt (or an escalation step's card) is its poster's to post before
the outbox hands it out."""
GRANT_LEASE = timedelta(seconds=30)
"""How long the sweep that made an "Approve and trust" final has to store its grant (and
so queue its run's resume) before another sweep is handed the decision to do it."""


class DueSweeps(RecordTransitions):
    """Expiry and reminder sweeps, safe to run from several schedulers at once."""

    async def expire_due(
        self, now: datetime, *, limit: int = 100
    ) -> list[ExpiryResult | LostRecord]:
        """Expire (or escalate once) up to ``limit`` interrupts per shard whose time is up,
        and make final the decisions whose undo window has ended (``released``: the run
        resumes, once the grant of an "Approve and trust" is stored: ``grant_stored``; one
        not stored within ``GRANT_LEASE`` is ``released`` again). An approval a trust
        grant made whose grant was revoked or ended by then is taken back (``reopened``:
        it waits for a person). Each interrupt is handled once, whoever else sweeps; so is
        a pending one whose record Redis lost (``LostRecord``, audited as ``lost``).
        """
        due = await self._due(self._keys.due, now, limit)
        results: list[ExpiryResult | LostRecord] = []
        for rid, result in zip(due, await self._each("expire", due, now), strict=True):
            if result is None:
                await self._drop_corrupt(self._keys.due, rid)
            elif result[0] in ("missing", "lost"):
                if (lost := await self._gone(rid, result)) is not None:
                    results.append(lost)
            elif result[0] in ("expired", "escalated", "released", "rereleased", "reopened"):
                again = result[0] == "rereleased"
                outcome = cast(ExpiryOutcome, "released" if again else result[0])
                log.info("interrupt %s %s%s", rid, outcome, " again" if again else "")
                if (record := self._read_back(rid, result[2:])) is not None:
                    results.append(
                        ExpiryResult(
                            outcome=outcome,
                            record=record,
                            resume_job_id=result[1] or None,
                            again=again,
                        )
                    )
        return results

    async def expire_late(self, rid: str, now: datetime, *, own_clicks: int) -> ExpiryResult | None:
        """Make the expiry the sweep would make of ``rid`` now (expired, approved by
        default, or escalated) for a decision that came after its deadline, so what its
        maker is told has happened; once, whoever comes first. ``own_clicks``: the
        decision's own entries waiting in the click stream, which do not hold the expiry
        back as they hold the sweep back; other clicks waiting (made in time, decided
        first) do. None when nothing was made now: made before, clicks made in time wait,
        the record is held or gone (left to the sweep), or Redis could not run it."""
        [made] = await self.expire_late_each([rid], now, own_clicks=own_clicks)
        return made

    async def expire_late_each(
        self, rids: Sequence[str], now: datetime, *, own_clicks: int
    ) -> list[ExpiryResult | None]:
        """``expire_late`` for each of ``rids`` (a batch card's items, clicked after their
        deadline), in one pipeline: each record's expiry in its own step, as the sweep's."""
        made: list[ExpiryResult | None] = []
        for rid, result in zip(
            rids, await self._each("expire", list(rids), now, own_clicks=own_clicks), strict=True
        ):
            if result is None or result[0] not in ("expired", "escalated"):
                made.append(None)
                continue
            outcome = cast(Literal["expired", "escalated"], result[0])
            log.info("interrupt %s %s at a click after its deadline", rid, outcome)
            record = self._read_back(rid, result[2:])
            made.append(
                None
                if record is None
                else ExpiryResult(outcome=outcome, record=record, resume_job_id=result[1] or None)
            )
        return made

    async def claim_gone(self, rid: str, now: datetime) -> LostRecord | None:
        """The pending record ``rid`` that a read found gone, claimed as the sweep claims
        it: a ``LostRecord`` for the one caller that claims it first, else None (claimed
        before, not pending, or there after all: damaged, say, and left to the sweep)."""
        async with self._client.guard("read whether a record is gone while due"):
            pipe = self._client.pipeline()
            pipe.exists(self._keys.record(rid))
            pipe.zscore(self._keys.due(self._keys.shard_of_record(rid)), rid)
            there, due = await pipe.execute()
        if there or due is None:  # only a pending record has a due entry
            return None
        [result] = await self._each("expire", [rid], now)
        if result is None or result[0] not in ("missing", "lost"):
            return None
        return await self._gone(rid, result)

    async def scan_gone(self, cursors: Mapping[int, int], *, count: int = 500) -> GoneScan:
        """Read about ``count`` entries of each shard's due index from its cursor (shard:
        cursor, 0 to start) and find those whose record is gone: the pending records Redis
        lost, whose time may be hours off. Only reads, in two pipelines (one per shard's
        node on a cluster); a shard whose node did not answer is logged and left for the
        next round (an error only when none answered)."""
        shards = list(cursors)
        async with self._client.guard("read the due times for records gone"):
            pipe = self._client.pipeline()
            for shard in shards:
                pipe.zscan(self._keys.due(shard), cursors[shard], count=count)
            pages = await pipe.execute(raise_on_error=False)
            if pages and all(isinstance(page, Exception) for page in pages):
                raise pages[0]
            left: dict[int, int] = {}
            rids: list[str] = []
            for shard, page in zip(shards, pages, strict=True):
                if isinstance(page, Exception):
                    log.warning("%s not read this time: %s", self._keys.due(shard), page)
                    continue
                cursor, members = page
                rids += [rid for rid, _ in members if is_record_id(rid)]
                if cursor:
                    left[shard] = int(cursor)
            pipe = self._client.pipeline()
            for rid in rids:
                pipe.exists(self._keys.record(rid))
            there = await pipe.execute() if rids else []
        gone = tuple(rid for rid, found in zip(rids, there, strict=True) if not found)
        return GoneScan(gone=gone, cursors=left)

    async def _gone(self, rid: str, result: list[str]) -> LostRecord | None:
        """Take a record found gone off the pending lists; the ``LostRecord`` when this
        call claimed it (``lost``), logged."""
        await self._forget_gone(rid)
        if result[0] != "lost":
            return None
        run_id = split_record_id(rid)[0]
        log.error("request %s (run %s): %s", rid, run_id, LOST)
        place = dict(zip(result[2::2], result[3::2], strict=True))
        return LostRecord(record_id=rid, run_id=run_id, place=place)

    async def next_due(self) -> datetime | None:
        """When the next expiry (or end of an undo window) falls due; None when none does."""
        async with self._client.guard("read the next due time"):
            pipe = self._client.pipeline()
            for shard in self._keys.all_shards:
                pipe.zrange(self._keys.due(shard), 0, 0, withscores=True)
            firsts = await pipe.execute()
        scores = [int(first[0][1]) for first in firsts if first]
        return from_ms(min(scores)) if scores else None

    async def due_reminders(self, now: datetime, *, limit: int = 100) -> list[ReminderDue]:
        """Reminders due by ``now``, each handed to exactly one caller, next one scheduled.

        A reminder taken by a caller that crashes before sending it is not sent again.
        """
        due = await self._due(self._keys.reminders, now, limit)
        reminders: list[ReminderDue] = []
        for rid, result in zip(due, await self._each("remind", due, now), strict=True):
            if result is None:
                await self._drop_corrupt(self._keys.reminders, rid)
            elif result[0] == "due" and (record := self._read_back(rid, result[2:])) is not None:
                reminders.append(ReminderDue(number=int(result[1]), record=record))
        return reminders

    def _read_back(self, rid: str, flat: Sequence[str]) -> InterruptRecord | None:
        """The record a sweep's step handed back; None (logged) when it is damaged where the
        step does not look, so the sweep reports the other records it handled."""
        try:
            return self._record(rid, flat)
        except CorruptRecordError as exc:
            log.error("%s", exc)
            return None

    async def _lease_due(
        self, index: Callable[[int], str], now: datetime, limit: int, lease: timedelta
    ) -> list[str]:
        """Lease the members of every shard's ``index`` due by ``now`` (up to ``limit``
        per shard) to this caller for ``lease``."""
        leased = await lease_due(self._client, self._keys, index, now, limit, lease)
        return [member for members in leased for member in members]

    async def _due(self, index: Callable[[int], str], now: datetime, limit: int) -> list[str]:
        """The members of every shard's ``index`` due by ``now``; a shard whose node did not
        answer is logged and left for the next sweep (an error only when none answered)."""
        async with self._client.guard("read due times"):
            pipe = self._client.pipeline()
            for shard in self._keys.all_shards:
                pipe.zrangebyscore(index(shard), "-inf", to_ms(now), 0, limit)
            found = await pipe.execute(raise_on_error=False)
            if all(isinstance(ids, Exception) for ids in found):
                raise found[0]
        for shard, ids in zip(self._keys.all_shards, found, strict=True):
            if isinstance(ids, Exception):
                log.warning("%s not read this time: %s", index(shard), ids)
        return [rid for ids in found if not isinstance(ids, Exception) for rid in ids]

    async def _forget_gone(self, rid: str) -> None:
        """Take a record Redis no longer has (gone while pending) off the pending lists, so
        counts and lists stop showing it and its client's cap stops counting it. Their
        members end with the record id: found by an incremental scan, which never holds
        Redis up the way one long script would."""
        shard = self._keys.shard_of_record(rid)
        async with self._client.guard("take a record that is gone off the pending lists"):
            for index in (
                self._keys.by_user(shard),
                self._keys.by_channel(shard),
                self._keys.by_open_channel(shard),
                self._keys.by_client(shard),
            ):
                found = self._client.raw.zscan_iter(index, match=f"*\0{rid}", count=1000)
                gone = [member async for member, _ in found]
                if gone:
                    await self._client.raw.zrem(index, *gone)

    async def _drop_corrupt(self, index: Callable[[int], str], rid: str) -> None:
        """Take a corrupt record out of a sweep's index so it cannot stall every later sweep."""
        async with self._client.guard("drop corrupt record from index"):
            await self._client.raw.zrem(index(self._keys.shard_of_record(rid)), rid)

    async def _each(
        self, script: str, rids: list[str], now: datetime, *, own_clicks: int | None = None
    ) -> list[list[str] | None]:
        args: list[str | int] = [to_ms(now)]
        if script == "expire":
            r = self._retention
            args += [
                millis(r.decided),
                r.resume_entries,
                r.audit_entries,
                millis(CLICKS_HOLD_EXPIRY),
                APPROVED_BY_DEFAULT,
                millis(POST_LEASE),
            ]
        # A sweep sent again after its reply was lost is answered the same: the expiries,
        # releases and reminders it made are reported, not skipped as done already.
        args.append(secrets.token_hex(8))
        if script == "expire":
            args += [LOST, "" if own_clicks is None else own_clicks, millis(GRANT_LEASE)]
        return await self._pipelined(script, rids, args)


async def lease_due(
    client: RedisClient,
    keys: Keys,
    index: Callable[[int], str],
    now: datetime,
    limit: int,
    lease: timedelta,
) -> list[list[str]]:
    """Lease the members of every shard's sorted set ``index`` due by ``now`` (up to
    ``limit`` per shard) to this caller for ``lease``: one list per shard, in shard order.

    A shard Redis could not answer for (its node stalled or down) is logged and empty: the
    members leased on the others are handed out, not left leased and unhandled. Only when
    no shard answered is it an error."""
    args: list[str | int] = [to_ms(now), limit, millis(lease)]
    calls = [([index(shard)], args) for shard in keys.all_shards]
    replies = await client.eval_each("lease_due", calls)
    failed = [reply for reply in replies if isinstance(reply, Exception)]
    if len(failed) == len(replies):
        async with client.guard("lease due members"):
            raise failed[0]
    leased: list[list[str]] = []
    for shard, reply in zip(keys.all_shards, replies, strict=True):
        if isinstance(reply, Exception):
            log.warning("%s not read this time: %s", index(shard), reply)
            reply = []
        leased.append(cast(list[str], reply))
    return leased
