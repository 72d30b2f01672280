"""Checks every adapter of another agent framework must pass, shared by their test files."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from harness import ALICE, Harness

from agent_runtime import Decision
from agent_runtime.runnable import Runnable
from bot.runs import drive


async def interrupts_keep_their_time(agent: Runnable) -> None:
    """An AG-UI answer's expiry counts from the interrupt's time: read again later, an
    interrupt still has the time it was asked, not the time of the read."""
    asked = await agent.invoke("clean up", thread_id="thread_dated")
    asked_by = datetime.now(UTC)
    status = await agent.thread_status("thread_dated")
    assert status is not None and status.interrupts
    assert [i.created_at for i in status.interrupts] == [i.created_at for i in asked.interrupts]
    assert all(i.created_at <= asked_by for i in status.interrupts)


class WorkerKilled(Exception):
    """Stands for the worker's process dying where the test makes it fail."""


def first_telling_dies(monkeypatch: pytest.MonkeyPatch, *, after_telling: bool) -> list[str]:
    """The first worker to tell what a tool did dies then (before telling it, or once it
    posted and audited it): its job is retried, and the retry finds the answers applied.
    Returns the list the death is noted in."""
    tell, died = drive.tell_tool_outcome, []

    async def dies(*args: Any, **kwargs: Any) -> None:
        if died:
            return await tell(*args, **kwargs)
        died.append("died")
        if after_telling:
            await tell(*args, **kwargs)
        raise WorkerKilled("killed while telling what a tool did")

    monkeypatch.setattr(drive, "tell_tool_outcome", dies)
    return died


async def tool_audits(bot: Harness) -> list[tuple[str, str]]:
    """The (record id, detail) of each tool outcome in the audit trail."""
    trail = await bot.services.storage.audit.read(count=100)
    return [(e.record_id, e.detail) for e in trail if e.event.startswith("tool_")]


async def record_unchecked_edit(bot: Harness, value: str, args: dict[str, Any]) -> None:
    """Alice's edit of the card of ``value`` recorded in storage unchecked, as a version
    whose Edit modal did not check it against the tool recorded it (now the modal refuses
    it): the framework's own refusal as the run resumes still stands behind the modal's."""
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None
    decided = await bot.services.storage.interrupts.decide(
        record.id, ALICE, Decision.edit(args), args_digest=record.args_digest, now=bot.clock.now()
    )
    assert decided.status == "recorded"
