"""Telling a run's records that were never stored (their creation failed) from those Redis
lost while pending, which the lost check ends their run for instead."""

from __future__ import annotations

from storage_helpers import make_record

from storage import Storage


async def test_only_records_neither_there_nor_pending_count_as_never_stored(
    storage: Storage,
) -> None:
    stored = await storage.interrupts.create_interrupt(make_record(call_id="c1"))
    never = make_record(call_id="c2")
    assert await storage.queries.never_stored("run_1", [never.id])
    assert not await storage.queries.never_stored("run_1", [stored.id])
    assert not await storage.queries.never_stored("run_1", [never.id, stored.id])

    await storage.client.raw.delete(storage.keys.record(stored.id))  # lost while pending
    assert not await storage.queries.never_stored("run_1", [stored.id])
