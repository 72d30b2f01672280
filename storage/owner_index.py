"""Many owners' entries in a sharded lexicographic index ("owner \\0 created_ms \\0
record_id"), a page or the tail of each. Asked for many owners, each shard's first
entries are read at once and answer for every owner they cover; only owners past them,
in a shard that holds more, are asked about one by one. So a listing for someone in
1,000 channels costs about what those channels hold, not three commands per channel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from .client import RedisClient

READ_PER_OWNER = 16
"""Entries of a shard read at once per owner asked: sending one entry costs the server
about a sixteenth of a command, and asking about one owner costs two or three."""

READ_AT_LEAST = 256
"""Entries of a shard read at once however few owners are asked (a second round trip
costs more than sending these)."""


def read_up_to(owners: int) -> int:
    """How many entries of each shard are read at once for ``owners`` owners."""
    return max(READ_AT_LEAST, READ_PER_OWNER * owners)


@dataclass(frozen=True, kw_only=True)
class Known:
    """One shard as its first entries told it: each covered owner's entries (all of
    them, in index order) and the owners past what was read (asked about one by one)."""

    entries: dict[str, list[str]]
    unread: list[str]


def known_from(read: list[str], owners: Sequence[str], *, up_to: int) -> Known:
    """What ``read``, a shard's first ``up_to + 1`` entries at most, tells of ``owners``:
    an owner is covered when the read reached past the end of its range."""
    wanted = set(owners)
    entries: dict[str, list[str]] = {}
    for member in read:
        owner, sep, _ = member.partition("\0")
        if sep and owner in wanted:
            entries.setdefault(owner, []).append(member)
    if len(read) <= up_to:  # the whole index
        return Known(entries=entries, unread=[])
    end = read[-1]
    unread = [owner for owner in owners if f"{owner}\x01" > end]
    for owner in unread:
        entries.pop(owner, None)
    return Known(entries=entries, unread=unread)


class OwnerIndex:
    """The entries of ``owners`` in each shard of the lexicographic set ``index``; with
    ``read_first``, each shard's first entries are read at once before any owner alone."""

    def __init__(
        self,
        client: RedisClient,
        index: Callable[[int], str],
        *,
        shards: range,
        owners: Sequence[str],
        read_first: bool,
    ) -> None:
        self._client = client
        self._index = index
        self._shards = shards
        self._owners = owners
        self._read_first = read_first and bool(owners)

    async def pages(self, after: str | None, limit: int) -> tuple[list[list[str]], int, int]:
        """Each owner's first ``limit`` entries past ``after`` (a ``created_ms \\0
        record_id``) in each shard, to merge; the owners' entries in all; and how many of
        those are at or before ``after``."""
        pages: list[list[str]] = []
        total = before = 0
        unread: list[tuple[int, str]] = []
        for shard, known in zip(self._shards, await self._known(), strict=True):
            for owner, entries in known.entries.items():
                past = [m for m in entries if m > f"{owner}\0{after}"] if after else entries
                pages.append(past[:limit])
                total += len(entries)
                before += len(entries) - len(past)
            unread += [(shard, owner) for owner in known.unread]
        if not unread:
            return pages, total, before
        async with self._client.guard("list pending interrupts"):
            pipe = self._client.pipeline()
            for shard, owner in unread:
                low = f"({owner}\0{after}" if after else f"[{owner}\0"
                pipe.zrangebylex(self._index(shard), low, f"({owner}\x01", 0, limit)
                pipe.zlexcount(self._index(shard), f"[{owner}\0", f"({owner}\x01")
                if after:
                    pipe.zlexcount(self._index(shard), f"[{owner}\0", f"[{owner}\0{after}")
            replies = await pipe.execute()
        step = 3 if after else 2
        pages += cast(list[list[str]], replies[0::step])
        total += sum(cast(list[int], replies[1::step]))
        before += sum(cast(list[int], replies[2::step])) if after else 0
        return pages, total, before

    async def tails(self, count: int) -> list[list[str]]:
        """Each owner's last ``count`` entries in each shard, to merge."""
        tails: list[list[str]] = []
        unread: list[tuple[int, str]] = []
        for shard, known in zip(self._shards, await self._known(), strict=True):
            tails += [entries[-count:] for entries in known.entries.values()]
            unread += [(shard, owner) for owner in known.unread]
        if not unread:
            return tails
        async with self._client.guard("find the last page"):
            pipe = self._client.pipeline()
            for shard, owner in unread:
                pipe.zrevrangebylex(self._index(shard), f"({owner}\x01", f"[{owner}\0", 0, count)
            return tails + cast(list[list[str]], await pipe.execute())

    async def _known(self) -> list[Known]:
        """Each shard's first entries, read in one round trip (none: every owner unread)."""
        if not self._read_first:
            return [Known(entries={}, unread=list(self._owners)) for _ in self._shards]
        up_to = read_up_to(len(self._owners))
        async with self._client.guard("list pending interrupts"):
            pipe = self._client.pipeline()
            for shard in self._shards:
                pipe.zrange(self._index(shard), 0, up_to)
            reads = cast(list[list[str]], await pipe.execute())
        return [known_from(read, self._owners, up_to=up_to) for read in reads]
