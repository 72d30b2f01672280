"""How long storage keeps what has served its purpose, set once per process."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True, kw_only=True)
class Retention:
    """How long storage keeps things that have served their purpose."""

    decided: timedelta = timedelta(days=7)
    """A decided, expired or cancelled record (and the run's bookkeeping)."""
    pending: timedelta = timedelta(days=30)
    """A pending record with no expiry; one with an expiry is kept this long past it."""
    audit_entries: int = 100_000
    """Approximate length the audit stream is trimmed to."""
    resume_entries: int = 100_000
    """Approximate length the resume stream is trimmed to (acknowledged jobs go first)."""


def millis(delta: timedelta) -> int:
    """A duration as the milliseconds the Lua scripts take."""
    return int(delta.total_seconds() * 1000)
