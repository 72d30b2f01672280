"""The queue of notes Slack did not take: handed out in order until done, given up after
a day, an unreadable entry dropped."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from storage_helpers import later

from storage import Storage
from storage.epoch import to_ms
from storage.notes import NOTE_KEPT, Note


def note(n: int, *, channel: str = "C0OPS") -> Note:
    until = to_ms(later() + NOTE_KEPT)
    return Note(
        id=f"note_{n:03d}", channel=channel, thread_ts="1700.1", text=f"n{n}", until_ms=until
    )


async def test_notes_come_back_in_order_until_done(storage: Storage) -> None:
    queue = storage.notes
    for n in (2, 1, 3):
        await queue.later(note(n), at=later(seconds=30))
    assert await queue.claim(later(seconds=29)) == []
    claimed = await queue.claim(later(seconds=30))
    assert [c.note.text for c in claimed] == ["n1", "n2", "n3"]
    assert await queue.claim(later(seconds=31)) == []  # leased
    first, second, _ = claimed
    await queue.done(first)
    await queue.later(second.note, at=later(seconds=45), member=second.member)  # failed again
    await queue.done(second)  # queued again since its lease: kept
    again = await queue.claim(later(minutes=5))
    assert [c.note.text for c in again] == ["n2", "n3"]
    for leased in again:
        await queue.done(leased)
    assert await queue.claim(later(hours=1)) == []


async def test_a_note_never_taken_is_given_up_after_a_day(storage: Storage) -> None:
    await storage.notes.later(note(1), at=later(seconds=30))
    key = storage.keys.notes(storage.keys.shard_of("C0OPS"))
    await storage.client.raw.zadd(key, {"not a note": 0})
    assert await storage.notes.claim(later() + NOTE_KEPT + timedelta(seconds=1)) == []
    assert await storage.client.raw.zcard(key) == 0


async def test_a_note_named_twice_is_queued_once_and_held_by_its_first_caller(
    storage: Storage,
) -> None:
    """The first caller naming a note gets it, queued and held for its lease; a second
    gets nothing. Once that caller is done with it, nothing is left to post."""
    hold = timedelta(seconds=30)
    first = await storage.notes.once("batch:run_1/int_1", note(1), now=later(), lease=hold)
    assert first is not None and first.note.text == "n1"
    assert await storage.notes.once("batch:run_1/int_1", note(2), now=later(), lease=hold) is None
    assert await storage.notes.claim(later(seconds=29)) == []  # held by its first caller
    await storage.notes.done(first)
    assert await storage.notes.claim(later(minutes=5)) == []


async def test_a_note_its_first_caller_never_posted_is_handed_out_when_its_hold_ends(
    storage: Storage,
) -> None:
    hold = timedelta(seconds=30)
    assert await storage.notes.once("decided:run_1/int_1", note(1), now=later(), lease=hold)
    [due] = await storage.notes.claim(later(seconds=30))
    assert due.note.text == "n1"


async def test_the_notes_of_a_thread_held_by_their_poster_are_not_claimed_until_handled(
    storage: Storage,
) -> None:
    """Their poster renews, in one step, the leases of the note it posts and of those
    waiting on it while Slack is slow; a note no longer leased to it (posted, or queued
    again) is left as it is."""
    for n in (1, 2, 3):
        await storage.notes.later(note(n), at=later(seconds=30))
    lease = timedelta(seconds=30)
    claimed = await storage.notes.claim(later(seconds=30), lease=lease)
    first, second, third = claimed
    held, renewed = first.leased_until, first.leased_until + lease
    assert not await storage.notes.hold(claimed, later(), renewed)  # not their lease
    await storage.notes.later(third.note, at=later(seconds=31), member=third.member)
    assert await storage.notes.hold(claimed, held, renewed)
    [again] = await storage.notes.claim(held)  # the others are held past that
    assert again.note.text == "n3"
    await storage.notes.done(replace(first, leased_until=renewed))
    assert await storage.notes.hold([first, second], renewed, renewed + lease)
    await storage.notes.done(replace(second, leased_until=renewed + lease))
    assert not await storage.notes.hold([first, second], renewed + lease, renewed + lease * 2)
    assert await storage.notes.claim(renewed + timedelta(hours=1)) == [
        replace(again, leased_until=renewed + timedelta(hours=1, seconds=30))
    ]
