"""Thread notes Slack did not take (how a run ended, a decision, an expiry),
kept until Slack takes them, as the outbox keeps cards; given up after ``NOTE_KEPT``."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ValidationError

from .client import RedisClient
from .epoch import to_ms
from .keys import Keys
from .retention import millis
from .sweeps import lease_due

log = logging.getLogger(__name__)

NOTE_KEPT = timedelta(hours=24)
"""How long a note Slack does not take is tried again before it is given up."""


class Note(BaseModel, frozen=True):
    """One chat.postMessage to send again: where, what, and until when it is worth it."""

    id: str
    channel: str
    thread_ts: str | None
    text: str
    until_ms: int
    or_tell: str | None = None
    """A user told by direct message when Slack refuses the note for good (the requester)."""
    while_pending: str | None = None
    """A record id: the note is dropped once that record is decided (reminders queued by
    earlier versions; reminders are now handed out again instead)."""


@dataclass(frozen=True)
class LeasedNote:
    """A note handed to one caller until ``leased_until``; ``member`` is its queue entry."""

    note: Note
    member: str
    leased_until: datetime


class NoteQueue:
    """Per shard, a sorted set of notes (as JSON) scored by when they may next be tried; a
    channel's notes share a shard, and come back in the order they were made (by id)."""

    def __init__(self, client: RedisClient, keys: Keys, *, marks_kept: timedelta) -> None:
        self._client = client
        self._keys = keys
        self._marks_kept = marks_kept

    async def once(
        self, name: str, note: Note, *, now: datetime, lease: timedelta
    ) -> LeasedNote | None:
        """Queue ``note`` leased to this caller for ``lease``, if it is the first to name
        ``name``; None for a later one. Claimed and queued in one step, so a caller that
        dies before posting it leaves it to whoever sends the queued notes."""
        shard = self._keys.shard_of(note.channel)
        member, until = note.model_dump_json(), now + lease
        keys = [self._keys.note_once(shard, name), self._keys.notes(shard)]
        args: list[str | int] = [
            secrets.token_hex(8),
            millis(self._marks_kept),
            member,
            to_ms(until),
        ]
        if not await self._client.eval("note_once", keys, args):
            return None
        return LeasedNote(note=note, member=member, leased_until=until)

    async def later(self, note: Note, *, at: datetime, member: str | None = None) -> None:
        """Queue ``note`` (or move its entry ``member``) to be tried from ``at``."""
        key = self._keys.notes(self._keys.shard_of(note.channel))
        async with self._client.guard("queue a note"):
            await self._client.raw.zadd(key, {member or note.model_dump_json(): to_ms(at)})

    async def claim(
        self, now: datetime, *, limit: int = 20, lease: timedelta = timedelta(seconds=30)
    ) -> list[LeasedNote]:
        """Notes due by ``now`` (up to ``limit`` per shard), leased to this caller for
        ``lease``; an unreadable one, or one past its time, leaves the queue."""
        due = await lease_due(self._client, self._keys, self._keys.notes, now, limit, lease)
        leased, dropped = [], []
        for shard, members in zip(self._keys.all_shards, due, strict=True):
            for member in members:
                try:
                    note = Note.model_validate_json(member)
                except ValidationError as exc:
                    log.error("an unreadable note left the queue: %s", exc.errors()[0]["msg"])
                    dropped.append((shard, member))
                    continue
                if note.until_ms < to_ms(now):
                    log.warning(
                        "note %s to %s given up: Slack never took it", note.id, note.channel
                    )
                    dropped.append((shard, member))
                    continue
                leased.append(LeasedNote(note=note, member=member, leased_until=now + lease))
        if dropped:
            async with self._client.guard("drop notes"):
                pipe = self._client.pipeline()
                for shard, member in dropped:
                    pipe.zrem(self._keys.notes(shard), member)
                await pipe.execute()
        return leased

    async def hold(
        self, notes: Sequence[LeasedNote], held_until: datetime, until: datetime
    ) -> bool:
        """Renew the leases on ``notes`` (of one channel, so one shard), ending at
        ``held_until``, to ``until`` in one step: False when every one was taken off or
        queued again since (nothing to renew)."""
        key = self._keys.notes(self._keys.shard_of(notes[0].note.channel))
        args: list[str | int] = [to_ms(held_until), to_ms(until)]
        args += [leased.member for leased in notes]
        return bool(await self._client.eval("lease_hold", [key], args))

    async def done(self, leased: LeasedNote) -> None:
        """Take a note off the queue, unless it was queued again since it was leased."""
        key = self._keys.notes(self._keys.shard_of(leased.note.channel))
        await self._client.eval("unlease", [key], [leased.member, to_ms(leased.leased_until)])
