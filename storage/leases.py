"""A key held alone while a block runs: taken with a token, renewed while held, released by
its holder only, and lapsing on its own when the holder's process dies."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .client import RedisClient
from .errors import StorageError

log = logging.getLogger(__name__)


@asynccontextmanager
async def held(client: RedisClient, key: str, *, lasts_ms: int) -> AsyncIterator[bool]:
    """Hold ``key`` for the block, renewed every third of ``lasts_ms``; yields False (and
    holds nothing) when another holder has it."""
    token = secrets.token_hex(16)
    async with client.guard("take a lease"):
        taken = await client.raw.set(key, token, nx=True, px=lasts_ms)
        # Sent again after its reply was lost, the take finds the lease it took.
        taken = taken or await client.raw.get(key) == token
    if not taken:
        yield False
        return
    renewing = asyncio.create_task(_renew(client, key, token, lasts_ms), name=f"lease {key}")
    try:
        yield True
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing
        await client.eval("lease_release", [key], [token])


async def _renew(client: RedisClient, key: str, token: str, lasts_ms: int) -> None:
    """Renew the lease while it is ours. A renewal Redis fails is tried at the next beat,
    not given up: the lease would lapse under work still running, letting another process
    do it too."""
    while True:
        await asyncio.sleep(lasts_ms / 3000)
        try:
            if not await client.eval("lease_renew", [key], [token, lasts_ms]):
                return
        except StorageError as exc:
            log.warning("%s; trying again", exc)
