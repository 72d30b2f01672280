"""Resume queue and run sessions (issue 3, tests 4 and 7)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from storage_helpers import DIGEST, NOW, make_record, wait_for

from agent_runtime import InMemorySessionStore
from agent_runtime.errors import StaleSessionError, ThreadBusyError
from agent_runtime.interrupts import Decision
from storage import ResumeJob, Storage
from storage.errors import StorageUnavailableError


async def _decided_run(storage: Storage) -> str:
    """A run whose one interrupt is approved; its session saved at version 1."""
    record = await storage.interrupts.create_interrupt(make_record())
    await storage.sessions.save("thread_run_1", {"step": "waiting"}, expected_version=0)
    await storage.interrupts.decide(
        record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    return record.id


async def _resume(storage: Storage, job: ResumeJob, consumer: str, applied: list[str]) -> bool:
    """One worker's pass over a job: true when this worker resumed the run."""
    stored = await storage.sessions.load(job.thread_id)
    assert stored is not None
    verdict = await storage.resume.begin(job, consumer=consumer, session_version=stored.version)
    if verdict == "done":
        await storage.resume.ack(job)
        return False
    if verdict == "busy":
        return False
    applied.append(consumer)  # the guarded tool "runs" here
    try:
        await storage.sessions.save(
            job.thread_id, {"step": "resumed"}, expected_version=stored.version
        )
    except StaleSessionError:
        await storage.resume.release(job, consumer=consumer)
        return False
    await storage.resume.complete(job, consumer=consumer, session_version=stored.version)
    return True


async def test_worker_dies_before_ack_and_another_resumes_the_run_once(
    storage: Storage, redis_url: str, key_prefix: str
) -> None:
    from storage import ResumeQueue

    rid = await _decided_run(storage)
    short = ResumeQueue(storage.client, storage.keys, lease=timedelta(milliseconds=200))
    [job] = await short.claim("worker-a", shard=storage.keys.shard_of("run_1"))
    assert job.record_ids == (rid,)
    stored = await storage.sessions.load(job.thread_id)
    assert stored is not None
    assert await short.begin(job, consumer="worker-a", session_version=stored.version) == "go"
    # worker-a dies here: no save, no ack.
    reclaimed: list[ResumeJob] = []

    async def reclaim() -> bool:
        reclaimed.extend(
            await short.reclaim(
                "worker-b",
                shard=storage.keys.shard_of("run_1"),
                min_idle=timedelta(milliseconds=50),
            )
        )
        return bool(reclaimed)

    await wait_for(reclaim, what="the job to be reclaimable")
    assert [j.id for j in reclaimed] == [job.id]
    applied: list[str] = []

    async def resumed() -> bool:
        verdict = await short.begin(job, consumer="worker-b", session_version=stored.version)
        if verdict == "busy":
            return False  # worker-a's lease has not lapsed yet
        assert verdict == "go"
        applied.append("worker-b")
        await storage.sessions.save(job.thread_id, {"step": "resumed"}, expected_version=1)
        await short.complete(job, consumer="worker-b", session_version=stored.version)
        return True

    await wait_for(resumed, what="worker-a's lease to lapse")
    assert applied == ["worker-b"]
    assert await short.pending_count() == 0
    # A late redelivery of the same job is recognised as done.
    assert await short.begin(job, consumer="worker-c", session_version=1) == "done"
    assert await short.begin(job, consumer="worker-c", session_version=2) == "done"


async def test_two_concurrent_resumes_of_one_run_one_wins(storage: Storage) -> None:
    await _decided_run(storage)
    [job] = await storage.resume.claim("worker-a", shard=storage.keys.shard_of("run_1"))
    applied: list[str] = []
    results = await asyncio.gather(
        _resume(storage, job, "worker-a", applied), _resume(storage, job, "worker-b", applied)
    )
    assert sorted(results) == [False, True] and len(applied) == 1
    stored = await storage.sessions.load("thread_run_1")
    assert stored is not None and stored.version == 2
    assert await storage.resume.pending_count() == 0


async def _blocked_claims(raw: aioredis.Redis) -> int:
    """How many clients the server reports blocked in XREADGROUP (``flags`` has ``b``)."""
    if isinstance(raw, RedisCluster):
        per_node = await raw.client_list(target_nodes=RedisCluster.ALL_NODES)
        clients = [c for node in per_node.values() for c in node]
    else:
        clients = await raw.client_list()
    return sum(1 for c in clients if "b" in c["flags"] and c["cmd"] == "xreadgroup")


