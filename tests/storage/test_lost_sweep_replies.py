"""Sweeps and queues whose reply was lost (see test_lost_replies): a reminder, an expiry,
a release, a lost record, a queued note (or its lease held) or a failed job taken again by
the same call is still handed out and reported, once."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from redis_faults import reply_lost_once
from storage_helpers import DIGEST, NOW, make_record

from agent_runtime.interrupts import Decision
from storage import LostRecord, Storage
from storage.epoch import to_ms
from storage.notes import Note


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


async def test_a_notes_lease_held_again_by_the_same_call_is_held(one_server: Storage) -> None:
    """A poster whose renewal of a note's lease lost its reply is told it still holds it
    (the note and those of its thread waiting on it), so it keeps holding, and takes it off
    the queue once posted: the note is not handed out, and posted, a second time."""
    notes, lease = one_server.notes, timedelta(seconds=30)
    for n in (1, 2):
        text = f"n{n}"
        until = to_ms(NOW + timedelta(days=1))
        note = Note(id=f"note_{n}", channel="CAPPROVALS", thread_ts=None, text=text, until_ms=until)
        await notes.later(note, at=NOW)
    claimed = await notes.claim(NOW, lease=lease)
    held, renewed = claimed[0].leased_until, claimed[0].leased_until + lease
    with reply_lost_once(naming=":notes") as lost:
        assert await notes.hold(claimed, held, renewed)
    assert lost == ["EVALSHA"]
    for leased in claimed:
        await notes.done(replace(leased, leased_until=renewed))
    assert await notes.claim(renewed + timedelta(hours=1)) == []
