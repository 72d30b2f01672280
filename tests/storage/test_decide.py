"""Decisions: one atomic step each; refusals change nothing (issue 3, tests 1, 2 and 6)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import redis.asyncio as aioredis
from storage_helpers import NOW, later, make_record, run_key, snapshot

from agent_runtime.interrupts import Decision, Remember
from agent_runtime.messages import args_digest
from storage import EmbeddedRedis, Storage, connect
from storage.decisions import APP_HOLD
from storage.errors import StorageResponseError

DIGEST = args_digest({"path": "/tmp/old"})


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


async def test_refusals_leave_every_key_byte_for_byte_unchanged(
    storage: Storage, raw: aioredis.Redis, key_prefix: str
) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(requested_by="UALICE", decisions=("approve", "reject"))
    )
    posted = await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.0001", now=NOW)
    assert posted is not None
    before = await snapshot(raw, key_prefix)
    decide = storage.interrupts.decide
    cases = [
        (record.id, "UMALLORY", Decision.approve(), DIGEST, {}, "not_allowed"),
        (record.id, "UALICE", Decision.approve(), DIGEST, {}, "self_approval"),
        (record.id, "UBOB", Decision.approve(), "0" * 32, {}, "wrong_digest"),
        (record.id, "UBOB", Decision.respond("x"), DIGEST, {}, "not_offered"),
        (
            record.id,
            "UBOB",
            Decision.approve(),
            DIGEST,
            {"channel": "COTHER", "message_ts": "1700.0001"},
            "wrong_message",
        ),
        ("run_1/int_nope", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        ("no-slash", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        ("run 1/int_x", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        ("run_1/int_{x}", "UBOB", Decision.approve(), DIGEST, {}, "unknown"),
        (record.id, "U<!channel>", Decision.approve(), DIGEST, {}, "unknown"),
        (record.id, "UBOB", Decision.approve(), DIGEST, {}, None),
    ]
    for rid, user, decision, digest, origin, reason in cases[:-1]:
        out = await decide(rid, user, decision, args_digest=digest, now=NOW, **origin)
        assert (out.status, out.reason) == ("refused", reason), (rid, user)
        assert await snapshot(raw, key_prefix) == before, reason
    rid, user, decision, digest, origin, _ = cases[-1]
    ok = await decide(
        rid,
        user,
        decision,
        args_digest=digest,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0001",
    )
    assert ok.status == "recorded"


async def test_empty_allow_list_means_nobody_unless_open_to_channel_and_clicked_there(
    storage: Storage,
) -> None:
    closed = await storage.interrupts.create_interrupt(make_record(call_id="c1", allowed_users=()))
    opened = await storage.interrupts.create_interrupt(
        make_record(call_id="c2", allowed_users=(), open_to_channel=True)
    )
    decide = storage.interrupts.decide
    out = await decide(closed.id, "UANY", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert out.reason == "not_allowed"
    out = await decide(opened.id, "UANY", Decision.approve(), args_digest=DIGEST, now=NOW)
    assert out.reason == "not_allowed"  # from no card (Home): nothing shows a channel member
    on_card = {"channel": "CAPPROVALS", "message_ts": "1.0"}
    out = await decide(
        opened.id, "UANY", Decision.approve(), args_digest=DIGEST, now=NOW, **on_card
    )
    assert out.status == "recorded"


async def test_group_members_captured_at_posting_may_decide(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(allowed_users=(), allowed_groups=("SOPS",), group_members=("UDAVE",))
    )
    out = await storage.interrupts.decide(
        record.id, "UDAVE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    assert out.status == "recorded"


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


async def test_a_click_between_the_post_and_its_recording_counts_from_its_channel_only(
    storage: Storage,
) -> None:
    """Slack shows the card before the bot stores its ts (and its poster may die there): a
    click in that instant counts when it comes from the card's channel, and records where
    the card is; from any other channel it is refused."""
    record = await storage.interrupts.create_interrupt(
        make_record(channel="CAPPROVALS", decisions=("approve", "reject"))
    )
    decide = storage.interrupts.decide
    elsewhere = await decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="COTHER",
        message_ts="1700.0001",
    )
    assert (elsewhere.status, elsewhere.reason) == ("refused", "wrong_message")
    early = await decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0001",
    )
    assert early.status == "recorded" and early.state == "approved"
    # The click said where the card is: updates and the run's thread go there.
    assert early.record is not None and early.record.message_ts == "1700.0001"
    assert early.record.thread_ts == "1700.0001"


async def test_a_first_vote_from_an_unrecorded_card_keeps_it_from_being_posted_again(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(channel="CAPPROVALS", min_approvals=2)
    )
    vote = await storage.interrupts.decide(
        record.id,
        "UBOB",
        Decision.approve(),
        args_digest=DIGEST,
        now=NOW,
        channel="CAPPROVALS",
        message_ts="1700.0002",
    )
    assert vote.status == "progress"
    assert await storage.interrupts.claim_outbox(NOW + timedelta(hours=1)) == []
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.message_ts == "1700.0002"


async def test_past_its_expiry_a_record_takes_only_a_denial_from_the_app(
    storage: Storage, raw: aioredis.Redis, key_prefix: str
) -> None:
    record = await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
    before = await snapshot(raw, key_prefix)
    status, stored = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.approve(), now=later(hours=1)
    )
    assert status == "expired" and stored is not None and stored.state == "pending"
    assert await snapshot(raw, key_prefix) == before  # nothing changed
    status, denied = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.reject("too late"), now=later(hours=1)
    )
    assert status == "recorded_last" and denied is not None and denied.state == "denied"


async def test_a_decision_in_the_app_wins_once_and_queues_no_resume(storage: Storage) -> None:
    await storage.resume.ensure_group()
    record = await storage.interrupts.create_interrupt(make_record())
    status, decided = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.approve(), now=later(minutes=1)
    )
    assert status == "recorded_last" and decided is not None  # the run's last card
    assert decided.state == "approved" and decided.decided_by == "app"
    assert await storage.resume.lag() == 0  # the app resumes the run itself
    click = await storage.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=later(minutes=2)
    )
    assert (click.status, click.reason, click.decided_by) == ("refused", "already_decided", "app")
    again, _ = await storage.interrupts.decide_in_app(
        record.id, "app", Decision.reject("no"), now=later(minutes=3)
    )
    assert again == "already_decided"
    assert (
        await storage.interrupts.decide_in_app("run_x/int_y", "app", Decision.approve(), now=NOW)
    )[0] == "unknown"


async def test_the_round_an_app_closed_is_its_own_unless_it_lets_go(storage: Storage) -> None:
    """An app's answers to a run's cards, the last one by the app: the app holds the round
    (no resume job) until it finishes it, or hands it over once (its run failed), or its
    hold lapses (its process died) and the round is handed over then."""
    await storage.resume.ensure_group()
    decide_in_app, interrupts = storage.interrupts.decide_in_app, storage.interrupts
    first, second, third = (make_record(call_id=c) for c in ("c1", "c2", "c3"))
    await interrupts.create_interrupts([first, second, third])
    assert (await decide_in_app(first.id, "app", Decision.approve(), now=NOW))[0] == "recorded"
    await interrupts.decide(third.id, "UBOB", Decision.reject("no"), args_digest=DIGEST, now=NOW)
    assert await storage.resume.lag() == 0  # c2 still waits
    assert (await decide_in_app(second.id, "app", Decision.approve(), now=NOW))[0] == (
        "recorded_last"
    )
    assert await storage.resume.lag() == 0  # the app runs the round
    assert await interrupts.lapsed_app_rounds(NOW) == []
    assert await interrupts.hand_over(second.id, now=NOW) != ""  # its run failed
    assert await interrupts.hand_over(second.id, now=NOW) == ""  # once
    assert not await interrupts.app_round_done(second.id)
    [job] = await storage.resume.claim("w1", shard=storage.keys.shard_of("run_1"))
    assert job.record_ids == tuple(sorted([first.id, second.id, third.id]))

    finished, lapsed = make_record(run_id="run_2"), make_record(run_id="run_3")
    for record in (finished, lapsed):
        await interrupts.create_interrupt(record)
        await decide_in_app(record.id, "app", Decision.approve(), now=NOW)
    assert await interrupts.app_round_done(finished.id)  # the app ran it to its end
    await interrupts.renew_app_round(lapsed.id, now=NOW + timedelta(minutes=1))
    assert await interrupts.lapsed_app_rounds(NOW + APP_HOLD) == []  # renewed
    assert await interrupts.lapsed_app_rounds(NOW + APP_HOLD + timedelta(minutes=1)) == [lapsed.id]
    assert await interrupts.hand_over(lapsed.id, now=NOW) != ""
    assert await interrupts.hand_over(finished.id, now=NOW) == ""
    shards = storage.keys.all_shards
    queued = [j.run_id for n in shards for j in await storage.resume.claim("w1", shard=n)]
    assert queued == ["run_3"]


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
