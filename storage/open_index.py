"""The index of pending requests open to everyone in their channel (App Home reads it):
those stored by an earlier version, which kept none, are added to it once."""

from __future__ import annotations

import logging
from typing import cast

from .client import RedisClient
from .ids import is_record_id
from .keys import Keys

log = logging.getLogger(__name__)

_PER_PIPELINE = 500


async def index_earlier_open_requests(client: RedisClient, keys: Keys) -> int:
    """Add the pending requests open to their channel that are not in the index yet, once
    per key prefix (a marker says it was done); how many were added."""
    async with client.guard("check the index of requests open to a channel"):
        if await client.raw.exists(keys.open_index_built):
            return 0
    added = 0
    for shard in keys.all_shards:
        index = keys.by_channel(shard)
        async with client.guard("read the pending requests by channel"):
            members = cast(list[str], await client.raw.zrange(index, 0, -1))
        calls: list[tuple[list[str], list[str | int]]] = [
            ([keys.record(rid), index], [member])
            for member in members
            if is_record_id(rid := member.rsplit("\0", 1)[-1])
        ]
        for start in range(0, len(calls), _PER_PIPELINE):
            replies = await client.eval_each("index_open", calls[start : start + _PER_PIPELINE])
            for reply in replies:
                if isinstance(reply, Exception):  # a damaged record: listings skip it too
                    log.warning("a request not indexed as open to its channel: %s", reply)
            added += sum(1 for reply in replies if reply == 1)
    async with client.guard("mark the index of requests open to a channel built"):
        await client.raw.set(keys.open_index_built, "1")
    if added:
        log.info("%d pending requests open to their channel indexed for App Home", added)
    return added
