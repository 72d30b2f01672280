"""Pending lists a page at a time: a cursor past the end of a list that got shorter gives
its last page, never an empty one."""

from __future__ import annotations

from storage_helpers import DIGEST, NOW, later, make_record

from agent_runtime.interrupts import Decision
from storage import Storage
from storage.records import InterruptRecord


async def _decide(storage: Storage, *records: InterruptRecord) -> None:
    for record in records:
        await storage.interrupts.decide(
            record.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )


async def test_a_cursor_past_the_end_of_a_shorter_list_gives_its_last_page(
    storage: Storage,
) -> None:
    records = [make_record(call_id=f"c{i}", now=later(seconds=i)) for i in range(7)]
    await storage.interrupts.create_interrupts(records)
    queries = storage.queries
    first = await queries.pending_for_user("UALICE", limit=3)
    second = await queries.pending_for_user("UALICE", limit=3, cursor=first.next_cursor)
    third = await queries.pending_for_user("UALICE", limit=3, cursor=second.next_cursor)
    assert [r.id for r in third.records] == [records[6].id]
    assert (third.after, third.before, third.total) == (second.next_cursor, 6, 7)

    await _decide(storage, records[6], records[0])
    last = await queries.pending_for_user("UALICE", limit=3, cursor=second.next_cursor)
    assert [r.id for r in last.records] == [r.id for r in records[3:6]]
    assert (last.after, last.before, last.total, last.next_cursor) == (
        first.next_cursor,
        2,
        5,
        None,
    )

    await _decide(storage, *records[2:5])
    only = await queries.pending_for_user("UALICE", limit=3, cursor=second.next_cursor)
    assert [r.id for r in only.records] == [records[1].id, records[5].id]
    assert (only.after, only.before, only.total) == (None, 0, 2)


async def test_a_cursor_past_the_end_of_an_empty_list_gives_its_empty_first_page(
    storage: Storage,
) -> None:
    records = [make_record(call_id=f"c{i}", now=later(seconds=i)) for i in range(4)]
    await storage.interrupts.create_interrupts(records)
    first = await storage.queries.pending_for_user("UALICE", limit=3)
    await _decide(storage, *records)
    empty = await storage.queries.pending_for_user("UALICE", limit=3, cursor=first.next_cursor)
    assert (empty.records, empty.before, empty.total) == ((), 0, 0)
