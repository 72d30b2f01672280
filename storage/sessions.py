"""RedisSessionStore: the runtime's SessionStore, one JSON snapshot per thread in Redis."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import cast

from agent_runtime.errors import StaleSessionError, ThreadBusyError
from agent_runtime.session import Snapshot, StoredSession

from .client import RedisClient
from .damage import what_is_wrong
from .errors import CorruptRecordError
from .keys import Keys
from .leases import held


def parse_session(key: str, version: object, raw: object) -> StoredSession:
    """A session read back from Redis; CorruptRecordError names the key when it is not one."""
    try:
        snapshot = json.loads(cast(str, raw))
        if not isinstance(snapshot, dict):
            raise ValueError("the snapshot is not a JSON object")
        return StoredSession(version=int(cast(str, version)), snapshot=snapshot)
    except (TypeError, ValueError) as exc:
        raise CorruptRecordError(key, what_is_wrong(exc)) from exc


SESSION_TTL = timedelta(days=30)
"""How long a thread's snapshot is kept after its last save: an agent's request may wait
no longer, or its approval would find nothing to resume."""

LEASE_MS = 30_000
"""A thread's lease lasts this long unless renewed (every third of it while held)."""


class RedisSessionStore:
    """Versioned snapshots with compare-and-set saves; a stale save is refused.

    Each save refreshes the session's TTL (default 30 days; None keeps it forever).
    """

    def __init__(
        self, client: RedisClient, keys: Keys, *, ttl: timedelta | None = SESSION_TTL
    ) -> None:
        self._client = client
        self._keys = keys
        self._ttl_ms = int(ttl.total_seconds() * 1000) if ttl else 0
        self._preloaded: dict[str, StoredSession] = {}

    @contextmanager
    def preloaded(self, thread_id: str, stored: StoredSession) -> Iterator[None]:
        """Answer the thread's next ``load`` with ``stored``, read moments ago, inside the block.

        A resume worker reads the snapshot together with the run's lease; this spares the
        agent a second round trip. A stale snapshot cannot do harm: saves compare versions.
        """
        self._preloaded[thread_id] = stored
        try:
            yield
        finally:
            self._preloaded.pop(thread_id, None)

    async def load(self, thread_id: str) -> StoredSession | None:
        stored = self._preloaded.pop(thread_id, None)
        if stored is not None:
            return stored
        key = self._keys.session(thread_id)
        async with self._client.guard("load session"):
            version, raw = await self._client.raw.hmget(key, ["version", "snapshot"])
        if version is None and raw is None:
            return None
        return parse_session(key, version, raw)

    @asynccontextmanager
    async def lease(self, thread_id: str) -> AsyncIterator[None]:
        """Hold the thread alone while the block runs, in any process; renewed while held,
        so a long step keeps it, and expiring on its own if this process dies."""
        async with held(self._client, self._keys.thread_lease(thread_id), lasts_ms=LEASE_MS) as ok:
            if not ok:
                raise ThreadBusyError(f"thread {thread_id} is being run elsewhere; try again")
            yield

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        data = json.dumps(snapshot, separators=(",", ":"), allow_nan=False)
        key = self._keys.session(thread_id)
        ok, version = cast(
            list[int],
            await self._client.eval(
                "session_save", [key], [expected_version, data, self._ttl_ms, secrets.token_hex(8)]
            ),
        )
        if not ok:
            raise StaleSessionError(
                f"thread {thread_id}: expected version {expected_version}, "
                f"stored version is {version}; reload the session and try again"
            )
        return int(version)

    async def delete(self, thread_id: str) -> None:
        async with self._client.guard("delete session"):
            await self._client.raw.delete(self._keys.session(thread_id))
