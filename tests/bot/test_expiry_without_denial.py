"""A request whose tool offers no denial (approve or edit only) expires: its run ends as
cancelled, the tool unrun (before, the run refused the expiry's denial and its resume
was dead-lettered)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, CAROL, CHANNEL, Harness, ToolLog, cleanup_spec

from bot.agents.policy import Policy
from bot.schedule.scheduler import Scheduler


async def test_an_expired_approval_without_reject_ends_the_run(make_bot: Any) -> None:
    log = ToolLog()
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(hours=1))
    bot: Harness = await make_bot(
        policy, spec=cleanup_spec(log, policy, decisions=("approve", "edit")), reclaim_after=0.05
    )
    await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services).tick()
    text = await bot.finished()
    assert text.startswith("Stopped") and "not approved: the request was expired" in text, text
    assert log.calls == []
    assert await bot.services.storage.resume.dead_letters() == []
