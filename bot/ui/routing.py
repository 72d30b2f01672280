"""Who a new card notifies: the approvers inside their working hours now, on their own
clock. A request at 03:00 in Paris pings the approvers awake in New York or Tokyo; the
others may decide too, and are reminded when their day starts (or asked by the ladder)."""

from __future__ import annotations

from bot.services import Services
from bot.services.workhours import in_working_hours
from storage.records import InterruptRecord

MAX_NOTIFIED = 30
"""Approvers looked at for a card (a large group's first members); each is one cached
``users.info``."""


async def awake_approvers(services: Services, record: InterruptRecord) -> list[str]:
    """The named approvers of ``record`` whose decision is still wanted (see
    ``InterruptRecord.awaited``) inside their working hours now."""
    policy = record.policy
    approvers = record.awaited(policy.deciders)[:MAX_NOTIFIED]
    now, awake = services.clock.now(), []
    for user in approvers:
        zone = await services.directory.zone(user)
        start, end = policy.work_start_hour, policy.work_end_hour
        if in_working_hours(zone, now, start_hour=start, end_hour=end):
            awake.append(user)
    return awake
