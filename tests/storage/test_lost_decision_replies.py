"""Decisions whose reply was lost (see test_lost_replies): a click, a batch, an app's
decision, an undo or a revocation sent again is answered as done, not as refused or
replayed; an app's round is handed over or let go once."""

from __future__ import annotations

from datetime import timedelta

from redis_faults import reply_lost_once
from storage_helpers import DIGEST, NOW, make_record

from agent_runtime.interrupts import Decision
from storage import Storage


async def test_an_apps_decision_sent_again_is_its_own_not_decided_elsewhere(
    one_server: Storage,
) -> None:
    storage = one_server
    record = await storage.interrupts.create_interrupt(make_record())
    with reply_lost_once() as lost:
        status, decided = await storage.interrupts.decide_in_app(
            record.id, "app", Decision.approve(), now=NOW
        )
    assert lost == ["EVALSHA"]
    assert status == "recorded_last" and decided is not None and decided.state == "approved"
    again, _ = await storage.interrupts.decide_in_app(  # another call: refused
        record.id, "app", Decision.approve(), now=NOW
    )
    assert again == "already_decided"


async def test_an_undo_sent_again_is_told_undone_not_that_nothing_was_held(
    one_server: Storage,
) -> None:
    """An Undo click whose reply was lost is answered as undone (its card shows the request
    waiting again), not "no decision is waiting to be undone; nothing changed"."""
    record = make_record(undo_window=timedelta(seconds=60))
    await one_server.interrupts.create_interrupt(record)
    held = await one_server.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    assert held.status == "held"
    with reply_lost_once(naming=record.id) as lost:
        undone = await one_server.interrupts.undo(
            record.id, "UALICE", now=NOW + timedelta(seconds=5), channel="CAPPROVALS", message_ts=""
        )
    assert lost == ["EVALSHA"]
    assert undone.status == "recorded"
    assert undone.record is not None and undone.record.held is None
    assert undone.record.state == "pending"
    events = [e.event for e in await one_server.audit.read(after="-", count=10)]
    assert events.count("undone") == 1
    again = await one_server.interrupts.undo(  # a later click: nothing is held now
        record.id, "UALICE", now=NOW + timedelta(seconds=6), channel="CAPPROVALS", message_ts=""
    )
    assert (again.status, again.reason) == ("refused", "not_held")


async def test_a_round_handed_over_again_by_the_same_call_is_handed_over(
    one_server: Storage,
) -> None:
    """An app run that failed, whose hand-over lost its reply, still hears its round is
    handed over (its run error says so), and the round's job is queued once."""
    record = await one_server.interrupts.create_interrupt(make_record())
    await one_server.resume.ensure_group()
    status, _ = await one_server.interrupts.decide_in_app(
        record.id, "app", Decision.approve(), now=NOW
    )
    assert status == "recorded_last"
    with reply_lost_once(naming=record.id) as lost:
        job = await one_server.interrupts.hand_over(record.id, now=NOW)
    assert lost == ["EVALSHA"]
    [queued] = await one_server.resume.claim("w1", shard=one_server.keys.shard_of(record.run_id))
    assert job == queued.id
    assert await one_server.interrupts.hand_over(record.id, now=NOW) == ""  # another call
    assert not await one_server.interrupts.app_round_done(record.id)


async def test_a_round_let_go_again_by_the_same_call_is_let_go(one_server: Storage) -> None:
    """An app run that got through, whose letting go of its round lost its reply, is not
    logged as handed over before it ended; the round is not handed over after."""
    record = await one_server.interrupts.create_interrupt(make_record())
    await one_server.interrupts.decide_in_app(record.id, "app", Decision.approve(), now=NOW)
    with reply_lost_once(naming=record.id) as lost:
        assert await one_server.interrupts.app_round_done(record.id)
    assert lost == ["EVALSHA"]
    assert await one_server.interrupts.hand_over(record.id, now=NOW) == ""
    assert await one_server.resume.lag() == 0


async def test_a_batch_decided_again_by_the_same_call_is_decided_not_refused(
    one_server: Storage,
) -> None:
    """ "Approve selected" on a batch card whose decision lost its reply: its clicker is not
    told the items were decided already (by that very click), and the run resumes once."""
    records = [make_record(run_id="run_lostbatch", call_id=f"c{i}") for i in range(2)]
    await one_server.interrupts.create_interrupts(records)
    with reply_lost_once(naming=records[0].id) as lost:
        outcomes, damaged = await one_server.interrupts.decide_together(
            [(r.id, Decision.approve(), DIGEST) for r in records],
            "UALICE",
            now=NOW,
            channel="CAPPROVALS",
            message_ts="",
        )
    assert lost == ["EVALSHA"] and damaged == []
    assert [(o.status, o.reason) for o in outcomes] == [("recorded", None)] * 2
    assert all(o.record is not None and o.record.state == "approved" for o in outcomes)
    assert outcomes[1].resume_job_id is not None
    again, _ = await one_server.interrupts.decide_together(  # another click: refused
        [(r.id, Decision.approve(), DIGEST) for r in records],
        "UALICE",
        now=NOW,
        channel="CAPPROVALS",
        message_ts="",
    )
    assert [o.reason for o in again] == ["already_decided"] * 2


async def test_a_click_decided_again_by_the_same_call_is_decided_not_replayed(
    one_server: Storage,
) -> None:
    """A click whose decision lost its reply is answered as recorded (its requester told,
    an "Approve and trust" grant kept), not as a replay whose news another decider sent;
    another decider taking the click entry again gets the replay."""
    record = await one_server.interrupts.create_interrupt(make_record())
    with reply_lost_once(naming=record.id) as lost:
        outcome = await one_server.interrupts.decide(
            record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW, click_id="17-0"
        )
    assert lost == ["EVALSHA"]
    assert outcome.status == "recorded" and outcome.resume_job_id is not None
    assert outcome.record is not None and outcome.record.state == "approved"
    again = await one_server.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW, click_id="17-0"
    )
    assert (again.status, again.reason) == ("replayed", None)


async def test_a_refused_click_decided_again_by_the_same_call_is_told_why(
    one_server: Storage,
) -> None:
    """A click refused by a call whose reply was lost: its clicker is told why."""
    record = await one_server.interrupts.create_interrupt(make_record())
    with reply_lost_once(naming=record.id) as lost:
        outcome = await one_server.interrupts.decide(
            record.id, "UMALLORY", Decision.approve(), args_digest=DIGEST, now=NOW, click_id="18-0"
        )
    assert lost == ["EVALSHA"]
    assert (outcome.status, outcome.reason) == ("refused", "not_allowed")


async def test_a_trust_grant_revoked_again_by_the_same_call_is_revoked(one_server: Storage) -> None:
    """A revocation whose reply was lost: its revoker is told the grant is revoked (and it
    is audited), not that there was no such grant."""
    grant = await one_server.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel="C0OPS",
        args_digest=None,
        granted_by="UALICE",
        granted_at=NOW,
        expires_at=NOW + timedelta(hours=1),
        record_id="run_1/int_1",
    )
    with reply_lost_once(naming=grant.id) as lost:
        revoked = await one_server.trust.revoke(grant.id, now=NOW)
    assert lost == ["EVALSHA"]
    assert revoked is not None and revoked.id == grant.id
    assert await one_server.trust.active(NOW) == []
    assert await one_server.trust.revoke(grant.id, now=NOW) is None  # another call: nothing left
