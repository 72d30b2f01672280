"""A Redis Stream read through a consumer group: the plumbing the resume queue and the
click stream share (create the group, read new entries, take over idle ones, ack, lag)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TypeVar, cast

from redis import exceptions as rexc

from .client import RedisClient
from .errors import StorageResponseError

log = logging.getLogger(__name__)

T = TypeVar("T")

Entry = tuple[str, dict[str, str]]
"""A stream entry: its id and its fields."""


def stream_order(entry_id: str) -> tuple[int, int]:
    """A stream entry id (``<ms>-<seq>``) as a sortable pair: entries of several streams
    merged in the order they were added, as far as the servers' clocks agree."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class ConsumerGroup:
    """Consumer group ``group`` over the stream at ``key``; ``what`` names it in errors."""

    def __init__(self, client: RedisClient, *, key: str, group: str, what: str) -> None:
        self._client = client
        self.key = key
        self.group = group
        self._what = what

    async def ensure(self) -> None:
        """Create the group (and stream) if missing; entries already queued are kept."""
        async with self._client.guard(f"create {self._what} consumer group"):
            try:
                await self._client.raw.xgroup_create(self.key, self.group, id="0", mkstream=True)
            except rexc.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    async def read(self, consumer: str, *, count: int, block: timedelta | None) -> list[Entry]:
        """New entries for ``consumer``; waits up to ``block`` for one when none is queued."""
        # At least 1 ms: BLOCK 0 would wait forever.
        block_ms = max(1, int(block.total_seconds() * 1000)) if block else None
        wait: list[str | int] = ["BLOCK", block_ms] if block_ms is not None else []

        async def read() -> object:
            async with self._client.guard(f"read {self._what}"):
                return await self._client.on_node_of(
                    self.key, "XREADGROUP", "GROUP", self.group, consumer,
                    "COUNT", count, *wait, "STREAMS", self.key, ">",
                )  # fmt: skip

        streams = cast(list[tuple[str, list[Entry]]], await self._with_group(read))
        return streams[0][1] if streams else []

    async def take_over(self, consumer: str, *, min_idle: timedelta, count: int) -> list[Entry]:
        """Entries another consumer read but did not acknowledge within ``min_idle``."""

        async def take_over() -> object:
            async with self._client.guard(f"reclaim {self._what}"):
                return await self._client.raw.xautoclaim(
                    self.key,
                    self.group,
                    consumer,
                    int(min_idle.total_seconds() * 1000),
                    "0-0",
                    count=count,
                )

        reply = await self._with_group(take_over)
        claimed = cast(list[list[tuple[str, dict[str, str] | None]]], reply)
        entries = claimed[1] if claimed else []
        return [(entry_id, fields) for entry_id, fields in entries if fields]

    async def _with_group(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call``, again once the group is created anew if Redis lost it (restarted
        without its data, or flushed): the stream's consumers go on instead of failing
        every try."""
        try:
            return await call()
        except StorageResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
        log.warning(
            "the %s consumer group was gone (Redis lost its data?); created again", self._what
        )
        await self.ensure()
        return await call()

    async def forget_idle(self, min_idle: timedelta) -> int:
        """Remove the consumers idle for ``min_idle`` with nothing pending; how many. Each
        process names its own, so those of stopped processes would pile up in the group.
        The pending check and the removal are one step, so no entry read in between is
        lost; a live consumer removed is made again by its next read."""

        async def consumers() -> object:
            async with self._client.guard(f"list {self._what} consumers"):
                return await self._client.raw.xinfo_consumers(self.key, self.group)

        idle_ms = int(min_idle.total_seconds() * 1000)
        forgotten = 0
        for consumer in cast(list[dict[str, str | int]], await self._with_group(consumers)):
            if int(consumer["pending"]) == 0 and int(consumer["idle"]) >= idle_ms:
                args: list[str | int] = [self.group, str(consumer["name"])]
                removed = await self._client.eval("forget_consumer", [self.key], args)
                forgotten += int(cast(int, removed))
        return forgotten

    async def heartbeat(
        self, consumer: str, entry_ids: list[str], *, leases: Sequence[str] = (), lease_ms: int = 0
    ) -> int:
        """Keep entries ``consumer`` is still handling from being taken over (their idle
        time starts again) and extend ``leases`` (one per entry) it holds; how many kept."""
        if not entry_ids:
            return 0
        keys = [self.key, *leases]
        args: list[str | int] = [self.group, consumer, lease_ms, *entry_ids]
        return int(cast(int, await self._client.eval("heartbeat", keys, args)))

    async def lag(self) -> int:
        """Entries not yet acknowledged: waiting for a consumer, or being handled.

        Redis cannot count the waiting ones after trimming removed unread entries; then
        only the ones being handled are counted.
        """
        async with self._client.guard(f"measure {self._what} lag"):
            groups = await self._client.raw.xinfo_groups(self.key)
        for group in cast(list[dict[str, int | str | None]], groups):
            if group["name"] == self.group:
                waiting = group.get("lag")
                return int(group["pending"] or 0) + (int(waiting) if waiting else 0)
        return 0

    async def ack(self, *entry_ids: str) -> None:
        """Acknowledge handled entries."""
        if not entry_ids:
            return
        async with self._client.guard(f"ack {self._what}"):
            await self._client.raw.xack(self.key, self.group, *entry_ids)
