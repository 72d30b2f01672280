"""The audit stream: every transition of every interrupt (who, what, when, where)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from redis.typing import EncodableT, FieldT

from .client import RedisClient
from .epoch import from_ms, to_ms
from .keys import Keys
from .requests import is_request_run


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


class AuditLog:
    """Appends to and reads the audit stream; the Lua transitions append their own entries."""

    def __init__(self, client: RedisClient, keys: Keys, *, max_entries: int) -> None:
        self._client = client
        self._keys = keys
        self._max_entries = max_entries

    async def append(self, entry: AuditEntry) -> str:
        """Add an entry the bot observed (a message update, a repost); its stream id."""
        fields: dict[FieldT, EncodableT] = {
            "event": entry.event,
            "record_id": entry.record_id,
            "run_id": entry.run_id,
            "user_id": entry.user_id or "",
            "at": str(to_ms(entry.at)),
            "channel": entry.channel or "",
            "message_ts": entry.message_ts or "",
            "detail": entry.detail,
        }
        async with self._client.guard("append audit entry"):
            pipe = self._client.raw.pipeline(transaction=True)
            streams = [self._keys.audit_stream]
            if is_request_run(entry.run_id):
                streams.append(self._keys.request_events)
            for stream in streams:
                pipe.xadd(stream, dict(fields), maxlen=self._max_entries, approximate=True)
            ids = await pipe.execute()
        return cast(str, ids[0])

    async def read(
        self, *, after: str = "-", count: int = 100, since: datetime | None = None
    ) -> list[AuditEntry]:
        """Entries oldest first, starting after stream id ``after`` (``-``: the beginning,
        or the first entry at or after ``since``)."""
        start = after if after == "-" else f"({after}"
        if after == "-" and since is not None:
            start = f"{to_ms(since)}-0"  # stream ids begin with the entry's time in ms
        async with self._client.guard("read audit stream"):
            reply = await self._client.raw.xrange(self._keys.audit_stream, start, "+", count)
        return entries_of(cast(list[tuple[str, dict[str, str]]], reply))

    async def last_request_event(self) -> str:
        """The id of the newest entry of an external request ("0-0" when there is none):
        where ``follow_requests`` starts."""
        async with self._client.guard("read the request events' end"):
            reply = await self._client.raw.xrevrange(self._keys.request_events, count=1)
        rows = cast(list[tuple[str, dict[str, str]]], reply)
        return rows[0][0] if rows else "0-0"

    async def follow_requests(
        self, *, after: str, block: timedelta, count: int = 500
    ) -> list[AuditEntry]:
        """External requests' entries added after stream id ``after``, waiting up to
        ``block`` for the first."""
        async with self._client.guard("follow the request events"):
            reply = await self._client.raw.xread(
                {self._keys.request_events: after},
                count=count,
                block=max(1, int(block.total_seconds() * 1000)),
            )
        streams = cast(list[tuple[str, list[tuple[str, dict[str, str]]]]], reply)
        return entries_of(streams[0][1]) if streams else []


def entries_of(rows: list[tuple[str, dict[str, str]]]) -> list[AuditEntry]:
    """Audit entries from stream entries (id, fields)."""
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
        )
        for entry_id, f in rows
    ]
