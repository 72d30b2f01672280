"""What one API client may hold at once, so a leaked or looping token cannot take the
process's connections: calls held open."""

from __future__ import annotations

from dataclasses import dataclass

OPEN_CALLS = 32
"""How many calls one client may hold open in one process by default."""
OPEN_CALLS_SETTING = "SIGNOFF_API_OPEN_CALLS"


@dataclass(frozen=True, kw_only=True)
class ApiLimits:
    """Per API client: ``open_calls`` held open at once in this process (long-polls,
    AG-UI streams, runs API starts)."""

    open_calls: int = OPEN_CALLS
