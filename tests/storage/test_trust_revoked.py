"""An approval under a trust grant is decided only while the grant stands: revoked (on
any shard of a cluster) or ended, it decides nothing and the card stays pending."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest
from storage_helpers import DIGEST, NOW, make_record

from agent_runtime.interrupts import Decision
from storage import Storage, connect
from storage.embedded_cluster import EmbeddedCluster


@pytest.fixture(params=["single", "cluster"])
async def store(
    request: pytest.FixtureRequest, storage: Storage, key_prefix: str
) -> AsyncIterator[Storage]:
    if request.param == "single":
        yield storage
        return
    cluster: EmbeddedCluster = request.getfixturevalue("redis_cluster")
    on_cluster = await connect(cluster.url, prefix=key_prefix)
    yield on_cluster
    await on_cluster.close()


async def _grant(store: Storage, minutes: int = 60) -> tuple[str, datetime]:
    grant = await store.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel="CAPPROVALS",
        args_digest=None,
        granted_by="UALICE",
        granted_at=NOW,
        expires_at=NOW + timedelta(minutes=minutes),
        record_id="run_0/int_call_0",
    )
    assert grant is not None
    return grant.id, grant.expires_at


@pytest.mark.parametrize("run_id", ["run_1", "run_2", "run_3", "run_4"])
async def test_a_grant_revoked_before_the_decision_decides_nothing(
    store: Storage, run_id: str
) -> None:
    grant_id, ends = await _grant(store)
    record = make_record(run_id=run_id)
    await store.interrupts.create_interrupt(record)
    assert await store.trust.revoke(grant_id, now=NOW) is not None
    outcome = await store.interrupts.decide(
        record.id,
        "UALICE",
        Decision(type="approve"),
        args_digest=DIGEST,
        now=NOW + timedelta(seconds=1),
        click_id="trust-1",
        trust_grant=(grant_id, ends),
    )
    assert (outcome.status, outcome.reason) == ("refused", "trust_ended")
    stored = await store.queries.get(record.id)
    assert stored is not None and stored.state == "pending" and stored.trust_grant is None


async def test_a_grant_that_ended_decides_nothing_and_one_standing_approves(
    store: Storage,
) -> None:
    grant_id, ends = await _grant(store, minutes=1)
    late, on_time = make_record(run_id="run_late"), make_record(run_id="run_on_time")
    for record in (late, on_time):
        await store.interrupts.create_interrupt(record)
    outcomes = [
        await store.interrupts.decide(
            record.id,
            "UALICE",
            Decision(type="approve"),
            args_digest=DIGEST,
            now=NOW + after,
            trust_grant=(grant_id, ends),
        )
        for record, after in ((late, timedelta(minutes=1)), (on_time, timedelta(seconds=59)))
    ]
    assert [(o.status, o.reason) for o in outcomes] == [
        ("refused", "trust_ended"),
        ("recorded", None),
    ]
    approved = await store.queries.get(on_time.id)
    assert approved is not None and approved.trust_grant == grant_id
