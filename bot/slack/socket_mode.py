"""Socket Mode's connection to Slack: a readiness check and a watchdog that reconnects.

Idle Socket Mode connections have been seen to die quietly, so the process's readiness
depends on ``is_connected()``, and the watchdog reconnects one found dead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

log = logging.getLogger(__name__)


def connection_check(handler: AsyncSocketModeHandler) -> Callable[[], Awaitable[str | None]]:
    """A ``/readyz`` check: not ready while the Socket Mode connection is down."""

    async def check() -> str | None:
        if await handler.client.is_connected():
            return None
        return "slack: the Socket Mode connection is down (reconnecting)"

    return check


async def watch_connection(handler: AsyncSocketModeHandler, *, every: float = 30.0) -> None:
    """Reconnect a Socket Mode connection that died quietly (seen after idle periods)."""
    while True:
        await asyncio.sleep(every)
        if not await handler.client.is_connected():
            log.warning("Socket Mode connection lost; reconnecting")
            await handler.client.connect()  # type: ignore[no-untyped-call]
