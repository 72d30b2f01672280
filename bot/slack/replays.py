"""Whether a request from Slack is new, for both ways in: HTTP mode asks it of a signed
request's signature, Socket Mode of an envelope's id (``storage.deliveries``).

The answer is one ``SET NX`` in Redis, so every process agrees on it. When Redis cannot
say in time the request is taken: what it does meets the outage itself, and tells the
user so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from storage.errors import StorageError

REPLAY_BUDGET = 0.5
"""Seconds the replay check may take; a click's own budget and Slack's 3 s come after."""


async def first_time(check: Awaitable[bool]) -> bool:
    """What ``check`` (a ``Deliveries`` claim) answers within ``REPLAY_BUDGET``; True when
    Redis cannot say in that time."""
    try:
        return await asyncio.wait_for(check, REPLAY_BUDGET)
    except (TimeoutError, StorageError):
        return True
