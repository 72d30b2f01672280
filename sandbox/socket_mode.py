"""Socket Mode: the websocket Slack opens for apps without a public request URL.

Speaks Slack's envelopes (`{type, envelope_id, payload, accepts_response_payload}`) and
waits for the app's `{envelope_id, payload?}` ack. Each envelope goes to exactly one of
the open connections, round robin.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

from aiohttp import WSMsgType, web
from pydantic import BaseModel, ValidationError

from .entities import JsonObject
from .ids import Ids

log = logging.getLogger(__name__)


class NotConnected(Exception):
    """No Socket Mode connection is open."""


class _SocketAck(BaseModel):
    envelope_id: str
    payload: JsonObject | None = None


class SocketModeHub:
    """Issues websocket URLs, holds the open connections and matches acks to envelopes."""

    def __init__(self, *, app_id: str) -> None:
        self._app_id = app_id
        self._tickets: set[str] = set()
        self._connections: list[web.WebSocketResponse] = []
        self._pending: dict[str, asyncio.Future[JsonObject | None]] = {}
        self._turn = 0

    @property
    def connected(self) -> int:
        """How many app connections are open."""
        return len(self._connections)

    def issue_url(self, origin: str) -> str:
        """A fresh `ws://` URL for `apps.connections.open`."""
        ticket = Ids.token()
        self._tickets.add(ticket)
        return origin.replace("http", "ws", 1) + f"/socket-mode/{ticket}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """The websocket endpoint: hello on connect, then acks until the app disconnects."""
        if request.match_info["ticket"] not in self._tickets:
            raise web.HTTPNotFound(text="unknown or expired socket mode ticket")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._connections.append(ws)
        log.info("socket mode connection opened (%d open)", len(self._connections))
        try:
            await ws.send_json(
                {
                    "type": "hello",
                    "num_connections": len(self._connections),
                    "debug_info": {"host": "sandbox", "approximate_connection_time": 3600},
                    "connection_info": {"app_id": self._app_id},
                }
            )
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_ack(message.data)
        finally:
            self._connections.remove(ws)
            log.info("socket mode connection closed (%d open)", len(self._connections))
        return ws

    def _on_ack(self, raw: str) -> None:
        try:
            ack = _SocketAck.model_validate_json(raw)
        except ValidationError:
            log.warning("ignoring a socket mode message that is not an ack: %.200s", raw)
            return
        future = self._pending.get(ack.envelope_id)
        if future is not None and not future.done():
            future.set_result(ack.payload)

    async def send(
        self,
        kind: str,
        payload: JsonObject,
        *,
        accepts_response_payload: bool,
        ack_within: float,
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> JsonObject | None:
        """Send one envelope and return the ack's payload; `TimeoutError` when not acked."""
        if not self._connections:
            raise NotConnected
        ws = self._connections[self._turn % len(self._connections)]
        self._turn += 1
        envelope_id = str(uuid.uuid4())
        envelope: JsonObject = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": kind,
            "accepts_response_payload": accepts_response_payload,
        }
        if kind == "events_api":
            envelope.update(retry_attempt=retry_attempt, retry_reason=retry_reason)
        future: asyncio.Future[JsonObject | None] = asyncio.get_running_loop().create_future()
        self._pending[envelope_id] = future
        try:
            await ws.send_str(json.dumps(envelope))
            async with asyncio.timeout(ack_within):
                return await future
        finally:
            del self._pending[envelope_id]

    async def close(self) -> None:
        """Tell every app connection to go away (as Slack does before maintenance)."""
        for ws in list(self._connections):
            await ws.close()
