"""What Agents and Workflows share: invoking a run and reading what a thread waits on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .interrupts import DecisionType, Interrupt, InterruptResponse
from .messages import JSONValue, ToolCall, new_id
from .results import AgentResult, ToolResult
from .resume import RunInput
from .run_events import RunEvent, RunFinished
from .session import SessionStore, StoredSession
from .state import RunState, RunStatus


class Invocation(Protocol):
    """One invocation on a thread, between two stops; hooks may ask to go on at once."""

    resume_with: str | Sequence[InterruptResponse] | None

    def run(self, input: RunInput) -> AsyncIterator[RunEvent]: ...


class Runnable(ABC):
    """A thing that runs on a thread, may stop for humans, and is resumed by answers."""

    session_store: SessionStore

    @abstractmethod
    def invocation(self, thread_id: str) -> Invocation:
        """A new invocation of this runnable on ``thread_id``."""

    def first_invocation(self, thread_id: str) -> Invocation:
        """The first invocation on ``thread_id``, a thread ``stream`` has just named, so
        nothing is stored for it: a runnable may skip reading it (a save still refuses to
        overwrite a stored thread)."""
        return self.invocation(thread_id)

    async def stream(
        self, input: RunInput, *, thread_id: str | None = None
    ) -> AsyncIterator[RunEvent]:
        """Run and yield events as they happen; the last one is ``RunFinished``.

        ``input`` is a prompt to start a run, interrupt responses to resume the thread's
        interrupted run, or ``ContinueRun()``. Without ``thread_id`` the run starts on a new
        thread (``RunStarted`` and the result name it), which costs no read of the store.
        A hook may set ``AfterInvocation.resume`` to go on at once with new input.
        """
        thread = thread_id or new_id("thread")
        queued: RunInput | None = input
        first = thread_id is None
        while queued is not None:
            invocation = self.first_invocation(thread) if first else self.invocation(thread)
            first = False
            async for event in invocation.run(queued):
                yield event
            queued = _next_input(invocation.resume_with)

    async def invoke(self, input: RunInput, *, thread_id: str | None = None) -> AgentResult:
        """Run until done or stopped for a human; see ``stream`` for the events."""
        result: AgentResult | None = None
        async for event in self.stream(input, thread_id=thread_id):
            if isinstance(event, RunFinished):
                result = event.result
        assert result is not None, "every run ends with RunFinished"
        return result

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        """Where the thread stands, read from its stored snapshot; None for an unknown thread."""
        stored = await self.session_store.load(thread_id)
        if stored is None:
            return None
        return status_of(thread_id, stored)

    async def cancel(self, thread_id: str, reason: str) -> AgentResult | None:
        """End the thread's run that waits on humans as ``cancelled``; None when it waits on
        nothing (never started, running, or already ended). A concurrent resume wins: the
        save is refused when the thread moved on meanwhile."""
        stored = await self.session_store.load(thread_id)
        if stored is None:
            return None
        state = RunState.from_snapshot(stored.snapshot)
        if state.status != "interrupted":
            return None
        result = state.cancel(reason)
        snapshot = {**stored.snapshot, **state.to_snapshot()}
        await self.session_store.save(thread_id, snapshot, expected_version=stored.version)
        return result

    async def aclose(self) -> None:  # noqa: B027 - most runnables hold nothing to release
        """Release what the runnable holds (connections, threads); called once at shutdown."""

    def declared_decisions(self) -> Mapping[str, tuple[DecisionType, ...]] | None:
        """The decisions each tool (or node) it asks about allows, as declared before any
        run; None when only its runs tell (an adapted framework asks as it goes)."""
        return None

    def keeps_run_trust(self) -> bool:
        """Whether an approval saying ``Remember(scope="run")`` spares the rest of its run
        the same question (the run's trust ledger, which keeps a thread's or minutes'
        ``remember`` too); False when each call asks anew, whatever a decision remembers."""
        return True

    def tool_names(self) -> frozenset[str] | None:
        """The names its interrupts' tool calls may carry (a workflow's nodes too), which a
        per-tool policy is checked against; None when only its runs tell."""
        return None

    def some_tool_names(self) -> frozenset[str]:
        """When ``tool_names`` is None, the names its interrupts may carry that it can tell
        before a run (logged beside a per-tool policy's keys, which go unchecked)."""
        return frozenset()

    def may_name(self, name: str) -> bool:
        """When ``tool_names`` is None, whether its interrupts may carry ``name`` (a key
        none may carry fails its build); True when it cannot tell."""
        return True

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:  # noqa: B027
        """Refuse (``ResumeError``) edited arguments the tool ``call`` names would refuse,
        before the edit is recorded; a runnable that cannot tell beforehand takes any."""

    def tool_schema(self, name: str) -> dict[str, JSONValue] | None:
        """The JSON Schema of the arguments of the tool ``name``, which the Edit form is
        generated from; None when it cannot tell (the arguments are edited as JSON)."""
        return None

    async def open_interrupts(self, thread_id: str) -> list[Interrupt]:
        """The interrupts the thread waits on now."""
        status = await self.thread_status(thread_id)
        return list(status.interrupts) if status else []


@dataclass(frozen=True, kw_only=True)
class ThreadStatus:
    """A thread as stored: ``running`` means a run stopped between checkpoints (its process
    may have died: ``ContinueRun()`` continues it); ``last_result`` is how the last stop ended.
    """

    thread_id: str
    run_id: str
    status: RunStatus
    version: int
    interrupts: tuple[Interrupt, ...]
    last_result: AgentResult | None
    tool_results: tuple[tuple[ToolCall, ToolResult], ...] = ()
    """Each tool call of the thread that has a stored result, with it, in the order the
    calls were made (an adapted framework's thread: the calls its last invocation ran)."""
    tools_thread_id: str | None = None
    """The thread ``tool_results`` are of, when not this one: a workflow's are those of
    the agent node it stands at."""


def status_of(thread_id: str, stored: StoredSession) -> ThreadStatus:
    """Where the thread stands in ``stored``, its snapshot."""
    state = RunState.from_snapshot(stored.snapshot)
    return ThreadStatus(
        thread_id=thread_id,
        run_id=state.run_id,
        status=state.status,
        version=stored.version,
        interrupts=tuple(p.interrupt for p in state.pending)
        if state.status == "interrupted"
        else (),
        last_result=state.last_result,
        tool_results=_tool_results(state),
    )


def _tool_results(state: RunState) -> tuple[tuple[ToolCall, ToolResult], ...]:
    results = {
        m.tool_call_id: ToolResult(content=m.content, is_error=m.is_error)
        for m in state.messages
        if m.role == "tool" and m.tool_call_id is not None
    }
    results.update(state.batch_results)
    calls = [call for m in state.messages for call in m.tool_calls]
    return tuple((call, results[call.id]) for call in calls if call.id in results)


def _next_input(value: str | Sequence[Any] | None) -> RunInput | None:
    """The input an ``AfterInvocation.resume`` hook asked for, if any."""
    if value is None or isinstance(value, str):
        return value
    return list(value)
