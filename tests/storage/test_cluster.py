"""Redis Cluster: a shard's slot moves to another primary while requests are created and
decided on it, as an operator resharding a live cluster would, and nothing is lost or
decided twice."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import cast

import pytest
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
from storage_helpers import DIGEST, NOW, make_record

from agent_runtime.interrupts import Decision
from storage import Storage, connect
from storage.audit import AuditEntry
from storage.away import Away
from storage.client import RedisClient
from storage.embedded_cluster import EmbeddedCluster
from storage.errors import DuplicateInterruptError, StorageError, StorageTimeoutError
from storage.interrupts import InterruptStore
from storage.job_runs import audit_mark
from storage.keys import shard_tag
from storage.queries import InterruptQueries
from storage.retention import Retention

RUNS = 120


@pytest.fixture
async def on_cluster(redis_cluster: EmbeddedCluster, key_prefix: str) -> AsyncIterator[Storage]:
    store = await connect(redis_cluster.url, prefix=key_prefix)
    yield store
    await store.close()


async def test_a_slot_migration_under_load_loses_and_doubles_no_decision(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    storage = on_cluster
    assert storage.keys.shards is not None
    moving = 0  # the shard whose slot moves
    runs = [f"run_{n}" for n in range(RUNS * 16) if storage.keys.shard_of(f"run_{n}") == moving]
    runs = runs[:RUNS]
    assert len(runs) == RUNS
    before, during = runs[: RUNS // 2], runs[RUNS // 2 :]
    for run in before:
        await storage.interrupts.create_interrupt(make_record(run_id=run))
    slot = key_slot(shard_tag(moving, storage.keys.shards).encode())
    migrating = False
    settled_while_migrating = 0

    async def settle(run: str) -> None:
        """Create (when new) and decide ``run``'s request with two racing clicks, retrying
        a step Redis could not take, as the bot's click stream and outbox would."""
        nonlocal settled_while_migrating
        record = make_record(run_id=run)
        while True:
            try:
                if run in during:
                    with contextlib.suppress(DuplicateInterruptError):  # stored, answer lost
                        await storage.interrupts.create_interrupt(record)
                await asyncio.gather(
                    *(
                        storage.interrupts.decide(
                            record.id, user, Decision.approve(), args_digest=DIGEST, now=NOW
                        )
                        for user in ("UALICE", "UBOB")
                    )
                )
                settled_while_migrating += migrating
                return
            except StorageError:
                continue

    load = asyncio.gather(*(settle(run) for run in runs))
    migrating = True
    moved = await redis_cluster.migrate_slot(slot, to=2, batch=5)  # from node 0
    migrating = False
    await load
    assert moved > 0 and settled_while_migrating > 0

    records, missing = await storage.queries.many([make_record(run_id=r).id for r in runs])
    assert missing == [] and {r.state for r in records} == {"approved"}
    jobs = await storage.client.raw.xlen(storage.keys.resume_stream(moving))
    assert jobs == len(runs)  # one resume per run: decided exactly once
    approvals = [e for e in await storage.audit.read(count=10_000) if e.event == "approved"]
    assert sorted(e.run_id for e in approvals) == sorted(runs)


