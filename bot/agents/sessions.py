"""The session store one agent of the bot saves through: each snapshot names the agent,
so a thread's status is told only to whoever asks about the agent that ran it, and
another agent does not run on it."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from agent_runtime.errors import ResumeError
from agent_runtime.session import SessionStore, Snapshot, StoredSession

RAN_BY = "ran_by"
"""The snapshot field naming the agent that saved it."""


class AgentSessions:
    """``sessions`` as seen by agent ``name``: every save is stamped with the name."""

    def __init__(self, sessions: SessionStore, name: str) -> None:
        self._sessions = sessions
        self._name = name

    async def load(self, thread_id: str) -> StoredSession | None:
        """The thread's snapshot; ResumeError when another agent saved it (an app choosing
        its thread ids may use one with two agents: this one would resume, or save over,
        the other's run, its tools running on the other's approvals)."""
        stored = await self._sessions.load(thread_id)
        if stored is not None and not ran_by(stored, self._name):
            raise ResumeError(
                f"thread {thread_id} is agent {stored.snapshot.get(RAN_BY)!r}'s; "
                f"give {self._name!r} a thread of its own"
            )
        return stored

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        stamped = {**snapshot, RAN_BY: self._name}
        return await self._sessions.save(thread_id, stamped, expected_version=expected_version)

    async def delete(self, thread_id: str) -> None:
        await self._sessions.delete(thread_id)

    def lease(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        return self._sessions.lease(thread_id)


def ran_by(stored: StoredSession, name: str) -> bool:
    """Whether agent ``name`` ran the thread of ``stored``; a snapshot saved before
    snapshots named their agent counts as any agent's (nothing says whose it is)."""
    owner = stored.snapshot.get(RAN_BY)
    return owner is None or owner == name
