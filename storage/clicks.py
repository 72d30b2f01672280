"""ClickStream: decision clicks acknowledged to Slack and not yet decided, kept in Redis.

The HTTP handler appends a click (one round trip; the clicks of one event-loop turn
share it) before answering Slack, so a click Slack saw acknowledged survives the process
that took it. Deciders read the stream through a consumer group, decide, then ``ack``;
entries a dead consumer claimed are taken over with ``reclaim``. A click can therefore
be delivered twice: ``decide`` takes the entry id, and a second decision of the same
entry changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from redis import exceptions as rexc

from .client import RedisClient
from .keys import Keys
from .records import from_ms, to_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ClickEntry:
    """One click as the handler saw it: ``user_id`` clicked ``action_id`` on the button for
    ``record_id`` (arguments shown: ``digest``) in message ``channel_id``/``message_ts``."""

    id: str
    record_id: str
    digest: str
    user_id: str
    channel_id: str
    message_ts: str
    action_id: str
    clicked_at: datetime


class ClickStream:
    """A consumer group over the click stream, trimmed to about ``max_entries``."""

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        *,
        group: str = "click-deciders",
        max_entries: int = 100_000,
    ) -> None:
        self._client = client
        self._keys = keys
        self.group = group
        self._max_entries = max_entries
        self._waiting: list[tuple[dict[str, str | int], asyncio.Future[str]]] = []
        self._flushes: set[asyncio.Future[None]] = set()

    async def ensure_group(self) -> None:
        """Create the consumer group (and stream) if missing; clicks already queued are kept."""
        async with self._client.guard("create click consumer group"):
            try:
                await self._client.raw.xgroup_create(
                    self._keys.click_stream, self.group, id="0", mkstream=True
                )
            except rexc.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    async def append(
        self,
        *,
        record_id: str,
        digest: str,
        user_id: str,
        channel_id: str,
        message_ts: str,
        action_id: str,
        clicked_at: datetime,
    ) -> str:
        """Queue a click for the deciders; its entry id."""
        fields: dict[str, str | int] = {
            "record_id": record_id,
            "digest": digest,
            "user_id": user_id,
            "channel_id": channel_id,
            "message_ts": message_ts,
            "action_id": action_id,
            "at": to_ms(clicked_at),
        }
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.append((fields, future))
        if len(self._waiting) == 1:
            flush = asyncio.ensure_future(self._flush())
            self._flushes.add(flush)  # held until done, so it is not garbage-collected
            flush.add_done_callback(self._flushes.discard)
        return await future

    async def _flush(self) -> None:
        """Send every click appended since the last flush in one pipeline.

        Under a flood, the clicks of one event-loop turn share a round trip (each is still
        acked only once its own entry is stored); a lone click goes out alone, at once.
        """
        await asyncio.sleep(0)  # let the clicks already read by the server join this batch
        batch, self._waiting = self._waiting, []
        try:
            async with self._client.guard("queue a click"):
                pipe = self._client.pipeline()
                for fields, _ in batch:
                    pipe.xadd(
                        self._keys.click_stream,
                        fields,  # type: ignore[arg-type]  # redis-py's FieldT is too narrow
                        maxlen=self._max_entries,
                        approximate=True,
                    )
                entry_ids = await pipe.execute()
        except Exception as exc:  # StorageError, or a bug: never leave an appender waiting
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
        else:
            for (_, future), entry_id in zip(batch, entry_ids, strict=True):
                if not future.done():
                    future.set_result(str(entry_id))

    async def claim(
        self, consumer: str, *, count: int = 32, block: timedelta | None = None
    ) -> list[ClickEntry]:
        """New clicks for ``consumer``; waits up to ``block`` for one when none is queued."""
        # At least 1 ms: BLOCK 0 would wait forever.
        block_ms = max(1, int(block.total_seconds() * 1000)) if block else None
        async with self._client.guard("read clicks"):
            reply = await self._client.raw.xreadgroup(
                self.group, consumer, {self._keys.click_stream: ">"}, count=count, block=block_ms
            )
        streams = cast(list[tuple[str, list[tuple[str, dict[str, str]]]]], reply)
        entries = streams[0][1] if streams else []
        return [_entry(entry_id, fields) for entry_id, fields in entries]

    async def reclaim(
        self, consumer: str, *, min_idle: timedelta, count: int = 32
    ) -> list[ClickEntry]:
        """Take over clicks another consumer read but did not decide within ``min_idle``."""
        async with self._client.guard("reclaim clicks"):
            reply = await self._client.raw.xautoclaim(
                self._keys.click_stream,
                self.group,
                consumer,
                int(min_idle.total_seconds() * 1000),
                "0-0",
                count=count,
            )
        claimed = cast(list[list[tuple[str, dict[str, str] | None]]], reply)
        entries = claimed[1] if claimed else []
        clicks = [_entry(entry_id, fields) for entry_id, fields in entries if fields]
        for click in clicks:
            log.warning("click %s on %s reclaimed by %s", click.id, click.record_id, consumer)
        return clicks

    async def ack(self, *entry_ids: str) -> None:
        """Acknowledge decided clicks (trimming removes them later)."""
        if not entry_ids:
            return
        async with self._client.guard("ack clicks"):
            await self._client.raw.xack(self._keys.click_stream, self.group, *entry_ids)


def _entry(entry_id: str, fields: dict[str, str]) -> ClickEntry:
    return ClickEntry(
        id=entry_id,
        record_id=fields["record_id"],
        digest=fields["digest"],
        user_id=fields["user_id"],
        channel_id=fields["channel_id"],
        message_ts=fields["message_ts"],
        action_id=fields["action_id"],
        clicked_at=from_ms(int(fields["at"])),
    )
