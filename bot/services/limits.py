"""What one API client may hold at once, so a leaked or looping token cannot take the
process's connections or fill Redis: calls held open, and requests waiting for a decision."""

from __future__ import annotations

from dataclasses import dataclass

OPEN_CALLS = 32
"""How many calls one client may hold open in one process by default."""
PENDING_REQUESTS = 1_000
"""How many undecided requests one client may have stored by default."""
OPEN_CALLS_SETTING = "SIGNOFF_API_OPEN_CALLS"
PENDING_REQUESTS_SETTING = "SIGNOFF_API_PENDING_REQUESTS"


@dataclass(frozen=True, kw_only=True)
class ApiLimits:
    """Per API client: ``open_calls`` held open at once in this process (long-polls,
    AG-UI streams, runs API starts), ``pending_requests`` undecided and stored."""

    open_calls: int = OPEN_CALLS
    pending_requests: int = PENDING_REQUESTS
