"""ClickStream: decision clicks acknowledged to Slack and not yet decided, kept in Redis.

The HTTP handler appends a click (one round trip; the clicks of one event-loop turn
share it) before answering Slack, so a click Slack saw acknowledged survives the process
that took it. Deciders read the stream through a consumer group, decide, then ``ack``;
entries a dead consumer claimed are taken over with ``reclaim``. A click can therefore
be delivered twice: ``decide`` takes the click's id, and a second decision of the same
click changes nothing.

A click whose appender gave up waiting (its clicker was told it is not confirmed yet,
and to look at the card) is sent again while Redis does not answer, for up to
``KEEP_TRYING``: a stalled Redis that comes back still gets it. Sent twice (the first
reached Redis after all), it is two entries of one click id, decided once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from .client import RedisClient
from .consumer_group import ConsumerGroup
from .epoch import from_ms, to_ms
from .errors import InvalidIdError, StorageError
from .keys import Keys
from .refusals import Refusal

log = logging.getLogger(__name__)

KEEP_TRYING = timedelta(seconds=60)
"""How long a click nobody waits for any more is sent again while Redis does not answer."""


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
    shard: int = 0
    click_id: str = ""
    """The click's own id, the same in every entry of it; its entry id when it has none."""
    trigger_id: str = ""
    """The interaction's id in Slack, for the logs (empty for clicks queued before it was kept)."""
    thread_ts: str = ""
    """The thread the clicked message is a reply in, where the clicker is told a refusal."""