async def test_claim_blocks_until_a_job_arrives(storage: Storage, raw: aioredis.Redis) -> None:
    before = await _blocked_claims(raw)
    waiting = asyncio.create_task(
        storage.resume.claim("w", shard=storage.keys.shard_of("run_1"), block=timedelta(seconds=30))
    )

    async def blocked() -> bool:
        return await _blocked_claims(raw) > before

    # Only once Redis holds the claim blocked is the job added: the claim must then wake
    # up with it, well before its 30 s block runs out.
    await wait_for(blocked, what="the server to report the claim blocked")
    assert not waiting.done()
    await _decided_run(storage)
    jobs = await asyncio.wait_for(waiting, timeout=5)
    assert len(jobs) == 1 and jobs[0].run_id == "run_1"


async def test_stale_session_save_is_refused(storage: Storage) -> None:
    sessions = storage.sessions
    assert await sessions.load("t1") is None
    assert await sessions.save("t1", {"n": 1}, expected_version=0) == 1
    with pytest.raises(StaleSessionError, match="expected version 0"):
        await sessions.save("t1", {"n": 2}, expected_version=0)
    assert await sessions.save("t1", {"n": 2, "ü": [None, 1.5]}, expected_version=1) == 2
    stored = await sessions.load("t1")
    assert stored is not None and (stored.version, stored.snapshot) == (
        2,
        {"n": 2, "ü": [None, 1.5]},
    )
    assert await storage.client.raw.pttl(storage.keys.session("t1")) > 0
    await sessions.delete("t1")
    assert await sessions.load("t1") is None


@pytest.mark.parametrize("kept", ["redis", "memory"])
async def test_a_snapshot_json_cannot_hold_is_refused_alike_in_redis_and_in_memory(
    storage: Storage, kept: str
) -> None:
    """A NaN is not JSON: either store refuses it and keeps nothing, so what works in
    memory (a test, one process) works on Redis too."""
    sessions = storage.sessions if kept == "redis" else InMemorySessionStore()
    with pytest.raises(ValueError, match="not JSON compliant"):
        await sessions.save("t1", {"ratio": float("nan")}, expected_version=0)
    assert await sessions.load("t1") is None


async def test_concurrent_saves_of_one_version_one_wins(storage: Storage) -> None:
    await storage.sessions.save("t2", {"n": 0}, expected_version=0)
    results = await asyncio.gather(
        *(storage.sessions.save("t2", {"n": i}, expected_version=1) for i in range(20)),
        return_exceptions=True,
    )
    assert sum(1 for r in results if r == 2) == 1
    assert sum(1 for r in results if isinstance(r, StaleSessionError)) == 19


async def test_a_threads_lease_is_held_alone_and_released_after(storage: Storage) -> None:
    async with storage.sessions.lease("thread_l"):
        with pytest.raises(ThreadBusyError):
            async with storage.sessions.lease("thread_l"):
                pass
        async with storage.sessions.lease("thread_other"):  # other threads are free
            pass
    async with storage.sessions.lease("thread_l"):  # released: taken again
        pass


async def test_a_lease_renewal_that_fails_once_is_tried_again(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis unreachable at one renewal: the next beat renews the lease, so a step that
    runs longer than the lease still holds the thread alone, and ends as it ran."""
    monkeypatch.setattr("storage.sessions.LEASE_MS", 300)
    client, key = storage.client, storage.keys.thread_lease("thread_renewed")
    real_eval = client.eval
    renewals: list[str] = []

    async def flaky_eval(name: str, keys: list[str], args: list[str | int]) -> object:
        if name == "lease_renew" and keys == [key]:
            renewals.append("failed" if not renewals else "renewed")
            if renewals == ["failed"]:
                raise StorageUnavailableError("Redis went away")
        return await real_eval(name, keys, args)

    monkeypatch.setattr(client, "eval", flaky_eval)
    async with storage.sessions.lease("thread_renewed"):

        async def renewed_past_a_lease() -> bool:
            return renewals.count("renewed") >= 4  # 4 beats of 100 ms: past the 300 ms

        await wait_for(renewed_past_a_lease, what="the lease renewed after the failure")
        with pytest.raises(ThreadBusyError):
            async with storage.sessions.lease("thread_renewed"):
                pass
