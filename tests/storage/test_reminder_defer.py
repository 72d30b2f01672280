"""A reminder taken while nobody could read it is handed out again later, keeping its spacing."""

from __future__ import annotations

from datetime import timedelta

from storage_helpers import later, make_record

from storage import Storage


async def test_a_deferred_reminder_comes_back_once_with_its_number_then_keeps_spacing(
    storage: Storage,
) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(
            expires_in=timedelta(hours=12),
            reminders=(timedelta(hours=1), timedelta(hours=2)),
        )
    )
    [first] = await storage.interrupts.due_reminders(later(hours=1))
    assert await storage.reminders.defer(record.id, first.number, until=later(hours=6))
    assert await storage.reminders.defer(record.id, first.number, until=later(hours=7)) is False
    assert await storage.interrupts.due_reminders(later(hours=5)) == []

    [again] = await storage.interrupts.due_reminders(later(hours=6))
    assert again.number == 1
    assert again.record.next_reminder_at == later(hours=7)  # one hour after, not 2h after creation
    [second] = await storage.interrupts.due_reminders(later(hours=7))
    assert second.number == 2 and second.record.next_reminder_at is None


async def test_a_reminder_is_not_deferred_past_expiry(storage: Storage) -> None:
    record = await storage.interrupts.create_interrupt(
        make_record(expires_in=timedelta(hours=2), reminders=(timedelta(hours=1),))
    )
    [first] = await storage.interrupts.due_reminders(later(hours=1))
    assert await storage.reminders.defer(record.id, first.number, until=later(hours=2)) is False
    assert await storage.interrupts.due_reminders(later(hours=3)) == []