async def test_a_batch_is_decided_on_a_slot_that_moved(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """After a reshard the client's map of slots is stale: a batch follows MOVED to the
    slot's new primary, as one decision does."""
    storage = on_cluster
    assert storage.keys.shards is not None
    shard = 3
    run = next(f"batch_{n}" for n in range(200) if storage.keys.shard_of(f"batch_{n}") == shard)
    records = [
        await storage.interrupts.create_interrupt(make_record(run_id=run, call_id=f"c{i}"))
        for i in range(3)
    ]
    slot = key_slot(shard_tag(shard, storage.keys.shards).encode())
    cluster = cast(RedisCluster, storage.client.raw)
    port = cluster.get_node_from_key(storage.keys.record(records[0].id)).port
    owner = next(i for i, server in enumerate(redis_cluster.servers) if server.port == port)
    assert await redis_cluster.migrate_slot(slot, to=(owner + 1) % 3) > 0
    try:
        outcomes, _ = await storage.interrupts.decide_together(
            [(r.id, Decision.approve(), DIGEST) for r in records],
            "UALICE",
            now=NOW,
            channel="CAPPROVALS",
            message_ts="",
        )
        assert [o.status for o in outcomes] == ["recorded"] * 3
    finally:
        await redis_cluster.migrate_slot(slot, to=owner)


async def test_a_record_whose_node_stalls_is_an_error_not_a_missing_or_damaged_record(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """A node that stops answering mid-read fails the read: its records are not reported
    gone or damaged, which would take them off the pending lists and the outbox."""
    storage = on_cluster
    record = await storage.interrupts.create_interrupt(make_record(run_id="stalled_run"))
    client = RedisClient(redis_cluster.url, timeout=0.3)
    queries = InterruptQueries(client, storage.keys)
    try:
        assert (await queries.many([record.id]))[1] == []  # the client knows the slots now
        cluster = cast(RedisCluster, storage.client.raw)
        port = cluster.get_node_from_key(storage.keys.record(record.id)).port
        node = next(s for s in redis_cluster.servers if s.port == port)
        assert node.process is not None
        os.kill(node.process.pid, signal.SIGSTOP)
        try:
            with pytest.raises(StorageError):
                await queries.many([record.id])
        finally:
            os.kill(node.process.pid, signal.SIGCONT)
        assert queries.damaged_seen == 0
    finally:
        await client.close()


async def test_an_expiry_swept_mid_migration_is_kept_and_expires_once_the_slot_has_moved(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """While a shard's slot is half moved Redis answers its scripts TRYAGAIN: the sweep
    leaves the expiry for later rather than dropping it as a corrupt record's."""
    storage = on_cluster
    assert storage.keys.shards is not None
    record = await storage.interrupts.create_interrupt(
        make_record(run_id="half_moved", expires_in=timedelta(hours=1))
    )
    slot = key_slot(shard_tag(storage.keys.shard_of("half_moved"), storage.keys.shards).encode())
    cluster = cast(RedisCluster, storage.client.raw)
    port = cluster.get_node_from_key(storage.keys.record(record.id)).port
    owner = next(i for i, server in enumerate(redis_cluster.servers) if server.port == port)
    source, target = redis_cluster.servers[owner], redis_cluster.servers[(owner + 1) % 3]
    src, dst = (redis_cluster._async_client(s) for s in (source, target))
    try:
        await dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.node_id)
        await src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.node_id)
        moved = [storage.keys.record(record.id)]
        await src.migrate("127.0.0.1", target.port, moved, 0, 5000, auth=redis_cluster._password)
        assert await storage.interrupts.expire_due(NOW + timedelta(hours=1)) == []
        while keys := await src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            await src.migrate("127.0.0.1", target.port, keys, 0, 5000, auth=redis_cluster._password)
        for server in redis_cluster.servers:
            admin = redis_cluster._async_client(server)
            await admin.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target.node_id)
            await admin.aclose()
        expired = await storage.interrupts.expire_due(NOW + timedelta(hours=1))
        assert [(e.outcome, e.record.id) for e in expired] == [("expired", record.id)]
    finally:
        await src.aclose()
        await dst.aclose()
        await redis_cluster.migrate_slot(slot, to=owner)


def _run_off_a_node(storage: Storage, stem: str) -> tuple[str, int]:
    """A run whose keys live on another node than run ``<stem>_0``'s, and that node's port:
    the node the test stalls."""
    cluster = cast(RedisCluster, storage.client.raw)

    def port_of(run: str) -> int:
        return cast(int, cluster.get_node_from_key(storage.keys.run_pending(run)).port)

    runs = [f"{stem}_{n}" for n in range(100)]
    stalled = port_of(runs[0])
    return next(run for run in runs if port_of(run) != stalled), stalled


