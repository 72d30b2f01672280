"""The cheap counts behind the bot's metrics: pending interrupts and resume queue lag."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import DIGEST, later, make_record

from agent_runtime.interrupts import Decision
from storage import Storage


async def test_pending_count_follows_creation_and_decisions(storage: Storage) -> None:
    assert await storage.queries.pending_count() == 0
    first = await storage.interrupts.create_interrupt(make_record(run_id="run_a"))
    await storage.interrupts.create_interrupt(make_record(run_id="run_b"))
    assert await storage.queries.pending_count() == 2
    await storage.interrupts.decide(
        first.id,
        "UALICE",
        Decision.approve(),
        args_digest=DIGEST,
        now=later(minutes=1),
    )
    assert await storage.queries.pending_count() == 1


async def test_lag_counts_waiting_and_unacknowledged_jobs(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record())
    assert await storage.resume.lag() == 0
    await storage.interrupts.decide(
        record.id,
        "UALICE",
        Decision.approve(),
        args_digest=DIGEST,
        now=later(minutes=1),
    )
    assert await storage.resume.lag() == 1  # waiting for a worker
    [job] = await storage.resume.claim(
        "w1", shard=storage.keys.shard_of("run_1"), block=timedelta(milliseconds=10)
    )
    assert await storage.resume.lag() == 1  # being applied
    assert await storage.resume.begin(job, consumer="w1", session_version=0) == "go"
    await storage.resume.complete(job, consumer="w1", session_version=0)
    assert await storage.resume.lag() == 0
