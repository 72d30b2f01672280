"""Reading interrupt records: one by id, and the pending ones by user, channel or run.

Listings read an index page (and its counts) of every shard, for every user or channel
asked about, in one pipeline, merge them, then read the records in a second (two round
trips whatever the number of pending interrupts; a cursor past the end of a list that got
shorter takes two more, to show its last page); the requests open to many channels are
picked out of each shard's index, read at once, instead (see ``owner_index``). A corrupt
record is logged and left out of a listing; ``get`` raises CorruptRecordError.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from .client import RedisClient
from .damage import what_is_wrong
from .errors import CorruptRecordError, InvalidIdError
from .ids import check_id, is_record_id, split_record_id
from .keys import Keys
from .outcomes import Page
from .owner_index import OwnerIndex
from .records import InterruptRecord

log = logging.getLogger(__name__)


def parse_flat(flat: Sequence[str]) -> dict[str, str]:
    """A hash from the flat ``[field, value, ...]`` list HGETALL returns inside Lua."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


@dataclass(frozen=True)
class Batch:
    """A batch card's items as stored: every item's id in the card's order, the records
    read back (in that order), and the items whose record is damaged, each with why."""

    order: tuple[str, ...]
    records: list[InterruptRecord]
    damaged: tuple[tuple[str, CorruptRecordError], ...] = field(default=())
    lost: tuple[str, ...] = ()
    """The items gone that a job's request's place names lost while pending."""

    @classmethod
    def of(cls, records: Sequence[InterruptRecord]) -> Batch:
        """The batch of ``records`` (its lead first), all read back."""
        return cls(order=records[0].batch_items or (records[0].id,), records=list(records))


