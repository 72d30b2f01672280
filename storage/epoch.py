"""Moments as Redis keeps them: milliseconds since the epoch, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def to_ms(moment: datetime) -> int:
    """Milliseconds since the epoch; naive datetimes are refused as ambiguous."""
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; pass an aware datetime (UTC)")
    return int(moment.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
