"""Slack requests already handled: a retried event is acted on once, and a signed
request received again is refused.

Slack retries an event it thinks was missed (up to 3 times, with ``X-Slack-Retry-Num``)
and every retry carries the same ``event_id``. Each id is remembered for an hour, longer
than Slack's retries take, so the key never outlives its purpose by much. A command or an
interaction is never retried, and each carries its own ``trigger_id``: its signature is
remembered for as long as it would be accepted, so a captured one cannot be sent again.
Socket Mode's envelopes are unsigned: each one's ``envelope_id`` is remembered as long, so
an envelope received twice (by one process or two) is acted on once.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from .client import RedisClient
from .keys import Keys

log = logging.getLogger(__name__)

REMEMBER_FOR = timedelta(hours=1)
SIGNATURE_GOOD_FOR = timedelta(minutes=10)
"""How long a signature, or an envelope id, is remembered: Slack's signatures are accepted
five minutes either side of their timestamp."""


class Deliveries:
    """Claims Events API event ids: the first delivery of an id wins, retries lose."""

    def __init__(
        self, client: RedisClient, keys: Keys, *, remember_for: timedelta = REMEMBER_FOR
    ) -> None:
        self._client = client
        self._keys = keys
        self._ttl_ms = int(remember_for.total_seconds() * 1000)

    async def first(self, event_id: str) -> bool:
        """True for the first delivery of ``event_id``, False for a retry of one seen.

        One ``SET NX PX``, so two processes receiving the same event agree on one winner;
        it stores a token of this claim, so a claim redis-py sent again (its reply was lost)
        finds itself the winner rather than a retry.
        """
        claimed = await self._client.first_to_mark(
            self._keys.delivery(event_id), keep_ms=self._ttl_ms, action=f"claim event {event_id}"
        )
        if not claimed:
            log.info("event %s was delivered before; this retry is ignored", event_id)
        return claimed

    async def first_signed(self, signature: str) -> bool:
        """True the first time a request signed ``signature`` is received, False after (a
        check redis-py sent again, its reply lost, still finds itself first)."""
        digest = hashlib.sha256(signature.encode()).hexdigest()
        return await self._first_received(self._keys.signed_request(digest))

    async def first_envelope(self, envelope_id: str) -> bool:
        """True the first time a Socket Mode envelope ``envelope_id`` is received, by any
        process, False after; as ``first_signed``."""
        return await self._first_received(self._keys.envelope(envelope_id))

    async def _first_received(self, key: str) -> bool:
        return await self._client.first_to_mark(
            key,
            keep_ms=int(SIGNATURE_GOOD_FOR.total_seconds() * 1000),
            action="check a Slack request is new",
        )
