"""Decisions: one atomic step each, whoever clicks and however many at once; a quorum
counts each person once, and a run resumes once its last card is decided (issue 3)."""

from __future__ import annotations

import asyncio

import pytest
from storage_helpers import DIGEST, NOW, later, make_record, run_key

from agent_runtime.interrupts import Decision, Remember
from storage import Storage


async def test_approval_records_decision_and_enqueues_one_resume(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record())
    outcome = await storage.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=later(minutes=1)
    )
    assert outcome.status == "recorded"
    assert outcome.state == "approved" and outcome.decided_by == "UALICE"
    assert outcome.resume_job_id is not None
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.state == "approved"
    response = stored.response()
    assert response is not None and response.decision == Decision.approve()
    assert response.metadata["decided_by"] == "UALICE"


async def test_200_concurrent_clicks_make_exactly_one_decision(storage: Storage) -> None:
    users = [f"U{i:04d}" for i in range(200)]
    record = await storage.interrupts.create_interrupt(make_record(allowed_users=tuple(users)))
    outcomes = await asyncio.gather(
        *(
            storage.interrupts.decide(
                record.id, user, Decision.approve(), args_digest=DIGEST, now=later(minutes=1)
            )
            for user in users
        )
    )
    recorded = [o for o in outcomes if o.status == "recorded"]
    assert len(recorded) == 1
    winner = recorded[0].decided_by
    refused = [o for o in outcomes if o.status == "refused"]
    assert len(refused) == 199
    assert all(o.reason == "already_decided" and o.decided_by == winner for o in refused)
    assert all(o.state == "approved" for o in refused)
    stream = run_key(storage, storage.keys.resume_stream)
    assert await storage.client.raw.xlen(stream) == 1


