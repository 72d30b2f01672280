"""Socket Mode's connection to Slack: the handler, which acts on each envelope once and
times each ack, a readiness check, a watchdog that reconnects, and the client's logger,
which logs a failed attempt to connect in one line.

Idle Socket Mode connections have been seen to die quietly, so the process's readiness
depends on ``is_connected()``, and the watchdog reconnects one found dead.

Slack sends each envelope to one of the app's open connections, and sends an Events API
event again when it saw no ack for it (``retry_attempt`` and ``retry_reason`` on the
envelope, the payload's ``event_id`` unchanged: the mention listener skips a retry by it).
Slack documents retries of events only, and does not promise that an ``envelope_id`` never
arrives twice: a command's or an interaction's envelope any process received before is
acked and not acted on again (HTTP mode's replay check, on the envelope id instead of a
signature), so Undo, Withdraw, a batch card's buttons and ``/signoff run`` act once. A
decision click skips the check, as in HTTP mode: the deciders decide each trigger id once.
So does an event: Slack sends one again when the first was not acked, and its listener
skips what it already did by the ``event_id``. A copy of any envelope this process is
still acting on is acked as the first is, once it is: a command's reply or a form's
errors ride on the first ack Slack gets, which may be the copy's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.decisions.clicks import signoff_click, streamed
from bot.services.metrics import Histogram
from storage.deliveries import Deliveries
from storage.errors import InvalidIdError
from storage.ids import check_id, quoted_id

from .replays import ReplayCheck
from .requests import envelope_fits

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

_Answer = asyncio.Future[SocketModeResponse | None]
"""An envelope's ack, once Bolt has answered it (None: none sent)."""

CLIENT_LOG = logging.getLogger("slack_sdk.socket_mode")
"""The logger to give the Socket Mode client (Bolt would give it the app's)."""
CLIENT_LOG.addFilter(_FailedAttempts())


class TimedSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, which acts only on envelopes no process received before
    (asked of ``deliveries``), and observes in ``acks`` how long each envelope took from
    reaching it to its ack leaving: HTTP mode's ack latency, for Socket Mode."""

    def __init__(
        self,
        app: AsyncApp,
        app_token: str,
        *,
        web_client: AsyncWebClient,
        acks: Histogram,
        deliveries: Deliveries,
    ) -> None:
        super().__init__(app, app_token, logger=CLIENT_LOG, web_client=web_client)
        self.acks = acks
        self._deliveries = deliveries
        self._replays = ReplayCheck()
        self._in_hand: set[asyncio.Future[None]] = set()
        self._answering: dict[str, _Answer] = {}
        """The ack of each envelope this process is acting on, once Bolt has answered it."""

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        """Bolt's own handling, timed; an envelope malformed (its id, or its payload as HTTP
        mode refuses with a 400), or received before, only acked; a copy of one this process
        is handling acked as the first is."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_hand.add(done)
        try:
            started = time.perf_counter()
            ack = await self._ack(req)
            if ack is not None:
                await client.send_socket_mode_response(ack)
                self.acks.observe(time.perf_counter() - started)
        finally:
            self._in_hand.discard(done)
            done.set_result(None)

    async def _ack(self, req: SocketModeRequest) -> SocketModeResponse | None:
        """What to ack ``req`` with; None for a Bolt failure, not acked so Slack sends it
        again."""
        bare = SocketModeResponse(envelope_id=req.envelope_id)
        if _malformed(req):
            log.warning("envelope %s is malformed: acked, not acted on", quoted_id(req.envelope_id))
            return bare
        first = self._answering.get(req.envelope_id)
        if first is not None:  # its reply (a command's, a form's errors) rides on the first ack
            log.info("envelope %s arrived again while handled: acked as the first", req.envelope_id)
            try:
                return await asyncio.wait_for(asyncio.shield(first), SLACK_WAITS)
            except TimeoutError:
                return bare
        answer: _Answer = asyncio.get_running_loop().create_future()
        self._answering[req.envelope_id] = answer
        try:
            if await self._to_act_on(req):
                ack = _ack_of(req, await run_async_bolt_app(self.app, req))
            else:
                log.info("envelope %s was received before: acked, not acted on", req.envelope_id)
                ack = bare
            answer.set_result(ack)
            return ack
        finally:
            del self._answering[req.envelope_id]
            if not answer.done():
                answer.set_result(None)

    async def _to_act_on(self, req: SocketModeRequest) -> bool:
        """Whether ``req`` is to be acted on: an event or a decision click always, any other
        envelope the first time any process receives it (or when Redis cannot say in time)."""
        if req.type == "events_api":
            return True
        click = signoff_click(req.payload) if req.type == "interactive" else None
        if click is not None and streamed(click):
            return True
        return await self._replays.first_time(self._deliveries.first_envelope(req.envelope_id))

    async def close_after_acks(self) -> None:
        """Close the connection once the envelopes in hand are answered (``SLACK_WAITS``
        seconds at most), as HTTP mode's shutdown lets its requests finish: closed at once, a
        click already queued would get no ack, and Slack would show its clicker an error."""
        if self._in_hand:
            await asyncio.wait(set(self._in_hand), timeout=SLACK_WAITS)
        await self.close_async()  # type: ignore[no-untyped-call]


def _ack_of(req: SocketModeRequest, response: BoltResponse) -> SocketModeResponse | None:
    """The ack Bolt's Socket Mode adapter sends for ``response``: its JSON body as the
    payload, other text as ``text``; None when Bolt failed (it acks only a 200)."""
    if response.status != 200:
        log.info("Bolt answered envelope %s with %d: not acked", req.envelope_id, response.status)
        return None
    if not response.body:
        return SocketModeResponse(envelope_id=req.envelope_id)
    if response.headers.get("content-type", [""])[0].startswith("application/json"):
        return SocketModeResponse(envelope_id=req.envelope_id, payload=json.loads(response.body))
    return SocketModeResponse(envelope_id=req.envelope_id, payload={"text": response.body})


def _malformed(req: SocketModeRequest) -> bool:
    """Whether an envelope is one Slack does not send: an id its replay check cannot keep
    (not a Redis outage, which the check meets by acting on it), or a malformed payload."""
    try:
        check_id("envelope", req.envelope_id)
    except InvalidIdError:
        return True
    return not envelope_fits(req.type, req.payload)


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
