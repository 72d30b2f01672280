"""Delivering payloads to the app, as Slack does, and enforcing the 3-second ack.

Over Socket Mode when the app has a connection open, otherwise by HTTP POST to the
request URL: interactions form-encoded as `payload=<json>`, slash commands as form
fields, events as JSON, all signed with v0 HMAC. Interactions are never redelivered;
events are retried as Slack retries them (`X-Slack-Retry-Num`, `X-Slack-Retry-Reason`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode

import aiohttp

from .entities import JsonObject
from .errors import SandboxError
from .faults import Faults
from .signing import signature_headers
from .socket_mode import NotConnected, SocketModeHub

log = logging.getLogger(__name__)

DeliveryKind = Literal["interactive", "slash_commands", "events_api"]
AckStatus = Literal["acked", "timed_out", "failed", "no_app"]


@dataclass(frozen=True, kw_only=True)
class Outbound:
    """One payload for the app; `kind` is the Socket Mode envelope type."""

    kind: DeliveryKind
    payload: JsonObject
    accepts_response_payload: bool = False
    retry_num: int = 0
    retry_reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Ack:
    """How the app answered: `body` is the ack's payload (`response_action`, slash text...)."""

    status: AckStatus
    body: JsonObject | None = None
    detail: str = ""
    seconds: float = 0.0
    reason: str = ""  # Slack's retry reason for a failed attempt, e.g. `http_timeout`

    def to_json(self) -> JsonObject:
        return {
            "status": self.status,
            "body": self.body,
            "detail": self.detail,
            "seconds": round(self.seconds, 4),
            "reason": self.reason,
        }


def _http_body(outbound: Outbound) -> tuple[bytes, str]:
    if outbound.kind == "events_api":
        return json.dumps(outbound.payload).encode(), "application/json"
    if outbound.kind == "slash_commands":
        fields = {
            k: str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in outbound.payload.items()
        }
        return urlencode(fields).encode(), "application/x-www-form-urlencoded"
    form = urlencode({"payload": json.dumps(outbound.payload)})
    return form.encode(), "application/x-www-form-urlencoded"


def _ack_body(raw: bytes, content_type: str) -> JsonObject | None:
    if not raw.strip():
        return None
    if content_type.startswith("application/json"):
        parsed = json.loads(raw)
        return parsed if isinstance(parsed, dict) else None
    return {"text": raw.decode(errors="replace")}


class Delivery:
    """Sends payloads to the app and reports each ack, timeout or failure."""

    def __init__(
        self,
        *,
        signing_secret: str,
        faults: Faults,
        hub: SocketModeHub,
        ack_timeout: float,
        event_retry_delays: tuple[float, ...],
    ) -> None:
        self.request_url: str | None = None
        self._secret = signing_secret
        self._faults = faults
        self._hub = hub
        self._ack_timeout = ack_timeout
        self._retry_delays = event_retry_delays
        self._retries: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None
        self.log: list[tuple[Outbound, Ack]] = []

    async def start(self) -> None:
        self._session = aiohttp.ClientSession()

    async def stop(self) -> None:
        """Abandon pending event retries and close the HTTP session."""
        for task in list(self._retries):
            task.cancel()
        await asyncio.gather(*self._retries, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    async def deliver(self, outbound: Outbound) -> Ack:
        """Deliver and wait at most the ack timeout; a failed event is retried in the background."""
        ack = await self._deliver_once(outbound)
        if outbound.kind == "events_api" and ack.reason and self._retry_delays:
            task = asyncio.create_task(self._retry(outbound, ack.reason))
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)
        return ack

    async def redeliver(self, index: int = -1) -> Ack:
        """Send an earlier delivery again, byte for byte (a replay or a network duplicate).

        Slack itself never does this for interactions; it is here so tests can check that
        the app deduplicates (Bolt has no replay protection).
        """
        if not self.log:
            raise SandboxError("nothing has been delivered yet")
        outbound, _ = self.log[index]
        return await self._deliver_once(outbound)

    async def _retry(self, outbound: Outbound, reason: str) -> None:
        for attempt, delay in enumerate(self._retry_delays, start=1):
            await asyncio.sleep(delay)
            retry = dataclasses.replace(outbound, retry_num=attempt, retry_reason=reason)
            ack = await self._deliver_once(retry)
            if not ack.reason:
                return
            reason = ack.reason

    async def _deliver_once(self, outbound: Outbound) -> Ack:
        started = time.monotonic()
        ack = dataclasses.replace(await self._attempt(outbound), seconds=time.monotonic() - started)
        self.log.append((outbound, ack))
        log.info(
            "delivered %s %s: %s %s", outbound.kind, _describe(outbound), ack.status, ack.detail
        )
        return ack

    async def _attempt(self, outbound: Outbound) -> Ack:
        if self._faults.take_drop():
            # Lost on the way: the app never sees it and the user waits out the timeout.
            await asyncio.sleep(self._ack_timeout)
            return Ack(
                status="timed_out", detail="delivery dropped by an injected fault", reason="timeout"
            )
        if self._hub.connected:
            try:
                body = await self._hub.send(
                    outbound.kind,
                    outbound.payload,
                    ack_within=self._ack_timeout,
                    accepts_response_payload=outbound.accepts_response_payload,
                    retry_attempt=outbound.retry_num,
                    retry_reason=outbound.retry_reason,
                )
            except TimeoutError:
                return Ack(status="timed_out", detail="no ack over socket mode", reason="timeout")
            except (NotConnected, ConnectionResetError):
                pass  # the connection went away; fall back to HTTP like Slack would
            else:
                return Ack(status="acked", body=body)
        if self.request_url is None:
            return Ack(status="no_app", detail="no request URL set and no socket mode connection")
        return await self._post(outbound, self.request_url)

    async def _post(self, outbound: Outbound, url: str) -> Ack:
        assert self._session is not None, "Delivery.start() was not called"
        body, content_type = _http_body(outbound)
        headers = {
            "Content-Type": content_type,
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        }
        if outbound.retry_num:
            headers["X-Slack-Retry-Num"] = str(outbound.retry_num)
            headers["X-Slack-Retry-Reason"] = outbound.retry_reason
        headers.update(signature_headers(self._secret, body))
        try:
            async with asyncio.timeout(self._ack_timeout):
                async with self._session.post(url, data=body, headers=headers) as response:
                    raw = await response.read()
                    if response.status != 200:
                        detail = f"HTTP {response.status}"
                        return Ack(status="failed", detail=detail, reason="http_error")
                    return Ack(status="acked", body=_ack_body(raw, response.content_type))
        except TimeoutError:
            detail = f"no answer from {url} in time"
            return Ack(status="timed_out", detail=detail, reason="http_timeout")
        except aiohttp.ClientError as exc:
            detail = f"{type(exc).__name__}: {exc}"
            return Ack(status="failed", detail=detail, reason="connection_failed")
        except json.JSONDecodeError:
            return Ack(status="failed", detail="the ack body is not valid JSON")


def _describe(outbound: Outbound) -> str:
    payload = outbound.payload
    if outbound.kind == "events_api":
        return str(payload.get("event", {}).get("type"))
    if outbound.kind == "slash_commands":
        return str(payload.get("command"))
    return str(payload.get("type"))