async def test_quorum_of_two_counts_each_user_once(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(min_approvals=2))
    decide = storage.interrupts.decide
    first = await decide(record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW)
    again = await decide(record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert (first.status, first.approvals, first.required) == ("progress", 1, 2)
    assert (again.status, again.reason, again.approvals) == ("refused", "already_voted", 1)
    assert await storage.client.raw.xlen(run_key(storage, storage.keys.resume_stream)) == 0


async def test_one_persons_edit_or_reply_never_ends_a_quorum(storage: Storage) -> None:
    """Even on a record whose stored policy still offers them (stored before cards
    stopped offering them to a quorum): a quorum approves the call as shown."""
    offered = ("approve", "edit", "respond", "reject")
    record = await storage.interrupts.create_interrupt(
        make_record(min_approvals=2, decisions=offered)
    )
    decide = storage.interrupts.decide
    edited = Decision.edit({"path": "/"})
    edit = await decide(record.id, "UALICE", edited, args_digest=DIGEST, now=NOW)
    reply = await decide(record.id, "UALICE", Decision.respond("done"), args_digest=DIGEST, now=NOW)
    assert (edit.status, edit.reason) == ("refused", "not_offered")
    assert (reply.status, reply.reason) == ("refused", "not_offered")
    first = await decide(record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW)
    second = await decide(record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert (first.status, second.status) == ("progress", "recorded")
    assert second.record is not None and second.record.state == "approved"


async def test_a_stand_in_is_one_voice_with_the_person_away(storage: Storage) -> None:
    """Never two votes of a quorum, and never the requester's own approval by proxy."""
    users, stand_ins = ("UALICE", "UBOB", "UMALLORY"), (("UMALLORY", "UALICE"),)
    quorum = await storage.interrupts.create_interrupt(
        make_record(run_id="run_q", allowed_users=users, stand_ins=stand_ins, min_approvals=2)
    )
    decide = storage.interrupts.decide
    first = await decide(quorum.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW)
    proxy = await decide(quorum.id, "UMALLORY", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert first.status == "progress"
    assert (proxy.status, proxy.reason) == ("refused", "already_voted")
    own = await storage.interrupts.create_interrupt(
        make_record(
            run_id="run_own", requested_by="UALICE", allowed_users=users, stand_ins=stand_ins
        )
    )
    laundered = await decide(own.id, "UMALLORY", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert (laundered.status, laundered.reason) == ("refused", "self_approval")


async def test_quorum_three_concurrent_approvers_one_decision(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(min_approvals=2))
    outcomes = await asyncio.gather(
        *(
            storage.interrupts.decide(
                record.id, user, Decision.approve(), args_digest=DIGEST, now=NOW
            )
            for user in ("UALICE", "UBOB", "UCAROL")
        )
    )
    statuses = sorted(o.status for o in outcomes)
    assert statuses == ["progress", "recorded", "refused"]
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.state == "approved" and len(stored.approvals) == 2
    assert await storage.client.raw.xlen(run_key(storage, storage.keys.resume_stream)) == 1


async def test_deny_after_one_approval_ends_it_denied(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(min_approvals=2))
    decide = storage.interrupts.decide
    await decide(record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW)
    deny = await decide(
        record.id, "UBOB", Decision.reject("not today"), args_digest=DIGEST, now=NOW
    )
    assert deny.status == "recorded" and deny.state == "denied" and deny.decided_by == "UBOB"
    late = await decide(record.id, "UCAROL", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert late.reason == "already_decided" and late.state == "denied"
    assert deny.record is not None and [v.user_id for v in deny.record.votes] == [
        "UALICE",
        "UBOB",
    ]


async def test_edit_and_respond_are_final_and_keep_their_payload(storage: Storage) -> None:
    offered = ("approve", "reject", "edit", "respond")
    one = await storage.interrupts.create_interrupt(make_record(call_id="c1", decisions=offered))
    two = await storage.interrupts.create_interrupt(make_record(call_id="c2", decisions=offered))
    edit = Decision.edit({"path": "/tmp/old/only-logs", "n": 12345678901234567890})
    out = await storage.interrupts.decide(one.id, "UBOB", edit, args_digest=DIGEST, now=NOW)
    assert out.state == "edited" and out.record is not None
    assert out.record.decision == edit.to_dict()
    reply = Decision.respond("use the archive instead")
    out = await storage.interrupts.decide(two.id, "UBOB", reply, args_digest=DIGEST, now=NOW)
    assert out.state == "responded" and out.resume_job_id is not None


async def test_resume_waits_for_the_last_pending_interrupt_of_the_run(storage: Storage) -> None:
    first, second = make_record(call_id="c1"), make_record(call_id="c2")
    await storage.interrupts.create_interrupts([first, second])
    decide = storage.interrupts.decide
    one = await decide(first.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert one.status == "recorded" and one.resume_job_id is None
    two = await decide(second.id, "UBOB", Decision.reject("no"), args_digest=DIGEST, now=NOW)
    assert two.resume_job_id is not None
    jobs = await storage.resume.claim("w1", shard=storage.keys.shard_of("run_1"))
    assert [j.record_ids for j in jobs] == [tuple(sorted([first.id, second.id]))]


@pytest.mark.parametrize(
    ("scope", "minutes", "run_sees_it"), [("minutes", 60, False), ("run", None, True)]
)
async def test_the_run_sees_a_grant_for_minutes_as_a_plain_approval(
    storage: Storage, scope: str, minutes: int | None, run_sees_it: bool
) -> None:
    """A grant for minutes lives in storage, where it is checked and can be revoked; the
    run must not keep a copy that would outlive a revocation."""
    record = await storage.interrupts.create_interrupt(make_record())
    remember = Remember(scope=scope, minutes=minutes)  # type: ignore[arg-type]
    decided = await storage.interrupts.decide(
        record.id, "UALICE", Decision.approve(remember=remember), args_digest=DIGEST, now=NOW
    )
    assert decided.record is not None
    response = decided.record.response()
    assert response is not None and response.decision is not None
    assert response.decision.type == "approve"
    assert (response.decision.remember is not None) is run_sees_it


async def test_a_withdrawal_leaves_a_lost_decided_record_lost(storage: Storage) -> None:
    """A decision waiting on the run's other card, its record since lost: the withdrawal
    marks nothing on it, so no half record (only its marks) appears in its place."""
    first, second = [
        await storage.interrupts.create_interrupt(make_record(run_id="lostdecided", call_id=c))
        for c in ("c1", "c2")
    ]
    outcome = await storage.interrupts.decide(
        first.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=later(minutes=1)
    )
    assert outcome.status == "recorded" and outcome.resume_job_id is None
    key = storage.keys.record(first.id)
    assert await storage.client.raw.delete(key) == 1
    cancelled = await storage.interrupts.cancel_run(
        "lostdecided", reason="withdrawn", now=later(minutes=2), by="UBOB", lost=first.id
    )
    assert cancelled.ids == (second.id,) and cancelled.not_run == (first.id,)
    assert await storage.client.raw.exists(key) == 0
    kept = await storage.queries.get(second.id)
    assert kept is not None and kept.state == "cancelled" and kept.run_lost == first.id


async def test_a_trust_for_minutes_holds_the_resume_until_its_grant_is_stored_once(
    storage: Storage,
) -> None:
    """The run of an "Approve and trust" for minutes whose caller stores its grant next
    resumes when the caller says the grant is stored, so the resumed run meets it; said
    again (a decider taking the click over), nothing more is queued."""
    stream = run_key(storage, storage.keys.resume_stream)
    record = await storage.interrupts.create_interrupt(make_record())
    trust = Decision.approve(remember=Remember(scope="minutes", minutes=60))
    decided = await storage.interrupts.decide(
        record.id, "UALICE", trust, args_digest=DIGEST, now=NOW, hold_for_grant=True
    )
    assert (decided.status, decided.resume_job_id) == ("recorded", None)
    assert await storage.client.raw.xlen(stream) == 0
    job = await storage.interrupts.grant_stored(record.id, now=NOW)
    assert job is not None and await storage.client.raw.xlen(stream) == 1
    assert await storage.interrupts.grant_stored(record.id, now=NOW) is None
    assert await storage.client.raw.xlen(stream) == 1


@pytest.mark.parametrize("remember", [Remember(scope="minutes", minutes=60), Remember(scope="run")])
async def test_a_trust_whose_caller_stores_no_grant_resumes_its_run_at_once(
    storage: Storage, remember: Remember
) -> None:
    """Only the caller that stores a grant holds the resume: a decision that merely says
    it remembers (one no grant follows) never leaves its run waiting for one."""
    record = await storage.interrupts.create_interrupt(make_record())
    decided = await storage.interrupts.decide(
        record.id, "UALICE", Decision.approve(remember=remember), args_digest=DIGEST, now=NOW
    )
    assert decided.status == "recorded" and decided.resume_job_id is not None
    assert await storage.client.raw.xlen(run_key(storage, storage.keys.resume_stream)) == 1
