"""A batch decided in one step: no withdrawal lands between its items, and a damaged or
malformed item is refused alone, while a write Redis refuses fails the whole batch."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from storage_helpers import DIGEST, later, make_record

from agent_runtime.interrupts import Decision
from storage import EmbeddedRedis, Storage, connect
from storage.errors import StorageResponseError


@pytest.mark.parametrize("head_start", range(0, 12, 2))
async def test_decisions_made_together_let_no_withdrawal_land_between_them(
    storage: Storage, head_start: int
) -> None:
    """Approve-selected on a 30-item batch races the run's withdrawal, which is sent after
    ``head_start`` turns of the event loop: one of them takes every item, never some each."""
    run = f"race_{head_start}"
    records = [
        await storage.interrupts.create_interrupt(make_record(run_id=run, call_id=f"c{i}"))
        for i in range(30)
    ]
    together = asyncio.ensure_future(
        storage.interrupts.decide_together(
            [(r.id, Decision.approve(), DIGEST) for r in records],
            "UALICE",
            now=later(minutes=1),
            channel="CAPPROVALS",
            message_ts="",
        )
    )
    for _ in range(head_start):
        await asyncio.sleep(0)  # a turn of the event loop, not a wait for anything
    cancelled = await storage.interrupts.cancel_run(run, reason="withdrawn", now=later(minutes=1))
    outcomes, _ = await together
    stored, _ = await storage.queries.many([r.id for r in records])
    states = sorted(r.state for r in stored)
    assert states in (["approved"] * 30, ["cancelled"] * 30), states
    if states[0] == "approved":
        assert cancelled.count == 0 and all(o.status == "recorded" for o in outcomes)
    else:
        assert cancelled.count == 30 and all(o.reason == "already_decided" for o in outcomes)


async def test_a_damaged_item_of_a_batch_is_refused_alone_and_named(
    storage: Storage, raw: aioredis.Redis
) -> None:
    """Two items cannot be read back (votes that are not JSON, a policy without its
    lists): each is refused as damaged, named with its own key; the others are decided."""
    records = [
        await storage.interrupts.create_interrupt(make_record(run_id="damaged", call_id=f"c{i}"))
        for i in range(4)
    ]
    await raw.hset(storage.keys.record(records[1].id), "voters", "not json")
    await raw.hset(storage.keys.record(records[2].id), "policy", '{"allowed_users":["UALICE"]}')
    outcomes, damaged = await storage.interrupts.decide_together(
        [(r.id, Decision.approve(), DIGEST) for r in records],
        "UALICE",
        now=later(minutes=1),
        channel="CAPPROVALS",
        message_ts="",
    )
    assert [(o.status, o.reason) for o in outcomes] == [
        ("recorded", None),
        ("refused", "damaged"),
        ("refused", "damaged"),
        ("recorded", None),
    ]
    assert [(rid, error.key) for rid, error in damaged] == [
        (r.id, storage.keys.record(r.id)) for r in records[1:3]
    ]
    assert "voters" in str(damaged[0][1])
    states = {r.id: r.state for r in (await storage.queries.many([r.id for r in records]))[0]}
    assert [states.get(r.id) for r in (records[0], records[3])] == ["approved", "approved"]
    assert await raw.hget(storage.keys.record(records[2].id), "state") == b"pending"


async def test_a_malformed_id_in_a_batch_is_refused_alone(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(run_id="mixed_ids"))
    outcomes, _ = await storage.interrupts.decide_together(
        [("no/such/id", Decision.approve(), DIGEST), (record.id, Decision.approve(), DIGEST)],
        "UALICE",
        now=later(minutes=1),
        channel="CAPPROVALS",
        message_ts="",
    )
    assert [(o.status, o.reason) for o in outcomes] == [("refused", "unknown"), ("recorded", None)]


async def test_a_batch_redis_refuses_fails_whole_not_as_damaged_records(
    redis_server: EmbeddedRedis, key_prefix: str
) -> None:
    """Redis out of memory refuses the batch's first write: the call fails as one decision
    would, and no healthy record is reported as damaged."""
    storage = await connect(redis_server.url, prefix=key_prefix)
    raw = storage.client.raw
    records = [
        await storage.interrupts.create_interrupt(make_record(run_id="oom", call_id=f"c{i}"))
        for i in range(3)
    ]
    kept = await raw.config_get("maxmemory*")
    await raw.config_set("maxmemory-policy", "noeviction")
    await raw.config_set("maxmemory", 1)
    try:
        with pytest.raises(StorageResponseError, match="OOM"):
            await storage.interrupts.decide_together(
                [(r.id, Decision.approve(), DIGEST) for r in records],
                "UALICE",
                now=later(minutes=1),
                channel="CAPPROVALS",
                message_ts="",
            )
    finally:
        await raw.config_set("maxmemory", kept["maxmemory"])
        await raw.config_set("maxmemory-policy", kept["maxmemory-policy"])
    stored, damaged = await storage.queries.many([r.id for r in records])
    assert damaged == [] and {r.state for r in stored} == {"pending"}
    await storage.close()
