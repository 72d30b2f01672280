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
    """Reconnect a Socket Mode connection that died quietly (seen after idle periods), at
    an address asked anew each time: the one it had may have expired (Slack's are
    temporary), and slack-sdk would retry it for ever."""
    while True:
        await asyncio.sleep(every)
        if await handler.client.is_connected():
            continue
        log.warning("Socket Mode connection lost; reconnecting at a new address")
        try:
            # Not forced: slack-sdk's own reconnection, under way, holds the lock or is done.
            reconnecting = handler.client.connect_to_new_endpoint()
            await asyncio.wait_for(reconnecting, every)
        except Exception as exc:  # Slack out of reach, or slow: asked again next time
            log.warning("Socket Mode not reconnected (%r); trying again in %.0fs", exc, every)
