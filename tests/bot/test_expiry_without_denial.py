"""A request whose tool offers no denial (approve or edit only) expires: its run ends as
cancelled, the tool unrun (before, the run refused the expiry's denial and its resume
was dead-lettered)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import OneToolModel
from harness import ALICE, CAROL, CHANNEL, Harness, ToolLog

from agent_runtime import Agent, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.schedule.scheduler import Scheduler


def spec(log: ToolLog, policy: Policy) -> AgentSpec:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        log.calls.append({"paths": paths})
        return f"deleted {len(paths)} file(s)"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": ["/tmp/a", "/tmp/b"]}),
            tools=[delete_files],
            # Approvers may approve or fix the paths; there is no "deny" for this tool.
            interrupt_on={"delete_files": {"allowed_decisions": ["approve", "edit"]}},
            session_store=store,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=policy)


async def test_an_expired_approval_without_reject_ends_the_run(make_bot: Any) -> None:
    log = ToolLog()
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(hours=1))
    bot: Harness = await make_bot(policy, spec=spec(log, policy), reclaim_after=0.05)
    await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services).tick()
    text = await bot.finished()
    assert text.startswith("Stopped") and "not approved: the request was expired" in text, text
    assert log.calls == []
    assert await bot.services.storage.resume.dead_letters() == []
