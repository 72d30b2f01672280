"""Checks every adapter of another agent framework must pass, shared by their test files."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_runtime.runnable import Runnable


async def interrupts_keep_their_time(agent: Runnable) -> None:
    """An AG-UI answer's expiry counts from the interrupt's time: read again later, an
    interrupt still has the time it was asked, not the time of the read."""
    asked = await agent.invoke("clean up", thread_id="thread_dated")
    asked_by = datetime.now(UTC)
    status = await agent.thread_status("thread_dated")
    assert status is not None and status.interrupts
    assert [i.created_at for i in status.interrupts] == [i.created_at for i in asked.interrupts]
    assert all(i.created_at <= asked_by for i in status.interrupts)
