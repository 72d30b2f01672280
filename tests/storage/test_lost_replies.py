"""A script whose reply is lost after it ran (a failover, a proxy's reset) is sent again by
redis-py's retry: the caller gets the answer the first run gave, not a refusal of itself.
On one server, where a lost reply can be staged in redis-py's reader."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from redis_faults import reply_lost_once
from storage_helpers import NOW, make_record

from agent_runtime.errors import ThreadBusyError
from agent_runtime.interrupts import Decision
from agent_runtime.messages import args_digest
from storage import EmbeddedRedis, LostRecord, Storage, connect
from storage.api_clients import ClientExistsError
from storage.audit import AuditEntry
from storage.epoch import to_ms
from storage.errors import DuplicateInterruptError
from storage.notes import Note

DIGEST = args_digest({"path": "/tmp/old"})


@pytest.fixture
async def one_server(redis_server: EmbeddedRedis, key_prefix: str) -> AsyncIterator[Storage]:
    storage = await connect(redis_server.url, prefix=key_prefix)
    yield storage
    await storage.close()


async def test_a_save_sent_again_finds_its_own_write(one_server: Storage) -> None:
    storage = one_server
    await storage.sessions.save("thread_t1", {"n": 1}, expected_version=0)
    with reply_lost_once() as lost:
        assert await storage.sessions.save("thread_t1", {"n": 2}, expected_version=1) == 2
    assert lost == ["EVALSHA"]
    stored = await storage.sessions.load("thread_t1")
    assert stored is not None and (stored.version, stored.snapshot) == (2, {"n": 2})


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


async def test_interrupts_created_again_by_the_same_call_are_created(one_server: Storage) -> None:
    """The call that stored them is told so (its caller posts the cards now); another
    call storing them again is told they exist (its caller leaves them to the outbox)."""
    record = make_record()
    with reply_lost_once() as lost:
        await one_server.interrupts.create_interrupts([record])
    assert lost == ["EVALSHA"]
    assert await one_server.queries.get(record.id) is not None
    with pytest.raises(DuplicateInterruptError):
        await one_server.interrupts.create_interrupts([record])


async def test_a_failure_reported_again_is_counted_once(one_server: Storage) -> None:
    record = await one_server.interrupts.create_interrupt(make_record())
    await one_server.resume.ensure_group()
    await one_server.interrupts.decide(
        record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    [job] = await one_server.resume.claim("w1", shard=one_server.keys.shard_of(record.run_id))
    with reply_lost_once() as lost:
        failed = await one_server.resume.fail(job, consumer="w1", error="ModelError", now=NOW)
    assert lost == ["EVALSHA"]
    assert (failed.attempts, failed.dead) == (1, False)
    again = await one_server.resume.fail(job, consumer="w1", error="ModelError", now=NOW)
    assert again.attempts == 2  # another failure counts


async def test_a_reminder_taken_again_by_the_same_sweep_is_handed_out(one_server: Storage) -> None:
    record = make_record(expires_in=timedelta(hours=5), reminders=(timedelta(hours=1),))
    await one_server.interrupts.create_interrupt(record)
    with reply_lost_once(naming=record.id) as lost:  # the sweep's pipeline, sent again
        [reminder] = await one_server.interrupts.due_reminders(NOW + timedelta(hours=1))
    assert lost == ["EVALSHA"]
    assert reminder.number == 1 and reminder.record.id == record.id
    assert await one_server.interrupts.due_reminders(NOW + timedelta(hours=2)) == []  # once


async def test_an_audit_entry_sent_again_is_added_once(one_server: Storage) -> None:
    entry = AuditEntry(
        event="message_updated", record_id="run_a1/int_1", run_id="run_a1", at=NOW, detail="x"
    )
    with reply_lost_once(naming="message_updated") as lost:
        ref = await one_server.audit.append(entry)
    assert lost == ["EVALSHA"]
    [stored] = await one_server.audit.read()
    assert stored.entry_id == ref and stored.event == "message_updated"
    await one_server.audit.append(entry)  # another call adds another entry
    assert len(await one_server.audit.read()) == 2


async def test_a_first_delivery_whose_claim_was_sent_again_is_still_the_first(
    one_server: Storage,
) -> None:
    """A Slack event whose claim lost its reply is acted on, not dropped as a retry."""
    with reply_lost_once(naming="Ev0LOST", command="SET") as lost:
        assert await one_server.deliveries.first("Ev0LOST")
    assert lost == ["SET"]
    assert not await one_server.deliveries.first("Ev0LOST")  # Slack's own retry


async def test_a_slack_request_whose_check_was_sent_again_is_still_new(
    one_server: Storage,
) -> None:
    """A click whose replay check lost its reply is let in, not refused as a replay."""
    with reply_lost_once(naming=":signed:", command="SET") as lost:
        assert await one_server.deliveries.first_signed("v0=" + "1" * 64)
    assert lost == ["SET"]
    assert not await one_server.deliveries.first_signed("v0=" + "1" * 64)  # a replay


async def test_an_end_marked_again_by_the_same_call_is_still_the_first(
    one_server: Storage,
) -> None:
    """A job's outcome (or a run's end) whose mark lost its reply is posted, not refused
    as reported already."""
    run_id = "req_" + "e" * 32
    with reply_lost_once(naming=run_id, command="SET") as lost:
        assert await one_server.resume.first_end(run_id)
    assert lost == ["SET"]
    assert not await one_server.resume.first_end(run_id)  # another report


async def test_a_note_claimed_again_by_the_same_call_is_still_the_first(
    one_server: Storage,
) -> None:
    """A batch's "N calls decided" note whose claim lost its reply is posted, not left to a
    caller that never comes; it is queued once."""
    until = to_ms(NOW + timedelta(days=1))
    note = Note(id="note_1", channel="CAPPROVALS", thread_ts=None, text="decided", until_ms=until)
    name = "batch:run_batchnote/int_call_1"
    with reply_lost_once(naming=":note-once:") as lost:
        leased = await one_server.notes.once(name, note, now=NOW, lease=timedelta(seconds=30))
    assert lost == ["EVALSHA"] and leased is not None
    later = NOW + timedelta(seconds=31)
    assert not await one_server.notes.once(name, note, now=later, lease=timedelta(seconds=30))
    due = await one_server.notes.claim(later)  # its claimer's lease is over
    assert [n.note.id for n in due] == ["note_1"]


async def test_a_client_created_again_by_the_same_call_gets_its_token(one_server: Storage) -> None:
    """``signoff token create`` whose write lost its reply prints the token, which works,
    rather than "a client of that name exists" for a client nobody has a token of."""
    with reply_lost_once(naming="nightly-cleanup", command="HSETNX") as lost:
        client, token = await one_server.api_clients.create("nightly-cleanup", now=NOW)
    assert lost == ["HSETNX"]
    found = await one_server.api_clients.authenticate(token)
    assert found is not None and found.name == client.name
    with pytest.raises(ClientExistsError):  # another call: refused
        await one_server.api_clients.create("nightly-cleanup", now=NOW)


async def test_an_expiry_or_release_swept_again_by_the_same_sweep_is_reported(
    one_server: Storage,
) -> None:
    """The sweep whose pipeline is sent again still reports the expiry and the release of a
    held decision it made, with the resume job, so their cards are updated and people
    told, not left with live buttons."""
    unanswered = make_record(call_id="c1", expires_in=timedelta(hours=1))
    held = make_record(run_id="run_2", call_id="c2", undo_window=timedelta(seconds=60))
    await one_server.interrupts.create_interrupts([unanswered])
    await one_server.interrupts.create_interrupts([held])
    decided = await one_server.interrupts.decide(
        held.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    assert decided.status == "held"
    with reply_lost_once(naming=unanswered.id) as lost:
        results = await one_server.interrupts.expire_due(NOW + timedelta(hours=2))
    assert lost == ["EVALSHA"]
    reported = {r.record.id: (r.outcome, r.record.state, r.resume_job_id) for r in results}
    assert reported.keys() == {unanswered.id, held.id}
    assert reported[unanswered.id][:2] == ("expired", "expired")
    assert reported[held.id][:2] == ("released", "approved")
    assert None not in (reported[unanswered.id][2], reported[held.id][2])
    assert await one_server.interrupts.expire_due(NOW + timedelta(hours=3)) == []  # once


async def test_a_lost_record_swept_again_by_the_same_sweep_is_reported_once(
    one_server: Storage,
) -> None:
    """The sweep that met a request whose record Redis lost, sent again, still hands it on
    (its run is ended), and it is audited once; a later sweep does not hear of it."""
    gone = make_record(call_id="c1", expires_in=timedelta(hours=1))
    await one_server.interrupts.create_interrupts([gone])
    await one_server.client.raw.delete(one_server.keys.record(gone.id))
    with reply_lost_once(naming=gone.id) as lost:
        results = await one_server.interrupts.expire_due(NOW + timedelta(hours=2))
    assert lost == ["EVALSHA"]
    assert [(r.record_id, type(r)) for r in results] == [(gone.id, LostRecord)]
    trail = await one_server.audit.read(count=100)
    assert [e.record_id for e in trail if e.event == "lost"] == [gone.id]
    assert await one_server.interrupts.expire_due(NOW + timedelta(hours=3)) == []


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


async def test_a_reminder_deferred_again_by_the_same_call_is_deferred(one_server: Storage) -> None:
    """A reminder put off to working hours whose reply was lost is reported put off, not
    logged as dropped, and is handed out then."""
    record = make_record(expires_in=timedelta(hours=5), reminders=(timedelta(hours=1),))
    await one_server.interrupts.create_interrupt(record)
    [reminder] = await one_server.interrupts.due_reminders(NOW + timedelta(hours=1))
    until = NOW + timedelta(hours=3)
    with reply_lost_once(naming=record.id) as lost:
        assert await one_server.reminders.defer(record.id, reminder.number, until=until)
    assert lost == ["EVALSHA"]
    assert await one_server.interrupts.due_reminders(until - timedelta(seconds=1)) == []
    [again] = await one_server.interrupts.due_reminders(until)
    assert again.number == reminder.number


async def test_a_first_failed_post_reported_again_is_still_the_first(one_server: Storage) -> None:
    """A card Slack refused whose record's reply was lost: its requester is still told, once."""
    record = make_record()
    await one_server.interrupts.create_interrupt(record)
    with reply_lost_once(naming="channel_not_found") as lost:
        assert await one_server.interrupts.post_failed(record.id, "channel_not_found")
    assert lost == ["EVALSHA"]
    assert not await one_server.interrupts.post_failed(record.id, "channel_not_found")


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