@contextlib.asynccontextmanager
async def _impatient(
    redis_cluster: EmbeddedCluster, storage: Storage
) -> AsyncIterator[InterruptStore]:
    """Interrupts through a client that waits 0.3 s for a node's answer."""
    client = RedisClient(redis_cluster.url, timeout=0.3)
    keys = storage.keys
    try:
        yield InterruptStore(client, keys, Retention(), InterruptQueries(client, keys))
    finally:
        await client.close()


@contextlib.contextmanager
def _stalled(redis_cluster: EmbeddedCluster, port: int) -> Iterator[None]:
    """The node at ``port`` stops answering (SIGSTOP) while the block runs."""
    node = next(s for s in redis_cluster.servers if s.port == port)
    assert node.process is not None
    os.kill(node.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(node.process.pid, signal.SIGCONT)


async def test_the_outbox_of_the_shards_that_answer_is_posted_while_another_node_stalls(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """A node that stops answering holds up its own shards' cards only: the others' are
    handed out, not leased and thrown away with the stalled node's error."""
    posting, stalled = _run_off_a_node(on_cluster, "outbox")
    record = make_record(run_id=posting)
    await on_cluster.interrupts.create_interrupt(record, post_lease=timedelta(0))
    async with _impatient(redis_cluster, on_cluster) as interrupts:
        assert await interrupts.claim_outbox(NOW - timedelta(days=1)) == []  # scripts loaded
        with _stalled(redis_cluster, stalled):
            claimed = await interrupts.claim_outbox(NOW + timedelta(seconds=1))
    assert [r.id for r in claimed] == [record.id]


async def test_a_script_lost_by_every_node_is_loaded_where_it_runs_while_another_node_stalls(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """The nodes lost their scripts (restarted without persistence): each is sent the
    script where a call needs it, not loaded on every node, which waits on the stalled one."""
    posting, stalled = _run_off_a_node(on_cluster, "outbox")
    record = make_record(run_id=posting)
    await on_cluster.interrupts.create_interrupt(record, post_lease=timedelta(0))
    cluster = cast(RedisCluster, on_cluster.client.raw)
    async with _impatient(redis_cluster, on_cluster) as interrupts:
        assert await interrupts.claim_outbox(NOW - timedelta(days=1)) == []  # connected
        await cluster.execute_command("SCRIPT FLUSH", target_nodes=RedisCluster.ALL_NODES)
        with _stalled(redis_cluster, stalled):
            claimed = await interrupts.claim_outbox(NOW + timedelta(seconds=1))
    assert [r.id for r in claimed] == [record.id]


async def test_requests_on_the_nodes_that_answer_expire_while_another_node_stalls(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """The expiry sweep goes on over the shards whose node answers."""
    expiring, stalled = _run_off_a_node(on_cluster, "expiring")
    record = make_record(run_id=expiring, expires_in=timedelta(hours=1))
    await on_cluster.interrupts.create_interrupt(record)
    async with _impatient(redis_cluster, on_cluster) as interrupts:
        assert await interrupts.expire_due(NOW) == []  # the client knows the slots and scripts
        with _stalled(redis_cluster, stalled):
            expired = await interrupts.expire_due(NOW + timedelta(hours=1))
    assert [(e.outcome, e.record.id) for e in expired] == [("expired", record.id)]


async def test_a_decision_on_a_node_that_stalls_is_not_sent_again_after_its_timeout(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """A script that timed out may have run: as on one server, it is an error after one
    timeout, not sent to the stalled node again and again while its caller waits."""
    stalled_run, _ = _run_off_a_node(on_cluster, "decided")
    record = make_record(run_id=stalled_run)
    await on_cluster.interrupts.create_interrupt(record)
    cluster = cast(RedisCluster, on_cluster.client.raw)
    port = cast(int, cluster.get_node_from_key(on_cluster.keys.record(record.id)).port)
    async with _impatient(redis_cluster, on_cluster) as interrupts:
        assert await interrupts.expire_due(NOW) == []  # the client knows the slots and scripts
        with _stalled(redis_cluster, port):
            started = time.monotonic()
            with pytest.raises(StorageTimeoutError):
                await interrupts.decide(
                    record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
                )
            waited = time.monotonic() - started
    assert waited < 1.2, f"waited {waited:.1f} s: sent again after timing out"
    after = await on_cluster.interrupts.decide(  # the node answers again: one decision
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    stored = await on_cluster.queries.get(record.id)
    assert stored is not None and stored.state == "approved"
    assert after.status in ("recorded", "refused")


async def test_a_pipeline_read_on_a_node_that_stalls_is_an_error_after_one_timeout(
    on_cluster: Storage, redis_cluster: EmbeddedCluster
) -> None:
    """Commands sent together (App Home's look over every shard's channel list) are not
    sent to a stalled node again after they timed out either, while their caller waits."""
    cluster = cast(RedisCluster, on_cluster.client.raw)
    port = cast(int, cluster.get_node_from_key(on_cluster.keys.by_open_channel(0)).port)
    client = RedisClient(redis_cluster.url, timeout=0.3)
    queries = InterruptQueries(client, on_cluster.keys)
    try:
        assert (await queries.pending_open_in(["C1"])).records == ()  # the client knows the slots
        with _stalled(redis_cluster, port):
            started = time.monotonic()
            with pytest.raises(StorageTimeoutError):
                await queries.pending_open_in(["C1"])
            waited = time.monotonic() - started
    finally:
        await client.close()
    assert waited < 1.2, f"waited {waited:.1f} s: sent again after timing out"


async def test_someone_back_and_a_revoked_trust_are_removed_on_a_cluster(
    on_cluster: Storage,
) -> None:
    """Removing one of the global hashes' entries keeps this call's answer in that hash's
    slot: a cluster runs it as on one server."""
    await on_cluster.away.set(Away(user="UALICE", until=NOW + timedelta(days=1), delegate=None))
    assert await on_cluster.away.clear("UALICE")
    assert not await on_cluster.away.clear("UALICE")
    grant = await on_cluster.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel="C0OPS",
        args_digest=None,
        granted_by="UALICE",
        granted_at=NOW,
        expires_at=NOW + timedelta(hours=1),
        record_id="run_1/int_1",
    )
    revoked = await on_cluster.trust.revoke(grant.id, now=NOW)
    assert revoked is not None and revoked.id == grant.id
    assert await on_cluster.trust.revoke(grant.id, now=NOW) is None


async def test_an_outcome_report_is_taken_and_forgotten_whole_on_a_cluster(
    on_cluster: Storage,
) -> None:
    """A job's outcome and its run's end mark are written, and taken back, in one step, and
    the report taken after one forgotten withdraws its audit entry in its own: their keys and
    the run's audit stream share its slot."""
    runs, run_id = on_cluster.job_runs, "req_" + "c" * 32
    entry = AuditEntry(event="outcome", record_id=f"{run_id}/int_1", run_id=run_id, at=NOW)
    gone = replace(entry, event="outcome_withdrawn", detail="")
    a, b = '{"not_run": "a"}', '{"not_run": "b"}'
    assert await runs.report(run_id, "digest-a", outcome=a, at=NOW, withdrawal=gone) == "first"
    await on_cluster.audit.append_once(replace(entry, detail=a), once=audit_mark("digest-a"))
    await runs.forget_report(run_id, "digest-a")
    assert (await runs.read(run_id)).outcome is None
    assert await runs.report(run_id, "digest-b", outcome=b, at=NOW, withdrawal=gone) == "first"
    assert await runs.report(run_id, "digest-a", outcome=a, at=NOW, withdrawal=gone) == "other"
    trail = [(e.event, e.detail) for e in await on_cluster.audit.read() if e.run_id == run_id]
    assert trail == [("outcome", a), ("outcome_withdrawn", a)]
    assert (await runs.read(run_id)).outcome == '{"not_run": "b"}'
