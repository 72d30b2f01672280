"""A client's pending requests are counted as they are stored, in the same atomic step:
one past its limit is refused with nothing written, racing creations never both take
the last room, and a request stops counting once decided, expired, cancelled or lost.
On Redis Cluster each shard holds an equal share of the limit."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import redis.asyncio as aioredis
from storage_helpers import DIGEST, NOW, later, make_record, snapshot

from agent_runtime.interrupts import Decision
from storage import InterruptRecord, Storage
from storage.errors import PendingLimitError
from storage.requests import shard_share

CLIENT = "nightly-cleanup"
HOUR = timedelta(hours=1)


def share_of(storage: Storage) -> int:
    """A limit leaving each shard room for two requests."""
    return 2 * len(storage.keys.all_shards)


def requests_in_one_shard(
    storage: Storage, count: int, *, client: str = CLIENT, apart: timedelta = timedelta(0)
) -> list[InterruptRecord]:
    """``count`` pending request records of ``client``, all in one shard (each client's
    runs ids of its own), each asked ``apart`` after the one before."""
    runs: list[str] = []
    n = 0 if client == CLIENT else 10**6
    while len(runs) < count:
        run_id = f"req_{n:032x}"
        if storage.keys.shard_of(run_id) == storage.keys.shard_of(f"req_{0:032x}"):
            runs.append(run_id)
        n += 1
    return [
        make_record(
            run_id=run_id, requested_by=client, call_id="ask", expires_in=HOUR, now=NOW + n * apart
        )
        for n, run_id in enumerate(runs)
    ]


async def test_a_request_past_its_clients_limit_is_refused_with_nothing_written(
    storage: Storage, raw: aioredis.Redis, key_prefix: str
) -> None:
    limit = share_of(storage)
    assert shard_share(limit, storage.keys) == 2
    first, second, third = requests_in_one_shard(storage, 3)
    for record in (first, second):
        await storage.interrupts.create_interrupts([record], pending_limit=limit)
    before = await snapshot(raw, key_prefix)
    with pytest.raises(PendingLimitError) as refused:
        await storage.interrupts.create_interrupts([third], pending_limit=limit)
    assert refused.value.client == CLIENT and refused.value.limit == limit
    assert await snapshot(raw, key_prefix) == before
    # Another client, and an agent's run, are not counted with it.
    other = requests_in_one_shard(storage, 1, client="backup-job")[0]
    await storage.interrupts.create_interrupts([other], pending_limit=limit)
    agent_run = make_record(run_id="run_1", requested_by=CLIENT)
    await storage.interrupts.create_interrupts([agent_run], pending_limit=limit)


async def test_a_request_with_items_counts_once_per_item(storage: Storage) -> None:
    limit = share_of(storage)
    run_id = requests_in_one_shard(storage, 1)[0].run_id
    items = [
        make_record(run_id=run_id, requested_by=CLIENT, call_id=f"ask{i}", expires_in=HOUR)
        for i in range(3)
    ]
    with pytest.raises(PendingLimitError):
        await storage.interrupts.create_interrupts(items, pending_limit=limit)
    await storage.interrupts.create_interrupts(items[:2], pending_limit=limit)
    assert not await storage.requests.has_room(CLIENT, run_id=run_id, records=1, limit=limit)


async def test_racing_creations_never_both_take_the_last_room(storage: Storage) -> None:
    limit = share_of(storage)
    records = requests_in_one_shard(storage, 12)
    results = await asyncio.gather(
        *(storage.interrupts.create_interrupts([r], pending_limit=limit) for r in records),
        return_exceptions=True,
    )
    assert sum(result is None for result in results) == 2
    assert all(isinstance(r, PendingLimitError) for r in results if r is not None)


async def _decide(storage: Storage, record: InterruptRecord) -> None:
    await storage.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )


async def _expire(storage: Storage, record: InterruptRecord) -> None:
    await storage.interrupts.expire_due(later(minutes=90))


async def _cancel(storage: Storage, record: InterruptRecord) -> None:
    await storage.interrupts.cancel_run(record.run_id, reason="withdrawn", now=NOW, by=CLIENT)


async def _lose(storage: Storage, record: InterruptRecord) -> None:
    await storage.client.raw.delete(storage.keys.record(record.id))
    await storage.interrupts.expire_due(later(minutes=90))


@pytest.mark.parametrize("end", [_decide, _expire, _cancel, _lose])
async def test_a_request_no_longer_pending_stops_counting(storage: Storage, end: object) -> None:
    limit = share_of(storage)
    first, second, third = requests_in_one_shard(storage, 3, apart=HOUR)  # only one expires
    for record in (first, second):
        await storage.interrupts.create_interrupts([record], pending_limit=limit)
    assert callable(end)
    await end(storage, first)
    await storage.interrupts.create_interrupts([third], pending_limit=limit)
    assert not await storage.requests.has_room(CLIENT, run_id=third.run_id, records=1, limit=limit)


async def test_each_clients_pending_records_are_counted_across_the_shards(
    storage: Storage,
) -> None:
    runs = [f"req_{n:032x}" for n in range(12)]
    if len(storage.keys.all_shards) > 1:
        assert len({storage.keys.shard_of(run) for run in runs}) > 1, "spread over shards"
    mine = [make_record(run_id=run, requested_by=CLIENT, call_id="ask") for run in runs[:9]]
    others = [make_record(run_id=run, requested_by="backup", call_id="ask") for run in runs[9:]]
    items = [
        make_record(run_id="req_" + "e" * 32, requested_by=CLIENT, call_id=f"ask{i}")
        for i in range(2)
    ]
    agent_run = make_record(run_id="run_1", requested_by=CLIENT)
    for record in [*mine, *others, agent_run]:
        await storage.interrupts.create_interrupts([record], pending_limit=100)
    await storage.interrupts.create_interrupts(items, pending_limit=100)
    await _decide(storage, mine[0])
    await _cancel(storage, mine[1])

    counted = await storage.requests.pending([CLIENT, "backup", "nightly", "nobody"])
    assert counted == {CLIENT: 9, "backup": 3, "nightly": 0, "nobody": 0}
