"""Socket Mode's connection to Slack: the handler, which times each ack, a readiness
check, a watchdog that reconnects, and the client's logger, which logs a failed attempt to
connect in one line.

Idle Socket Mode connections have been seen to die quietly, so the process's readiness
depends on ``is_connected()``, and the watchdog reconnects one found dead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import (
    run_async_bolt_app,
    send_async_response,
)
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.web.async_client import AsyncWebClient

from bot.services.metrics import Histogram

log = logging.getLogger(__name__)


class _FailedAttempts(logging.Filter):
    """slack-sdk logs each failed attempt to connect as an error with its traceback: one
    every few seconds while Slack is out of reach. This keeps each as one warning line,
    the error named in its message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.getMessage().startswith("Failed to connect"):
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


SLACK_WAITS = 3.0
"""Seconds Slack waits for an envelope's ack: an ack later than that is of no use."""

CLIENT_LOG = logging.getLogger("slack_sdk.socket_mode")
"""The logger to give the Socket Mode client (Bolt would give it the app's)."""
CLIENT_LOG.addFilter(_FailedAttempts())


class TimedSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, which also observes in ``acks`` how long each envelope
    took from reaching it to its ack leaving: HTTP mode's ack latency, for Socket Mode."""

    def __init__(
        self, app: AsyncApp, app_token: str, *, web_client: AsyncWebClient, acks: Histogram
    ) -> None:
        super().__init__(app, app_token, logger=CLIENT_LOG, web_client=web_client)
        self.acks = acks
        self._in_hand: set[asyncio.Future[None]] = set()

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        """Bolt's own handling (its adapters' two steps), timed."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_hand.add(done)
        try:
            started, wall_clock = time.perf_counter(), time.time()
            response = await run_async_bolt_app(self.app, req)
            await send_async_response(client, req, response, wall_clock)
            if response.status == 200:  # Bolt acks only these; Slack sends the others again
                self.acks.observe(time.perf_counter() - started)
        finally:
            self._in_hand.discard(done)
            done.set_result(None)

    async def close_after_acks(self) -> None:
        """Close the connection once the envelopes in hand are answered (``SLACK_WAITS``
        seconds at most), as HTTP mode's shutdown lets its requests finish: closed at once, a
        click already queued would get no ack, and Slack would show its clicker an error."""
        if self._in_hand:
            await asyncio.wait(set(self._in_hand), timeout=SLACK_WAITS)
        await self.close_async()  # type: ignore[no-untyped-call]


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
