"""Warnings about Slack's requests logged at most once a minute, each saying how many
requests it stands for: one line a minute while something goes on, not one a request."""

from __future__ import annotations

import logging
import time

WARN_EVERY = 60.0
"""Seconds between two warnings of one kind."""


class RareWarning:
    """Logs ``message`` to ``logger`` at most once every ``WARN_EVERY`` seconds: a %-format
    of how many times it happened and since when, then what ``happened`` was given."""

    def __init__(self, logger: logging.Logger, message: str) -> None:
        self._logger = logger
        self._message = message
        self._count = 0
        self._warned_at: float | None = None

    def happened(self, *args: object) -> None:
        """Count one more; warn unless a warning of this kind was logged in the last minute."""
        self._count += 1
        now = time.monotonic()
        if self._warned_at is not None and now - self._warned_at < WARN_EVERY:
            return
        since = "startup" if self._warned_at is None else "the last warning"
        self._logger.warning(self._message, self._count, since, *args)
        self._count, self._warned_at = 0, now
