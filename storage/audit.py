"""The audit stream: every transition of every interrupt (who, what, when, where).

On Redis Cluster each shard has its own stream, holding its runs' entries; reading the
trail merges them in the order the entries were added.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from .client import RedisClient
from .consumer_group import stream_order
from .epoch import from_ms, to_ms
from .keys import Keys
from .requests import is_request_run
from .retention import millis

if TYPE_CHECKING:
    from .records import InterruptRecord

MARKS_KEPT = timedelta(days=7)
"""How long a run remembers which tool outcomes it audited: as long as a resume of it may
be retried (``ResumeQueue``'s applied versions)."""
APPEND_KEPT = timedelta(minutes=1)
"""How long an appended entry's token answers a call sent again after its reply was lost."""


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One audit event; ``user_id`` is None for the system (expiry, escalation)."""

    event: str
    record_id: str
    run_id: str
    at: datetime
    user_id: str | None = None
    channel: str | None = None
    message_ts: str | None = None
    detail: str = ""
    entry_id: str | None = None
    shard: int | None = None

    @classmethod
    def on_record(
        cls,
        record: InterruptRecord,
        event: str,
        at: datetime,
        *,
        user_id: str | None = None,
        detail: str = "",
    ) -> AuditEntry:
        """An entry about ``record`` (its run, and where its card is)."""
        return cls(
            event=event,
            record_id=record.id,
            run_id=record.run_id,
            at=at,
            user_id=user_id,
            channel=record.channel,
            message_ts=record.message_ts,
            detail=detail,
        )

    @property
    def ref(self) -> str | None:
        """The entry's id among every shard's (``<stream id>.<shard>`` on a cluster): a
        cursor for ``AuditLog.read``, and unique, so a webhook delivery is named by it."""
        if self.entry_id is None or self.shard is None:
            return self.entry_id
        return f"{self.entry_id}.{self.shard}"


class AuditLog:
    """Appends to and reads the audit stream; the Lua transitions append their own entries."""

    def __init__(self, client: RedisClient, keys: Keys, *, max_entries: int) -> None:
        self._client = client
        self._keys = keys
        self._max_entries = max_entries

    async def append(self, entry: AuditEntry) -> str:
        """Add an entry the bot observed (a message update, a repost); its stream id."""
        shard = self._shard(entry)
        keys = [self._keys.audit_append(shard, secrets.token_hex(8)), *self._streams(entry)]
        args: list[str | int] = [millis(APPEND_KEPT), self._max_entries]
        args += [part for pair in _fields(entry).items() for part in pair]
        return cast(str, await self._client.eval("audit_append", keys, args))

    async def append_once(self, entry: AuditEntry, *, once: str) -> str | None:
        """Add ``entry`` unless an entry of its run was added ``once`` before (a tool call's
        outcome, told by the worker that ran it or by the one that caught its run up);
        its stream id, or None when it was added before (not by this call, sent again
        after its reply was lost)."""
        keys = [self._keys.run_audited(entry.run_id), *self._streams(entry)]
        args: list[str | int] = [once, millis(MARKS_KEPT), self._max_entries, secrets.token_hex(8)]
        args += [part for pair in _fields(entry).items() for part in pair]
        appended = await self._client.eval("audit_once", keys, args)
        return cast(str, appended) or None

    def in_script(self, entry: AuditEntry) -> tuple[list[str], list[str | int]]:
        """What another step's script needs to add ``entry`` along with its own writes: the
        streams it goes to (in its run's slot), and the trail's cap then its field pairs."""
        args: list[str | int] = [self._max_entries]
        return self._streams(entry), args + [p for pair in _fields(entry).items() for p in pair]

    def _shard(self, entry: AuditEntry) -> int:
        # An entry of no run (an approver away, a setting) goes to the first shard.
        return self._keys.shard_of(entry.run_id) if entry.run_id else 0

    def _streams(self, entry: AuditEntry) -> list[str]:
        shard = self._shard(entry)
        streams = [self._keys.audit_stream(shard)]
        if is_request_run(entry.run_id):
            streams.append(self._keys.request_events(shard))
        return streams

    async def read(
        self, *, after: str = "-", count: int = 100, since: datetime | None = None
    ) -> list[AuditEntry]:
        """Entries oldest first, starting after the entry whose ``ref`` is ``after`` (``-``:
        the beginning, or the first entry at or after ``since``)."""
        stream_id, _, last_shard = after.partition(".")
        starts: list[str] = []
        for shard in self._keys.all_shards:
            if after == "-":
                # Stream ids begin with the entry's time in ms; none is before 1970.
                starts.append(f"{max(to_ms(since), 0)}-0" if since is not None else "-")
            elif last_shard and shard > int(last_shard):
                starts.append(stream_id)  # its entries of that same id come after ``after``
            else:
                starts.append(f"({stream_id}")
        async with self._client.guard("read audit stream"):
            pipe = self._client.pipeline()
            for shard, start in zip(self._keys.all_shards, starts, strict=True):
                pipe.xrange(self._keys.audit_stream(shard), start, "+", count)
            replies = cast(list[list[tuple[str, dict[str, str]]]], await pipe.execute())
        entries = [
            entry
            for shard, rows in zip(self._keys.all_shards, replies, strict=True)
            for entry in entries_of(rows, self._keys.entry_shard(shard))
        ]
        entries.sort(key=lambda e: (stream_order(e.entry_id or "0-0"), e.shard or 0))
        return entries[:count]

    async def last_request_event(self, shard: int = 0) -> str:
        """The stream id of the newest entry of an external request in ``shard`` ("0-0"
        when there is none): where ``follow_requests`` starts."""
        async with self._client.guard("read the request events' end"):
            reply = await self._client.raw.xrevrange(self._keys.request_events(shard), count=1)
        rows = cast(list[tuple[str, dict[str, str]]], reply)
        return rows[0][0] if rows else "0-0"

    async def follow_requests(
        self, *, shard: int = 0, after: str, block: timedelta, count: int = 500
    ) -> list[AuditEntry]:
        """External requests' entries in ``shard`` added after stream id ``after``, waiting
        up to ``block`` for the first."""
        key, block_ms = self._keys.request_events(shard), max(1, int(block.total_seconds() * 1000))
        async with self._client.guard("follow the request events"):
            reply = await self._client.on_node_of(
                key, "XREAD", "COUNT", count, "BLOCK", block_ms, "STREAMS", key, after
            )
        streams = cast(list[tuple[str, list[tuple[str, dict[str, str]]]]], reply)
        return entries_of(streams[0][1], self._keys.entry_shard(shard)) if streams else []


def entries_of(rows: list[tuple[str, dict[str, str]]], shard: int | None) -> list[AuditEntry]:
    """Audit entries from the stream entries (id, fields) of ``shard``."""
    return [
        AuditEntry(
            event=f.get("event", ""),
            record_id=f.get("record_id", ""),
            run_id=f.get("run_id", ""),
            at=from_ms(int(f.get("at") or 0)),
            user_id=f.get("user_id") or None,
            channel=f.get("channel") or None,
            message_ts=f.get("message_ts") or None,
            detail=f.get("detail", ""),
            entry_id=entry_id,
            shard=shard,
        )
        for entry_id, f in rows
    ]


def _fields(entry: AuditEntry) -> dict[str, str]:
    return {
        "event": entry.event,
        "record_id": entry.record_id,
        "run_id": entry.run_id,
        "user_id": entry.user_id or "",
        "at": str(to_ms(entry.at)),
        "channel": entry.channel or "",
        "message_ts": entry.message_ts or "",
        "detail": entry.detail,
    }
