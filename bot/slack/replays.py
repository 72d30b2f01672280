"""Whether a request from Slack is new, for both ways in: HTTP mode asks it of a signed
request's signature, Socket Mode of an envelope's id (``storage.deliveries``).

The answer is one ``SET NX`` in Redis, so every process agrees on it. When Redis cannot
say in time the request is taken: what it does meets the outage itself, and tells the
user so; a warning, at most once a minute, tells the operator the check was skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from storage.errors import StorageError

from .rare_warnings import RareWarning

log = logging.getLogger(__name__)

REPLAY_BUDGET = 0.5
"""Seconds the replay check may take; a click's own budget and Slack's 3 s come after."""


SKIPPED = (
    "took requests from Slack without checking for replays (%d since %s): Redis could not "
    "say whether each was received before (the last time: %s)"
)


class ReplayCheck:
    """Asks whether a request is new, within ``REPLAY_BUDGET``."""

    def __init__(self) -> None:
        self._skipped = RareWarning(log, SKIPPED)

    async def first_time(self, check: Awaitable[bool]) -> bool:
        """What ``check`` (a ``Deliveries`` claim) answers within ``REPLAY_BUDGET``; True,
        and a warning at most once a minute, when Redis cannot say in that time."""
        try:
            return await asyncio.wait_for(check, REPLAY_BUDGET)
        except TimeoutError:
            self._skipped.happened(f"no answer within {REPLAY_BUDGET:g} s")
        except StorageError as exc:
            self._skipped.happened(exc)
        return True
