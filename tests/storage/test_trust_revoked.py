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


async def _grant(
    store: Storage, minutes: int = 60, *, by: str = "run_0/int_call_0"
) -> tuple[str, datetime]:
    grant = await store.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel="CAPPROVALS",
        args_digest=None,
        granted_by="UALICE",
        granted_at=NOW,
        expires_at=NOW + timedelta(minutes=minutes),
        record_id=by,
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


async def _held_under(store: Storage, run_id: str, grant: tuple[str, datetime]) -> str:
    """A request approved under ``grant``, held in its minute-long undo window; its id."""
    record = make_record(run_id=run_id, undo_window=timedelta(minutes=1))
    await store.interrupts.create_interrupt(record)
    outcome = await store.interrupts.decide(
        record.id,
        "UALICE",
        Decision(type="approve"),
        args_digest=DIGEST,
        now=NOW + timedelta(seconds=1),
        trust_grant=grant,
    )
    assert outcome.status == "held"
    return record.id


async def test_an_approval_held_under_a_grant_revoked_or_ended_in_its_window_waits_again(
    store: Storage,
) -> None:
    """When the window ends: under the revoked grant and the one that ended, the approval
    is taken back (nobody approved those calls) and the request waits for a person,
    nothing resumed; under the standing grant it is final. One step each, on a cluster
    too (the shard's revoked grants are in the record's slot)."""
    revoked = await _grant(store, by="run_0/int_a")
    ending = await _grant(store, 1, by="run_0/int_b")
    standing = await _grant(store, by="run_0/int_c")
    runs = {"run_revoked": revoked, "run_ending": ending, "run_standing": standing}
    rids = {run: await _held_under(store, run, grant) for run, grant in runs.items()}
    assert await store.trust.revoke(revoked[0], now=NOW + timedelta(seconds=30)) is not None

    swept = await store.interrupts.expire_due(NOW + timedelta(seconds=61))
    outcomes = {r.record.run_id: (r.outcome, r.record.state) for r in swept}  # type: ignore[union-attr]
    assert outcomes == {
        "run_revoked": ("reopened", "pending"),
        "run_ending": ("reopened", "pending"),
        "run_standing": ("released", "approved"),
    }
    for run, why in (("run_revoked", "revoked"), ("run_ending", "ended")):
        back = await store.queries.get(rids[run])
        assert back is not None and back.held is None and back.trust_grant is None
        assert back.votes == () and back.undone is not None
        assert (back.undone.lapsed, back.undone.decided_by, back.undone.by) == (why, "UALICE", "")
        assert back.undone.trust_grant == runs[run][0]
    jobs = [r.resume_job_id for r in swept if r.record.run_id != "run_standing"]  # type: ignore[union-attr]
    assert jobs == [None, None]
    trail = await store.audit.read(after="-", count=100)
    assert sorted(e.detail for e in trail if e.event == "trust_lapsed") == sorted(
        [f"{revoked[0]} revoked", f"{ending[0]} ended"]
    )

    # A person may decide it now, as any pending request.
    again = await store.interrupts.decide(
        rids["run_revoked"],
        "UBOB",
        Decision(type="approve"),
        args_digest=DIGEST,
        now=NOW + timedelta(seconds=62),
    )
    assert again.status == "held" and again.record is not None
    assert again.record.undone is not None and again.record.undone.lapsed == "revoked"
