"""The click stream: queued clicks reach one consumer, a dead consumer's clicks are taken
over, and a click entry is decided at most once."""

from __future__ import annotations

from datetime import timedelta

import redis.asyncio as aioredis
from storage_helpers import DIGEST, NOW, later, make_record

from agent_runtime.interrupts import Decision
from storage import Storage


def _shard(storage: Storage, run_id: str = "run_1") -> int:
    """The shard of the run whose records a test clicks."""
    return storage.keys.shard_of(run_id)


async def _append(storage: Storage, record_id: str, user: str) -> str:
    return await storage.clicks.append(
        record_id=record_id,
        digest=DIGEST,
        user_id=user,
        channel_id="C1",
        message_ts="1.000001",
        action_id="approve",
        clicked_at=NOW,
    )


async def test_a_click_is_read_once_and_reclaimed_only_when_left_unacknowledged(
    storage: Storage,
) -> None:
    shard = _shard(storage, "run1")
    entry_id = await _append(storage, "run1/int1", "UALICE")
    [entry] = await storage.clicks.claim("dead", shard=shard, count=10)
    assert (entry.id, entry.record_id, entry.user_id, entry.clicked_at) == (
        entry_id,
        "run1/int1",
        "UALICE",
        NOW,
    )
    assert await storage.clicks.claim("other", shard=shard, count=10) == []

    [taken] = await storage.clicks.reclaim("other", shard=shard, min_idle=timedelta(0))
    assert taken == entry
    await storage.clicks.done([taken])
    assert await storage.clicks.reclaim("third", shard=shard, min_idle=timedelta(0)) == []


async def test_deciding_a_click_entry_again_is_a_replay_that_changes_nothing(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(make_record())
    first = await storage.interrupts.decide(
        record.id,
        "UALICE",
        Decision.approve(),
        args_digest=DIGEST,
        now=later(minutes=1),
        click_id="1700000000000-0",
    )
    again = await storage.interrupts.decide(
        record.id,
        "UALICE",
        Decision.approve(),
        args_digest=DIGEST,
        now=later(minutes=2),
        click_id="1700000000000-0",
    )
    refused = await storage.interrupts.decide(
        record.id,
        "UMALLORY",
        Decision.approve(),
        args_digest=DIGEST,
        now=later(minutes=3),
        click_id="1700000000000-1",
    )
    refused_again = await storage.interrupts.decide(
        record.id,
        "UMALLORY",
        Decision.approve(),
        args_digest=DIGEST,
        now=later(minutes=4),
        click_id="1700000000000-1",
    )

    assert first.status == "recorded" and first.resume_job_id is not None
    assert again.status == "replayed" and again.reason is None and again.resume_job_id is None
    assert again.record == first.record
    assert refused.status == "refused" and refused.reason == "not_allowed"
    assert refused_again.status == "replayed" and refused_again.reason == "not_allowed"
    assert await storage.resume.pending_count() == 0
    assert len(await storage.resume.claim("worker", shard=_shard(storage), count=10)) == 1


async def test_clicks_are_read_again_after_redis_lost_the_stream_and_its_group(
    storage: Storage, raw: aioredis.Redis
) -> None:
    """Redis restarted without its data: the consumer group is created anew on the next
    read, so clicks are decided again instead of every read failing."""
    shard = _shard(storage, "run1")
    await storage.clicks.claim("c1", shard=shard, count=10)
    await raw.delete(storage.keys.click_stream(shard))
    assert await storage.clicks.reclaim("c1", shard=shard, min_idle=timedelta(0)) == []
    entry_id = await _append(storage, "run1/int1", "UALICE")
    [entry] = await storage.clicks.claim("c1", shard=shard, count=10)
    assert entry.id == entry_id


async def test_consumers_of_stopped_processes_are_forgotten_unless_they_hold_a_click(
    storage: Storage,
) -> None:
    """Each process names its own consumers; the idle ones holding nothing are removed, so
    restarts do not pile them up, and one holding an unfinished click keeps it."""
    shard = _shard(storage, "run1")
    entry_id = await _append(storage, "run1/int1", "UALICE")
    [held] = await storage.clicks.claim("stopped-holding", shard=shard, count=10)
    assert await storage.clicks.claim("stopped-idle", shard=shard, count=10) == []
    group = storage.clicks.shard_groups[shard]

    async def names() -> list[str]:
        consumers = await storage.client.raw.xinfo_consumers(group.key, group.group)
        return sorted(str(c["name"]) for c in consumers)

    assert await names() == ["stopped-holding", "stopped-idle"]
    assert await storage.forget_idle_consumers(timedelta(days=1)) == 0  # not idle that long
    assert await storage.forget_idle_consumers(timedelta(0)) == 1
    assert await names() == ["stopped-holding"]
    [taken] = await storage.clicks.reclaim("next", shard=shard, min_idle=timedelta(0))
    assert taken.id == held.id == entry_id
