"""How a process's background loops report Redis failing them: one line when it starts,
a reminder a minute while it lasts, one line when it ends, however many loops (one per
shard and consumer) keep trying; and how long each waits before trying again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from redis.backoff import EqualJitterBackoff

from storage.errors import StorageError

log = logging.getLogger(__name__)

REMIND_EVERY = 60.0
"""Seconds between the reminders that Redis still fails the background loops."""

_BACKOFF = EqualJitterBackoff(cap=5.0, base=0.5)
"""A loop's wait after its n-th failure in a row: 0.5-1 s, 1-2 s, 2-4 s, then 2.5-5 s."""


class Outage:
    """The loops Redis is failing now, reported together (see the module docstring)."""

    def __init__(self, *, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._failures: dict[str, int] = {}
        self._since: float | None = None
        self._reminded = 0.0

    @property
    def failing(self) -> dict[str, int]:
        """The loops whose last try failed, each with its failures in a row."""
        return dict(self._failures)

    def failed(self, loop: str, error: StorageError) -> float:
        """Note that ``loop`` failed with ``error``; the seconds it should wait."""
        now = self._now()
        failures = self._failures[loop] = self._failures.get(loop, 0) + 1
        if self._since is None:
            self._since = self._reminded = now
            log.error("background work cannot use Redis: %s; retrying with backoff", error)
        elif now - self._reminded >= REMIND_EVERY:
            self._reminded = now
            log.error(
                "background work still cannot use Redis after %.0f s (%d loops waiting): %s",
                now - self._since,
                len(self._failures),
                error,
            )
        return _BACKOFF.compute(min(failures, 8))  # the cap is reached by 4; 2**n overflows

    def cleared(self, loop: str) -> None:
        """Note that ``loop`` used Redis again."""
        if self._failures.pop(loop, None) is None or self._failures or self._since is None:
            return
        log.warning("background work uses Redis again, after %.0f s", self._now() - self._since)
        self._since = None

    def forget(self, loop: str) -> None:
        """Note that ``loop`` stopped trying. Whether Redis is back is not known then, so
        when no loop is left failing the outage ends unreported, and the next failure is
        reported as a new one."""
        self._failures.pop(loop, None)
        if not self._failures:
            self._since = None
