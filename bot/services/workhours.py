"""Working hours in each approver's own time zone, as Slack reports it (``users.info``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .directory import SlackUser


def in_working_hours(zone: SlackUser, now: datetime, *, start_hour: int, end_hour: int) -> bool:
    """True when ``now`` falls in ``[start_hour, end_hour)`` on the user's own clock."""
    local = now.astimezone(zone.zone())
    return start_hour <= local.hour < end_hour


def next_start(zone: SlackUser, now: datetime, *, start_hour: int) -> datetime:
    """The next time the user's working day starts (``start_hour`` on their clock), in UTC."""
    local = now.astimezone(zone.zone())
    start = local.replace(hour=start_hour, minute=0, second=0, microsecond=0)
    if start <= local:
        start += timedelta(days=1)  # wall-clock arithmetic: 09:00 tomorrow, across DST too
    return start.astimezone(UTC)