def click_id(trigger_id: str) -> str:
    """A click's id in the stream, which storage decides once: its Slack trigger id's
    digest (Slack gives each interaction its own, and a signed click received again carries
    the same), else a token of this click."""
    if not trigger_id:
        return secrets.token_hex(8)
    return hashlib.sha256(trigger_id.encode()).hexdigest()[:16]


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
        self.shard_groups = [
            ConsumerGroup(client, key=keys.click_stream(shard), group=group, what="clicks")
            for shard in keys.all_shards
        ]
        self._max_entries = max_entries
        self._waiting: list[tuple[dict[str, str | int], asyncio.Future[str]]] = []
        self._flushes: set[asyncio.Future[None]] = set()

    async def ensure_group(self) -> None:
        """Create each shard's consumer group (and stream) if missing; queued clicks are kept."""
        for group in self.shard_groups:
            await group.ensure()

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
        trigger_id: str = "",
        thread_ts: str = "",
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
            "trigger_id": trigger_id,
            "click": click_id(trigger_id),
            "thread_ts": thread_ts,
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
        loop = asyncio.get_running_loop()
        give_up, pause = loop.time() + KEEP_TRYING.total_seconds(), 0.5
        while batch:
            try:
                entry_ids = await self._send([fields for fields, _ in batch])
            except StorageError as exc:
                # An appender still waiting is told now (its clicker hears nothing was
                # recorded); one that gave up told its clicker to watch the card: retried.
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                batch = [(fields, future) for fields, future in batch if future.cancelled()]
                if not batch or loop.time() + pause > give_up:
                    if batch:
                        log.error("%d clicks not queued: %s", len(batch), exc)
                    return
                await asyncio.sleep(pause)
                pause = min(pause * 2, 5.0)
            except Exception as exc:  # a bug: never leave an appender waiting
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                return
            else:
                for (_, future), entry_id in zip(batch, entry_ids, strict=True):
                    if not future.done():
                        future.set_result(entry_id)
                return

    async def _send(self, clicks: list[dict[str, str | int]]) -> list[str]:
        """Append ``clicks`` in one pipeline; their entry ids."""
        async with self._client.guard("queue a click"):
            pipe, added = self._client.pipeline(), []
            for fields in clicks:
                record_id = str(fields["record_id"])
                added.append(len(pipe))
                pipe.xadd(
                    self._keys.click_stream(self._shard_of(record_id)),
                    fields,  # type: ignore[arg-type]  # redis-py's FieldT is too narrow
                    maxlen=self._max_entries,
                    approximate=True,
                )
                # Counted so the expiry sweep waits for the click (``done`` uncounts it).
                waiting = self._waiting_key(record_id)
                if waiting is not None:
                    pipe.incr(waiting)
            replies = await pipe.execute()
        return [str(replies[i]) for i in added]

    async def claim(
        self, consumer: str, *, shard: int = 0, count: int = 32, block: timedelta | None = None
    ) -> list[ClickEntry]:
        """New clicks of ``shard`` for ``consumer``; waits up to ``block`` for one."""
        entries = await self.shard_groups[shard].read(consumer, count=count, block=block)
        return [_entry(entry_id, fields, shard) for entry_id, fields in entries]

    async def reclaim(
        self, consumer: str, *, shard: int = 0, min_idle: timedelta, count: int = 32
    ) -> list[ClickEntry]:
        """Take over clicks of ``shard`` another consumer read but did not decide within
        ``min_idle``."""
        entries = await self.shard_groups[shard].take_over(consumer, min_idle=min_idle, count=count)
        clicks = [_entry(entry_id, fields, shard) for entry_id, fields in entries]
        for click in clicks:
            log.warning("click %s on %s reclaimed by %s", click.id, click.record_id, consumer)
        return clicks

    async def heartbeat(self, entries: list[ClickEntry], *, consumer: str) -> int:
        """Keep clicks ``consumer`` is still deciding from being taken over."""
        kept = 0
        for shard in {entry.shard for entry in entries}:
            ids = [entry.id for entry in entries if entry.shard == shard]
            kept += await self.shard_groups[shard].heartbeat(consumer, ids)
        return kept

    async def lag(self) -> int:
        """Clicks acknowledged to Slack and not yet decided."""
        return sum(await asyncio.gather(*(group.lag() for group in self.shard_groups)))

    def _waiting_key(self, record_id: str) -> str | None:
        try:
            return self._keys.clicks_waiting(record_id)
        except InvalidIdError:  # no such record can exist; the decider refuses the click
            return None

    def _shard_of(self, record_id: str) -> int:
        """The shard of the click's record: its stream is in the record's slot, so the
        decider's step over both stays atomic. A malformed id's click goes to shard 0."""
        try:
            return self._keys.shard_of_record(record_id)
        except InvalidIdError:
            return 0

    async def done(self, entries: Sequence[ClickEntry], *, told: Sequence[Refusal] = ()) -> None:
        """Acknowledge decided clicks (trimming removes them later) and stop counting them
        as waiting, in one step: a click acknowledged twice is uncounted once. ``told``:
        the refusals their decider told, taken off the untold refusals in the same step."""
        for shard in sorted({entry.shard for entry in entries}):
            counted: list[tuple[str, str]] = []
            uncounted: list[str] = []  # naming no record that could exist: nothing to uncount
            for entry in (entry for entry in entries if entry.shard == shard):
                key = self._waiting_key(entry.record_id)
                if key is None:
                    uncounted.append(entry.id)
                else:
                    counted.append((entry.id, key))
            if counted:
                # A refusal is stored only for a record that could exist: a counted entry's.
                members = [r.member for r in told if self._shard_of(r.record_id) == shard]
                keys = [
                    self._keys.click_stream(shard),
                    self._keys.refusals(shard),
                    self._keys.refusal_reasons(shard),
                    *(key for _, key in counted),
                ]
                ids = [entry_id for entry_id, _ in counted]
                args: list[str | int] = [self.group, len(ids), *ids, *members]
                await self._client.eval("clicks_done", keys, args)
            await self.shard_groups[shard].ack(*uncounted)


def _entry(entry_id: str, fields: dict[str, str], shard: int) -> ClickEntry:
    return ClickEntry(
        id=entry_id,
        record_id=fields["record_id"],
        digest=fields["digest"],
        user_id=fields["user_id"],
        channel_id=fields["channel_id"],
        message_ts=fields["message_ts"],
        action_id=fields["action_id"],
        clicked_at=from_ms(int(fields["at"])),
        shard=shard,
        click_id=fields.get("click") or entry_id,
        trigger_id=fields.get("trigger_id", ""),
        thread_ts=fields.get("thread_ts", ""),
    )
