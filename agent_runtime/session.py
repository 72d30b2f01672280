"""Where a run's snapshot lives between steps, so another process can resume it.

A snapshot is a JSON-safe dict. Every save names the version it replaces; a save over a
newer version is refused, so two processes can never both continue the same run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from .errors import StaleSessionError, ThreadBusyError
from .messages import JSONValue

Snapshot = dict[str, JSONValue]


@dataclass(frozen=True, kw_only=True)
class StoredSession:
    """A snapshot as stored, with the version a later save must name."""

    version: int
    snapshot: Snapshot


class SessionStore(Protocol):
    """Keeps one snapshot per thread id, versioned for optimistic concurrency."""

    async def load(self, thread_id: str) -> StoredSession | None:
        """The thread's latest snapshot, or None when the thread is unknown."""
        ...

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        """Store ``snapshot`` if the stored version is ``expected_version`` (0: none yet).

        Returns the new version; raises ``StaleSessionError`` when the versions differ.
        """
        ...

    async def delete(self, thread_id: str) -> None:
        """Forget the thread; deleting an unknown thread is not an error."""
        ...

    def lease(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the thread alone for a block; ``ThreadBusyError`` when another holds it.

        For agents whose state lives outside this store (a LangGraph checkpointer): the
        versioned saves alone would only notice a second resume after it ran."""
        ...


class InMemorySessionStore:
    """A process-local ``SessionStore`` for tests and single-process use."""

    def __init__(self) -> None:
        self._sessions: dict[str, StoredSession] = {}
        self._leased: set[str] = set()

    async def load(self, thread_id: str) -> StoredSession | None:
        stored = self._sessions.get(thread_id)
        if stored is None:
            return None
        return StoredSession(version=stored.version, snapshot=copy.deepcopy(stored.snapshot))

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        current = self._sessions.get(thread_id)
        current_version = current.version if current else 0
        if current_version != expected_version:
            raise StaleSessionError(
                f"thread {thread_id}: expected version {expected_version}, "
                f"stored version is {current_version}"
            )
        # A JSON round trip both copies the snapshot and proves it is JSON-safe (a NaN
        # too is refused, as the Redis store refuses it).
        stored = json.loads(json.dumps(snapshot, allow_nan=False))
        self._sessions[thread_id] = StoredSession(version=current_version + 1, snapshot=stored)
        return current_version + 1

    async def delete(self, thread_id: str) -> None:
        self._sessions.pop(thread_id, None)

    @asynccontextmanager
    async def lease(self, thread_id: str) -> AsyncIterator[None]:
        if thread_id in self._leased:
            raise ThreadBusyError(f"thread {thread_id} is being run elsewhere; try again")
        self._leased.add(thread_id)
        try:
            yield
        finally:
            self._leased.discard(thread_id)