async def test_a_post_marked_again_is_audited_once(one_server: Storage) -> None:
    """A card (its first post refused) whose mark lost its reply, then marked again by the
    outbox, has one "posted" entry in the audit log; a card posted as another message is
    a new post."""
    record = await one_server.interrupts.create_interrupt(make_record())
    assert await one_server.interrupts.post_failed(record.id, "not_in_channel")
    with reply_lost_once(naming=record.id) as lost:
        marked = await one_server.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=NOW)
    assert lost == ["EVALSHA"]
    assert marked is not None and (marked.message_ts, marked.post_error) == ("1700.1", None)
    await one_server.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=NOW)

    async def posts() -> list[str | None]:
        return [e.message_ts for e in await one_server.audit.read() if e.event == "posted"]

    assert await posts() == ["1700.1"]
    await one_server.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.2", now=NOW)
    assert await posts() == ["1700.1", "1700.2"]


async def test_a_threads_lease_taken_again_by_the_same_call_is_held(one_server: Storage) -> None:
    """A resume whose lease lost its reply runs, not refused as "being run elsewhere" by
    its own lease (which would hold the thread until it lapsed)."""
    with reply_lost_once(naming="thread_l1", command="SET") as lost:
        async with one_server.sessions.lease("thread_l1"):
            assert lost == ["SET"]
            with pytest.raises(ThreadBusyError):  # another resume, meanwhile
                async with one_server.sessions.lease("thread_l1"):
                    pass
    async with one_server.sessions.lease("thread_l1"):  # let go at the end
        pass


