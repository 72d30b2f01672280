"""What the adapters of other agent frameworks share: one run id per thread, the
thread's lease around each invocation, where a thread stands read from its snapshot, and
how a withdrawn run ends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from agent_runtime.interrupts import Interrupt, InterruptResponse
from agent_runtime.results import AgentResult
from agent_runtime.resume import RunInput
from agent_runtime.run_events import RunEvent
from agent_runtime.runnable import Runnable, ThreadStatus
from agent_runtime.session import SessionStore, StoredSession


def run_id_of(thread_id: str) -> str:
    """The run of a thread: one per thread (each run started from Slack has its own)."""
    return "run_" + thread_id.removeprefix("thread_")


def cancelled(thread_id: str, reason: str) -> AgentResult:
    """How a thread's run ended when its cards were withdrawn."""
    return AgentResult(
        stop_reason="cancelled", message=reason, thread_id=thread_id, run_id=run_id_of(thread_id)
    )


class LeasedInvocation:
    """One invocation of an adapted agent, holding the thread's lease: two resumes of one
    thread at once would both run its next step (and its tool); the second is refused."""

    agent: Runnable
    thread_id: str
    resume_with: str | Sequence[InterruptResponse] | None = None

    async def run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        async with self.agent.session_store.lease(self.thread_id):
            async for event in self._run(input):
                yield event

    def _run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        raise NotImplementedError


async def snapshot_status(
    store: SessionStore,
    thread_id: str,
    interrupts_of: Callable[[StoredSession], Sequence[Interrupt]],
) -> ThreadStatus | None:
    """Where a thread whose agent keeps its state in ``store`` stands."""
    stored = await store.load(thread_id)
    if stored is None:
        return None
    interrupts = tuple(interrupts_of(stored))
    return ThreadStatus(
        thread_id=thread_id,
        run_id=run_id_of(thread_id),
        status="interrupted" if interrupts else "idle",
        version=stored.version,
        interrupts=interrupts,
        last_result=None,
    )
