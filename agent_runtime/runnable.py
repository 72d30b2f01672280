"""What Agents and Workflows share: invoking a run and reading what a thread waits on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .interrupts import Interrupt
from .results import AgentResult
from .resume import RunInput
from .run_events import RunEvent, RunFinished
from .session import SessionStore
from .state import RunState


class Runnable(ABC):
    """A thing that runs on a thread, may stop for humans, and is resumed by answers."""

    session_store: SessionStore

    @abstractmethod
    def stream(self, input: RunInput, *, thread_id: str | None = None) -> AsyncIterator[RunEvent]:
        """Run and yield events as they happen; the last one is ``RunFinished``."""

    async def invoke(self, input: RunInput, *, thread_id: str | None = None) -> AgentResult:
        """Run until done or stopped for a human; see ``stream`` for the events."""
        result: AgentResult | None = None
        async for event in self.stream(input, thread_id=thread_id):
            if isinstance(event, RunFinished):
                result = event.result
        assert result is not None, "every run ends with RunFinished"
        return result

    async def open_interrupts(self, thread_id: str) -> list[Interrupt]:
        """The interrupts the thread waits on now, read from its stored snapshot."""
        stored = await self.session_store.load(thread_id)
        if stored is None:
            return []
        state = RunState.from_snapshot(stored.snapshot)
        if state.status != "interrupted":
            return []
        return [pending.interrupt for pending in state.pending]


def next_input(value: str | Sequence[Any] | None) -> RunInput | None:
    """The input an ``AfterInvocation.resume`` hook asked for, if any."""
    if value is None or isinstance(value, str):
        return value
    return list(value)
