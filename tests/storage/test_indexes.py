"""Indexes, outbox, posting, cancellation, audit and corrupt records."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from storage_helpers import DIGEST, NOW, later, make_record, run_key, wait_for

from agent_runtime.interrupts import Decision
from storage import CorruptRecordError, DuplicateInterruptError, LostRecord, Storage
from storage.audit import AuditEntry


async def test_pending_lists_by_user_channel_and_run_drop_decided(storage: Storage) -> None:
    records = [make_record(call_id=f"c{i}", now=later(seconds=i)) for i in range(5)]
    await storage.interrupts.create_interrupts(records)
    other = make_record(run_id="run_2", allowed_users=("UZED",), channel="COTHER")
    await storage.interrupts.create_interrupt(other)
    await storage.interrupts.decide(
        records[0].id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    page = await storage.queries.pending_for_user("UALICE", limit=3)
    assert [r.id for r in page.records] == [r.id for r in records[1:4]]
    rest = await storage.queries.pending_for_user("UALICE", limit=3, cursor=page.next_cursor)
    assert [r.id for r in rest.records] == [r.id for r in records[4:]]
    channel = await storage.queries.pending_for_channel("CAPPROVALS")
    assert len(channel.records) == 4
    assert [r.id for r in (await storage.queries.pending_for_channel("COTHER")).records] == [
        other.id
    ]
    assert len(await storage.queries.pending_for_run("run_1")) == 4


async def test_an_approver_list_longer_than_one_index_call_is_indexed_whole(
    storage: Storage,
) -> None:
    users = tuple(f"U{n:05d}" for n in range(1201))  # three ZADD/ZREM calls of 500
    record = await storage.interrupts.create_interrupt(make_record(allowed_users=users))
    for user in (users[0], users[500], users[-1]):
        assert [r.id for r in (await storage.queries.pending_for_user(user)).records] == [record.id]
    await storage.interrupts.decide(
        record.id, users[-1], Decision.approve(), args_digest=DIGEST, now=NOW
    )
    assert await storage.client.raw.zcard(run_key(storage, storage.keys.by_user)) == 0


async def test_a_request_never_waits_for_a_requester_who_may_not_approve_it(
    storage: Storage,
) -> None:
    group = {"allowed_groups": ("SONCALL",), "group_members": ("UALICE", "UBOB")}
    own = await storage.interrupts.create_interrupt(make_record(requested_by="UALICE", **group))
    allowed = make_record(run_id="run_2", requested_by="UALICE", allow_self_approval=True)
    await storage.interrupts.create_interrupt(allowed)
    assert [r.id for r in (await storage.queries.pending_for_user("UALICE")).records] == [
        allowed.id
    ]
    assert await storage.interrupts.set_group_members(
        own, ["UALICE", "UCAROL"], now=NOW, asked_by="UCAROL"
    )
    assert [r.id for r in (await storage.queries.pending_for_user("UALICE")).records] == [
        allowed.id
    ]
    for record in (own, allowed):
        await storage.interrupts.decide(
            record.id, "UCAROL", Decision.approve(), args_digest=DIGEST, now=NOW
        )
    for run_id in ("run_1", "run_2"):
        assert await storage.client.raw.zcard(run_key(storage, storage.keys.by_user, run_id)) == 0


async def test_new_group_members_replace_the_old_in_the_index_while_pending(
    storage: Storage,
) -> None:
    policy = {"allowed_users": (), "allowed_groups": ("SONCALL",), "group_members": ("UOLD",)}
    record = await storage.interrupts.create_interrupt(make_record(**policy))
    assert await storage.interrupts.set_group_members(record, ["UNEW"], now=NOW, asked_by="UNEW")
    assert (await storage.queries.pending_for_user("UOLD")).records == ()
    [listed] = (await storage.queries.pending_for_user("UNEW")).records
    assert listed.id == record.id and listed.policy.group_members == ("UNEW",)
    await storage.interrupts.decide(
        record.id, "UNEW", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    decided = await storage.client.raw.hgetall(storage.keys.record(record.id))
    assert not await storage.interrupts.set_group_members(
        listed, ["UOTHER"], now=NOW, asked_by="UOTHER"
    )
    assert await storage.client.raw.hgetall(storage.keys.record(record.id)) == decided


async def test_a_new_interrupt_is_its_creators_to_post_first(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(), post_lease=timedelta(seconds=30)
    )
    assert await storage.interrupts.claim_outbox(NOW) == []
    assert await storage.interrupts.claim_outbox(later(seconds=29)) == []
    claimed = await storage.interrupts.claim_outbox(later(seconds=30))
    assert [r.id for r in claimed] == [record.id]  # the creator's post failed


async def test_an_outbox_entry_whose_record_was_decided_or_is_gone_leaves_the_outbox(
    storage: Storage,
) -> None:
    """An escalation card queued again after its record was decided, and an entry whose
    record is gone: neither is handed out, and neither is leased again forever."""
    decided, gone = make_record(call_id="c1"), make_record(call_id="c2")
    await storage.interrupts.create_interrupts([decided, gone])
    await storage.interrupts.decide(
        decided.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    await storage.interrupts.repost_escalation(decided.id, at=later(minutes=1))
    await storage.client.raw.delete(storage.keys.record(gone.id))
    assert await storage.interrupts.claim_outbox(later(minutes=2)) == []
    outbox = run_key(storage, storage.keys.outbox)
    assert await storage.client.raw.zrange(outbox, 0, -1) == []


async def test_outbox_hands_out_unposted_until_marked_posted(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(channel=None))
    start = later(seconds=30)  # past the creator's own lease
    claimed = await storage.interrupts.claim_outbox(start, lease=timedelta(seconds=30))
    assert [r.id for r in claimed] == [record.id]
    assert await storage.interrupts.claim_outbox(start + timedelta(seconds=10)) == []
    again = await storage.interrupts.claim_outbox(start + timedelta(seconds=31))
    assert [r.id for r in again] == [record.id]  # the first post failed: it comes back
    posted = await storage.interrupts.mark_posted(
        record.id, "CDM1", "1700.1", thread_ts="1700.1", now=start + timedelta(seconds=32)
    )
    assert posted is not None and (posted.channel, posted.message_ts) == ("CDM1", "1700.1")
    assert await storage.interrupts.claim_outbox(later(minutes=5)) == []
    assert [r.id for r in (await storage.queries.pending_for_channel("CDM1")).records] == [
        record.id
    ]


async def test_a_queued_redraw_is_handed_out_until_redrawn_unless_queued_again(
    storage: Storage,
) -> None:
    """A redraw done after a newer failure queued it again stays queued; one whose record
    is gone leaves the queue."""
    record, gone = make_record(call_id="c1"), make_record(call_id="c2")
    await storage.interrupts.create_interrupts([record, gone])
    for rid in (record.id, gone.id):
        await storage.interrupts.redraw_later(rid, at=later(seconds=30))
    await storage.client.raw.delete(storage.keys.record(gone.id))
    assert await storage.interrupts.claim_redraws(later(seconds=29)) == []
    [(claimed, leased_until)] = await storage.interrupts.claim_redraws(later(seconds=30))
    assert (
        claimed.id == record.id and await storage.interrupts.claim_redraws(later(seconds=31)) == []
    )

    await storage.interrupts.redraw_later(record.id, at=later(seconds=45))  # failed again
    await storage.interrupts.redrawn(record.id, leased_until=leased_until)
    [(again, leased_until)] = await storage.interrupts.claim_redraws(later(seconds=45))
    assert again.id == record.id
    await storage.interrupts.redrawn(record.id, leased_until=leased_until)
    assert await storage.interrupts.claim_redraws(later(hours=1)) == []
    assert await storage.client.raw.zcard(run_key(storage, storage.keys.redraws)) == 0


async def test_a_failed_post_is_kept_until_the_card_is_posted_and_never_revives_a_record(
    storage: Storage,
) -> None:
    record, gone = make_record(call_id="c1"), make_record(call_id="c2")
    await storage.interrupts.create_interrupts([record, gone])
    await storage.interrupts.post_failed(record.id, "not_in_channel")
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.post_error == "not_in_channel"
    await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=NOW)
    await storage.interrupts.post_failed(record.id, "ratelimited")  # a late failure
    stored = await storage.queries.get(record.id)
    assert stored is not None and stored.post_error is None
    await storage.client.raw.delete(storage.keys.record(gone.id))
    await storage.interrupts.post_failed(gone.id, "not_in_channel")
    assert not await storage.client.raw.exists(storage.keys.record(gone.id))


async def test_duplicate_create_is_refused(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record())
    with pytest.raises(DuplicateInterruptError, match=record.id):
        await storage.interrupts.create_interrupt(record)


async def test_cancel_run_cancels_pending_without_resume(storage: Storage) -> None:
    records = [make_record(call_id="c1"), make_record(call_id="c2")]
    await storage.interrupts.create_interrupts(records)
    cancelled = await storage.interrupts.cancel_run("run_1", reason="stopped", now=NOW, by="UREQ")
    assert cancelled.count == 2
    assert await storage.queries.pending_for_run("run_1") == []
    stored = await storage.queries.get(records[0].id)
    assert stored is not None and stored.state == "cancelled"
    assert await storage.client.raw.xlen(run_key(storage, storage.keys.resume_stream)) == 0


async def test_audit_stream_records_every_transition(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record(min_approvals=2))
    await storage.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.2", now=NOW)
    decide = storage.interrupts.decide
    await decide(record.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW)
    await decide(record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW)
    entries = await storage.audit.read()
    assert [(e.event, e.user_id) for e in entries] == [
        ("created", "UREQ"),
        ("posted", None),
        ("vote", "UALICE"),
        ("approved", "UBOB"),
    ]
    assert entries[-1].channel == "CAPPROVALS" and entries[-1].message_ts == "1700.2"


@pytest.mark.parametrize("run_id", ["run_1", "req_" + "0" * 32])
async def test_a_tool_outcome_is_audited_once_per_call(storage: Storage, run_id: str) -> None:
    def outcome(detail: str) -> AuditEntry:
        return AuditEntry(event="tool_ran", record_id="", run_id=run_id, at=NOW, detail=detail)

    assert await storage.audit.append_once(outcome("a: done"), once="call_a") is not None
    assert await storage.audit.append_once(outcome("a: done"), once="call_a") is None
    assert await storage.audit.append_once(outcome("b: done"), once="call_b") is not None
    entries = await storage.audit.read()
    assert [(e.event, e.run_id, e.detail) for e in entries] == [
        ("tool_ran", run_id, "a: done"),
        ("tool_ran", run_id, "b: done"),
    ]
    if run_id.startswith("req_"):  # a request's entries are request events too
        events = storage.keys.request_events(storage.keys.shard_of(run_id))
        assert await storage.client.raw.xlen(events) == 2


async def test_corrupt_record_is_a_clear_error_for_that_record_only(storage: Storage) -> None:
    good, bad = make_record(call_id="c1"), make_record(call_id="c2")
    await storage.interrupts.create_interrupts([good, bad])
    await storage.client.raw.hset(storage.keys.record(bad.id), "policy", "{not json")
    with pytest.raises(CorruptRecordError, match="int_c2"):
        await storage.queries.get(bad.id)
    with pytest.raises(CorruptRecordError, match="int_c2"):
        await storage.interrupts.decide(
            bad.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )
    page = await storage.queries.pending_for_user("UBOB")
    assert [r.id for r in page.records] == [good.id]
    await storage.client.raw.delete(storage.keys.record(good.id))
    await storage.client.raw.set(storage.keys.record(good.id), "foreign")
    with pytest.raises(CorruptRecordError):
        await storage.queries.get(good.id)


async def test_every_record_key_has_a_ttl(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(make_record())
    raw = storage.client.raw
    day = 24 * 3600 * 1000
    # Pending without an expiry: 30 days (the README's figure).
    assert 29 * day < await raw.pttl(storage.keys.record(record.id)) <= 30 * day
    assert await raw.pttl(storage.keys.run_pending("run_1")) > 0
    await storage.interrupts.decide(
        record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    ttl = await raw.pttl(storage.keys.record(record.id))
    assert 6 * day < ttl <= 7 * day
    # Pending with an expiry: 30 days past it.
    now = datetime.now(UTC)
    due = make_record(run_id="run_2", now=now, expires_in=timedelta(days=2))
    await storage.interrupts.create_interrupt(due)
    assert 31 * day < await raw.pttl(storage.keys.record(due.id)) <= 32 * day


async def test_a_decision_is_kept_while_its_run_still_waits_on_others(storage: Storage) -> None:
    """A decided early and B left pending for weeks: the resume that follows B reads A's
    answer, so A (and the run's round) must last as long as B may still be decided."""
    early = make_record(call_id="a", expires_in=timedelta(hours=1))
    late = make_record(call_id="b", expires_in=timedelta(days=20))
    await storage.interrupts.create_interrupts([early, late])
    raw = storage.client.raw
    waiting = await raw.pttl(storage.keys.run_pending("run_1"))
    assert waiting > 20 * 24 * 3600 * 1000
    await storage.interrupts.decide(
        early.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=later(minutes=1)
    )
    for key in (storage.keys.record(early.id), storage.keys.run_decided("run_1")):
        assert await raw.pttl(key) >= waiting - 60_000, key
    outcome = await storage.interrupts.decide(
        late.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=later(days=8)
    )
    assert outcome.resume_job_id
    await storage.resume.ensure_group()
    [job] = await storage.resume.claim("w1", shard=storage.keys.shard_of("run_1"))
    assert set(job.record_ids) == {early.id, late.id}
    ttl = await raw.pttl(storage.keys.record(late.id))
    assert 0 < ttl <= 7 * 24 * 3600 * 1000  # the run waits on nothing now: kept as usual


async def test_an_escalation_keeps_its_run_pending_as_long_as_its_record(
    storage: Storage,
) -> None:
    """Escalating lengthens the record's life; the run's pending set (what a withdrawal
    cancels) must last as long, or the record would wait on with nothing to cancel it."""
    record = make_record(
        expires_in=timedelta(seconds=1),
        on_expiry="escalate",
        escalate_to_users=("UDAN",),
        escalate_expires_in=timedelta(days=25),
    )
    await storage.interrupts.create_interrupt(record)
    [escalated] = await storage.interrupts.expire_due(later(seconds=1))
    assert escalated.outcome == "escalated"
    raw = storage.client.raw
    kept = await raw.pttl(storage.keys.record(record.id))
    assert kept > 25 * 24 * 3600 * 1000
    assert await raw.pttl(storage.keys.run_pending("run_1")) >= kept - 1000  # read later


async def test_records_with_groups_come_up_for_a_member_check_until_decided(
    storage: Storage,
) -> None:
    grouped = make_record(call_id="c1", allowed_groups=("SONCALL",), group_members=("UBOB",))
    await storage.interrupts.create_interrupts([grouped, make_record(call_id="c2")])
    checks = storage.interrupts.claim_group_checks
    assert await checks(later(minutes=4)) == []
    assert [r.id for r in await checks(later(minutes=5))] == [grouped.id]
    assert await checks(later(minutes=6)) == []  # handed out; due again 5 minutes later
    assert [r.id for r in await checks(later(minutes=10))] == [grouped.id]
    await storage.interrupts.decide(
        grouped.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
    )
    assert await checks(later(minutes=15)) == []
    assert await storage.client.raw.zcard(run_key(storage, storage.keys.group_checks)) == 0


async def test_a_pending_request_dropped_by_its_ttl_leaves_every_index_at_its_expiry_sweep(
    storage: Storage,
) -> None:
    """A pending record gone by its TTL (Signoff stopped past its expiry's 30 days, or the
    server evicting it): the sweep that meets its due entry takes it out of the pending
    lists too, so the metrics' pending count and the listings stop counting it, and hands
    it to the bot (to end what waits on it) exactly once."""
    reminders = (timedelta(minutes=30),)
    gone = make_record(call_id="c1", expires_in=timedelta(hours=1), reminders=reminders)
    kept = make_record(  # its id extends gone's: only gone's entries may go
        call_id="c10", now=later(seconds=1), expires_in=timedelta(hours=3), reminders=reminders
    )
    await storage.interrupts.create_interrupts([gone, kept])
    raw = storage.client.raw
    await raw.pexpire(storage.keys.record(gone.id), 1)

    async def dropped() -> bool:
        return not await raw.exists(storage.keys.record(gone.id))

    await wait_for(dropped, what="the record's TTL to run out")
    assert await storage.queries.pending_count() == 2, "counted while its entry stays"

    # Two sweeps meet it at once: one of them is handed it, and it is audited once.
    sweeps = [storage.interrupts.expire_due(later(hours=2)) for _ in range(2)]
    swept = [result for results in await asyncio.gather(*sweeps) for result in results]
    [lost] = swept
    assert isinstance(lost, LostRecord) and (lost.record_id, lost.run_id) == (gone.id, gone.run_id)
    assert (lost.place["agent"], lost.place["thread_id"]) == (gone.agent, gone.thread_id)
    trail = await storage.audit.read(count=100)
    assert [(e.event, e.record_id, e.run_id) for e in trail if e.event == "lost"] == [
        ("lost", gone.id, gone.run_id)
    ]
    assert await storage.interrupts.expire_due(later(hours=2)) == []
    k = storage.keys
    for index in (k.by_user, k.by_channel, k.due, k.reminders, k.outbox):
        members = await raw.zrange(run_key(storage, index), 0, -1)
        assert {m.rsplit("\0", 1)[-1] for m in members} == {kept.id}, index(0)
    assert await storage.queries.pending_count() == 1
    listed = await storage.queries.pending_for_user("UALICE")
    assert [r.id for r in listed.records] == [kept.id]