class InterruptQueries:
    """Read-only access to interrupt records and their pending indexes."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.damaged_seen = 0
        """Records read back damaged by this process (an operator's metric)."""
        self._client = client
        self._keys = keys

    async def get(self, interrupt_id: str) -> InterruptRecord | None:
        """The record, None when unknown (or the id is malformed); CorruptRecordError if bad."""
        try:
            key = self._keys.record(interrupt_id)
        except InvalidIdError:
            return None
        async with self._client.guard("read interrupt"):
            try:
                fields = await self._client.raw.hgetall(key)
            except Exception as exc:
                if "WRONGTYPE" in str(exc):
                    raise CorruptRecordError(key, str(exc)) from exc
                raise
        if not fields:
            return None
        return InterruptRecord.from_hash(key, cast(dict[str, str], fields))

    async def pending_for_user(
        self, user_id: str, *, limit: int = 50, cursor: str | None = None
    ) -> Page:
        """Pending interrupts ``user_id`` may decide (allowed directly or via a group), oldest
        first. Interrupts open to a whole channel are listed by channel only."""
        return await self._page(self._keys.by_user, [check_id("user", user_id)], limit, cursor)

    async def pending_for_channel(
        self, channel: str, *, limit: int = 50, cursor: str | None = None
    ) -> Page:
        """Pending interrupts posted (or to be posted) in ``channel``, oldest first."""
        owners = [check_id("channel", channel)]
        return await self._page(self._keys.by_channel, owners, limit, cursor)

    async def pending_open_in(
        self, channels: Sequence[str], *, limit: int = 50, cursor: str | None = None
    ) -> Page:
        """Pending interrupts anyone in their channel may decide, in any of ``channels``,
        oldest first: two round trips and a few commands however many channels are asked
        about; a third, one channel at a time, only for the channels past what was read of
        a shard whose index holds more than ``owner_index.read_up_to`` entries."""
        owners = [check_id("channel", channel) for channel in dict.fromkeys(channels)]
        index = self._keys.by_open_channel
        return await self._page(index, owners, limit, cursor, read_first=True)

    async def pending_for_run(self, run_id: str) -> list[InterruptRecord]:
        """The run's pending interrupts, in id order."""
        async with self._client.guard("read run"):
            members = await self._client.raw.smembers(self._keys.run_pending(run_id))
        ids = sorted(cast(set[str], members))
        records, _ = await self.many(ids)
        return [r for r in records if r.state == "pending"]

    async def never_stored(self, run_id: str, ids: Sequence[str]) -> bool:
        """Whether none of the records ``ids`` of run ``run_id`` was ever stored: none is
        there, nor listed pending in the run (as one Redis lost while pending still is)."""
        async with self._client.guard("read whether records were stored"):
            pipe = self._client.pipeline()
            pipe.smembers(self._keys.run_pending(run_id))
            for rid in ids:
                pipe.exists(self._keys.record(rid))
            pending, *there = await pipe.execute()
        return not any(there) and not set(ids) & cast(set[str], pending)

    async def pending_count(self) -> int:
        """How many pending interrupts have a channel (one ZCARD, for the metrics gauge).

        An interrupt bound for a direct message is counted once it has been posted.
        """
        async with self._client.guard("count pending interrupts"):
            pipe = self._client.pipeline()
            for shard in self._keys.all_shards:
                pipe.zcard(self._keys.by_channel(shard))
            return sum(int(count) for count in await pipe.execute())

    async def batch(self, record: InterruptRecord) -> list[InterruptRecord]:
        """The items of the batch card ``record`` is on, in the card's order (the lead
        first); just ``record`` when it is on no batch (or its lead is gone)."""
        return (await self.batch_card(record)).records or [record]

    async def batch_card(self, record: InterruptRecord) -> Batch:
        """The batch card ``record`` is on (just ``record`` when on none); see ``led_by``.
        Its lead gone, the items as its agent's run kept them (just ``record`` when the run
        kept none)."""
        if record.batch is None:
            return Batch.of([record])
        if record.id == record.batch:
            return await self._read_batch(record.batch_items or (record.id,))
        if (batch := await self.led_by(record.batch)) is not None:
            return batch
        order = await self._kept_items(record.run_id, record.batch)
        return await self._read_batch(order) if order else Batch.of([record])

    async def _kept_items(self, run_id: str, lead_id: str) -> tuple[str, ...]:
        """The items of the batch ``lead_id`` leads as its run's place keeps them; none
        when it keeps none (or not a list of record ids)."""
        async with self._client.guard("read a batch's kept items"):
            raw = await self._client.raw.hget(self._keys.run_place(run_id), f"batch:{lead_id}")
        try:
            ids = json.loads(raw or "null")
        except ValueError:
            return ()
        if not isinstance(ids, list) or not all(is_record_id(str(i)) for i in ids):
            return ()
        return tuple(str(i) for i in ids)

    async def led_by(self, lead_id: str) -> Batch | None:
        """The batch card ``lead_id`` leads; None when it leads none (or is gone). A lead
        whose record is damaged still lists its items (unless that list is the damage),
        so the others are drawn and decided; CorruptRecordError when it is."""
        try:
            lead = await self.get(lead_id)
        except CorruptRecordError:
            return await self._read_batch(await self._batch_items(lead_id))
        if lead is None or lead.batch != lead.id:
            return None
        return await self._read_batch(lead.batch_items or (lead.id,))

    async def _batch_items(self, lead_id: str) -> tuple[str, ...]:
        """The item ids a damaged lead lists, read alone; CorruptRecordError again when
        they cannot be (that list is what is damaged)."""
        key = self._keys.record(lead_id)
        async with self._client.guard("read a batch's items"):
            try:
                raw = await self._client.raw.hget(key, "batch_items")
            except Exception as exc:
                if "WRONGTYPE" in str(exc):
                    raise CorruptRecordError(key, str(exc)) from exc
                raise
        try:
            ids = json.loads(raw or "null")
        except ValueError as exc:
            raise CorruptRecordError(key, f"batch_items: {what_is_wrong(exc)}") from exc
        if not isinstance(ids, list) or not ids or not all(is_record_id(str(i)) for i in ids):
            raise CorruptRecordError(key, "batch_items: not a list of record ids")
        return tuple(ids)

    async def _read_batch(self, order: tuple[str, ...]) -> Batch:
        """The items ``order`` names, read back; one not read, damaged or gone, is told
        apart by reading it alone."""
        records, unreadable = await self.many(order)
        damaged, gone = [], []
        for rid in unreadable:
            try:
                await self.get(rid)
                gone.append(rid)
            except CorruptRecordError as exc:
                damaged.append((rid, exc))
        lost = await self._lost_of(gone) if gone else ()
        return Batch(order=order, records=records, damaged=tuple(damaged), lost=lost)

    async def _lost_of(self, gone: list[str]) -> tuple[str, ...]:
        """Those of the records ``gone`` (of one run) its place names lost while pending."""
        place = self._keys.run_place(split_record_id(gone[0])[0])
        async with self._client.guard("read which items were lost"):
            found = await self._client.raw.hmget(place, [f"lost:{rid}" for rid in gone])
        return tuple(rid for rid, at in zip(gone, found, strict=True) if at is not None)

    async def many(self, ids: Sequence[str]) -> tuple[list[InterruptRecord], list[str]]:
        """Records by id in one round trip: (the readable ones, the ids missing or corrupt)."""
        keys = [self._keys.record(i) for i in ids]
        async with self._client.guard("read interrupts"):
            pipe = self._client.pipeline()
            for key in keys:
                pipe.hgetall(key)
            replies = await pipe.execute(raise_on_error=False)
            # Only WRONGTYPE says the record is damaged, as in ``get``; any other error (a
            # node that timed out, dropped the connection, or lost its slots) fails the read.
            for reply in replies:
                if isinstance(reply, Exception) and "WRONGTYPE" not in str(reply):
                    raise reply
        records: list[InterruptRecord] = []
        unreadable: list[str] = []
        for rid, key, reply in zip(ids, keys, replies, strict=True):
            try:
                if isinstance(reply, Exception):
                    raise CorruptRecordError(key, str(reply))
                if not reply:
                    unreadable.append(rid)
                    continue
                records.append(InterruptRecord.from_hash(key, cast(dict[str, str], reply)))
            except CorruptRecordError as exc:
                log.error("%s", exc)
                self.damaged_seen += 1
                unreadable.append(rid)
        return records, unreadable

    async def _page(
        self,
        index: Callable[[int], str],
        owners: Sequence[str],
        limit: int,
        cursor: str | None,
        *,
        read_first: bool = False,
        clamp: bool = True,
    ) -> Page:
        # Members are "owner \0 created_ms \0 record_id", so one owner's are contiguous and
        # in creation order in each shard; merged, the first ``limit`` of all owners' and
        # shards' pages are the page. The cursor is the last one's "created_ms \0 record_id".
        after = cursor if cursor and is_cursor(cursor) else None
        entries = OwnerIndex(
            self._client, index, shards=self._keys.all_shards, owners=owners, read_first=read_first
        )
        pages, total, before = await entries.pages(after, limit)
        members = sorted((m for page in pages for m in page), key=_position)[:limit]
        if after and not members and total and clamp:
            # Nothing is left past the cursor (that page's entries were decided): the list
            # is shorter now, so its last page (last ``limit`` entries) is shown instead.
            tail = sorted((m for t in await entries.tails(limit + 1) for m in t), key=_position)
            start = tail[-(limit + 1)].split("\0", 1)[1] if len(tail) > limit else None
            return await self._page(index, owners, limit, start, read_first=read_first, clamp=False)
        ids = [m.rsplit("\0", 1)[1] for m in members]
        valid = [i for i in ids if is_record_id(i)]
        records, unreadable = await self.many(valid)
        gone = [m for m in members if m.rsplit("\0", 1)[1] in unreadable]
        if gone:
            # Index entries whose record expired by TTL, was removed or is damaged: clean
            # them lazily, and say so (a damaged one was logged and counted above).
            listed = owners[0] if len(owners) == 1 else f"{len(owners)} channels"
            log.warning("%d unreadable records left the pending list of %s", len(gone), listed)
            async with self._client.guard("clean index"):
                pipe = self._client.pipeline()
                for member in gone:
                    rid = member.rsplit("\0", 1)[1]
                    pipe.zrem(index(self._keys.shard_of_record(rid)), member)
                await pipe.execute()
        pending = tuple(r for r in records if r.state == "pending")
        more = total - before > len(members)
        next_cursor = members[-1].split("\0", 1)[1] if more and members else None
        return Page(
            records=pending, next_cursor=next_cursor, before=before, total=total, after=after
        )


_POSITION = re.compile(r"[0-9]{1,15}\0[A-Za-z0-9_.:\-/]{1,257}")
"""A page cursor: the ``created_ms \0 record_id`` of the last entry of the page before."""


def is_cursor(value: str) -> bool:
    """Whether ``value`` is a page cursor (else a listing starts from its first page)."""
    return _POSITION.fullmatch(value) is not None


def _position(member: str) -> tuple[int, str]:
    """Where an index member falls in a merged list: by creation time, then record id."""
    created, rid = member.split("\0")[-2:]
    return int(created) if created.isdigit() else 0, rid
