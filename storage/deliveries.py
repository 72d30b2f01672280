"""Slack requests already handled: a retried event is acted on once, and a signed
request received again is refused.

Slack retries an event it thinks was missed (up to 3 times, with ``X-Slack-Retry-Num``)
and every retry carries the same ``event_id``. Each id is remembered for an hour, longer
than Slack's retries take, so the key never outlives its purpose by much. A command or an
interaction is never retried, and each carries its own ``trigger_id``: its signature is
remembered for as long as it would be accepted, so a captured one cannot be sent again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from datetime import timedelta

from .client import RedisClient
from .keys import Keys

log = logging.getLogger(__name__)

REMEMBER_FOR = timedelta(hours=1)
SIGNATURE_GOOD_FOR = timedelta(minutes=10)
"""How long a signature is remembered: Slack's are accepted five minutes either side of
their timestamp."""


class Deliveries:
    """Claims Events API event ids: the first delivery of an id wins, retries lose."""

    def __init__(
        self, client: RedisClient, keys: Keys, *, remember_for: timedelta = REMEMBER_FOR
    ) -> None:
        self._client = client
        self._keys = keys
        self._ttl_ms = int(remember_for.total_seconds() * 1000)
        self._signed: list[tuple[str, str, asyncio.Future[bool]]] = []
        self._flushes: set[asyncio.Future[None]] = set()

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
        """True the first time a request signed ``signature`` is received, False after.

        The checks of one event-loop turn share a round trip, as the clicks they let in
        do. Each mark is a token of its check, so a check redis-py sent again (its reply
        was lost) finds itself first rather than a replay.
        """
        digest = hashlib.sha256(signature.encode()).hexdigest()
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._signed.append((self._keys.signed_request(digest), secrets.token_hex(8), future))
        if len(self._signed) == 1:
            flush = asyncio.ensure_future(self._mark_signed())
            self._flushes.add(flush)  # held until done, so it is not garbage-collected
            flush.add_done_callback(self._flushes.discard)
        return await future

    async def _mark_signed(self) -> None:
        await asyncio.sleep(0)  # let the requests already read by the server join this batch
        batch, self._signed = self._signed, []
        keep_ms = int(SIGNATURE_GOOD_FOR.total_seconds() * 1000)
        try:
            async with self._client.guard("check Slack requests are new"):
                pipe = self._client.pipeline()
                for key, token, _ in batch:
                    pipe.set(key, token, nx=True, px=keep_ms)
                marked = await pipe.execute()
                taken = [i for i, reply in enumerate(marked) if not reply]
                if taken:  # seen before, or this very check sent twice
                    pipe = self._client.pipeline()
                    for i in taken:
                        pipe.get(batch[i][0])
                    for i, mark in zip(taken, await pipe.execute(), strict=True):
                        marked[i] = mark == batch[i][1]
        except Exception as exc:  # never leave a check waiting
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (*_, future), first in zip(batch, marked, strict=True):
            if not future.done():
                future.set_result(bool(first))
