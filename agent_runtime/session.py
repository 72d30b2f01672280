"""Where a run's snapshot lives between steps, so another process can resume it.

A snapshot is a JSON-safe dict. Every save names the version it replaces; a save over a
newer version is refused, so two processes can never both continue the same run.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Protocol

from .errors import StaleSessionError
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


class InMemorySessionStore:
    """A process-local ``SessionStore`` for tests and single-process use."""

    def __init__(self) -> None:
        self._sessions: dict[str, StoredSession] = {}

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
        # A JSON round trip both copies the snapshot and proves it is JSON-safe.
        stored = json.loads(json.dumps(snapshot))
        self._sessions[thread_id] = StoredSession(version=current_version + 1, snapshot=stored)
        return current_version + 1

    async def delete(self, thread_id: str) -> None:
        self._sessions.pop(thread_id, None)