async def test_a_tool_outcome_audited_again_by_the_same_call_is_still_the_first(
    one_server: Storage,
) -> None:
    """A tool's outcome told by a worker catching its run up, whose audit lost its reply,
    is still posted in the run's thread (it posts what it audited first), and audited once."""
    entry = AuditEntry(event="tool_ran", record_id="", run_id="run_a1", at=NOW, detail="rm: ok")
    with reply_lost_once(naming="thread_1 call_1") as lost:
        ref = await one_server.audit.append_once(entry, once="thread_1 call_1 ")
    assert lost == ["EVALSHA"]
    [stored] = await one_server.audit.read()
    assert ref is not None and stored.entry_id == ref
    assert await one_server.audit.append_once(entry, once="thread_1 call_1 ") is None  # another
    assert len(await one_server.audit.read()) == 1


async def test_approvers_refreshed_again_by_the_same_call_are_audited_once(
    one_server: Storage,
) -> None:
    """A group's new members stored by a call whose reply was lost: the audit log says the
    approvers were refreshed once, not twice."""
    policy = {"allowed_users": (), "allowed_groups": ("SONCALL",), "group_members": ("UOLD",)}
    record = await one_server.interrupts.create_interrupt(make_record(**policy))
    with reply_lost_once(naming=record.id) as lost:
        updated = await one_server.interrupts.set_group_members(
            record, ["UNEW"], now=NOW, asked_by="UNEW"
        )
    assert lost == ["EVALSHA"]
    assert updated is not None and updated.policy.group_members == ("UNEW",)
    events = [e.event for e in await one_server.audit.read()]
    assert events.count("approvers_refreshed") == 1


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
        revoked = await one_server.trust.revoke(grant.id)
    assert lost == ["EVALSHA"]
    assert revoked is not None and revoked.id == grant.id
    assert await one_server.trust.active(NOW) == []
    assert await one_server.trust.revoke(grant.id) is None  # another call: nothing left
