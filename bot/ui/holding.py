"""Holding a queued entry's lease while Slack takes it: a note or refusal claimed from
its queue is handed out again once its lease lapses, so whoever is posting it renews the
lease for as long as Slack is slow (or a rate limit is slept out), and no other process
posts it too."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime

from bot.services import Services
from storage.errors import StorageError
from storage.sweeps import POST_LEASE

Renew = Callable[[datetime, datetime], Awaitable[bool]]
"""Moves an entry's lease from its end (the first) to a later one (the second), if it is
still the entry's: False when it is not (done, or queued again), so nothing to hold."""


async def held_while(
    services: Services, posting: Awaitable[None], leased_until: datetime, renew: Renew
) -> datetime:
    """Await ``posting`` while renewing the lease ending at ``leased_until`` every third of
    ``POST_LEASE``; the lease's end then, for the step that takes the entry off its queue."""
    posted = asyncio.Event()
    held = leased_until

    async def hold() -> None:
        nonlocal held
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(posted.wait(), POST_LEASE.total_seconds() / 3)
                return
            until = services.clock.now() + POST_LEASE
            with contextlib.suppress(StorageError):  # its lease may lapse: posted again, then
                if not await renew(held, until):
                    return
                held = until

    holder = asyncio.create_task(hold(), name="hold a lease while posting")
    try:
        await posting
    finally:
        posted.set()
        await holder
    return held
