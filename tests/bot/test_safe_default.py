"""The safe default when nobody decides: stated on the card from the start, denied unless
the policy explicitly approves a low-risk action then, and never for a dangerous one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, CAROL, CHANNEL, Harness

from bot.agents.policy import Policy
from bot.decisions.clicks import made_final
from bot.errors import PolicyError
from bot.schedule.scheduler import Scheduler


async def test_a_low_risk_action_is_approved_by_default_and_says_so(make_bot: Any) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=1),
        if_nobody_decides="approve",
        reminders=None,
    )
    bot: Harness = await make_bot(policy)
    await bot.start(requested_by=CAROL)
    assert ", it is approved by default" in str(bot.posted(0)["blocks"])
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services, made_final=made_final).tick()
    assert (await bot.finished()).startswith("Finished: done: deleted 2 file(s)")
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    card = bot.slack.called("chat.update")[-1]
    assert card["blocks"][0]["text"]["text"] == "Approved by default: delete_files"
    assert "Nobody decided in time" in str(card["blocks"])
    audit = await bot.services.storage.audit.read(count=50)
    assert [e.event for e in audit if e.event.startswith("approved")] == ["approved_by_default"]


async def test_by_default_nothing_is_approved(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(hours=1))
    bot: Harness = await make_bot(policy)
    await bot.start(requested_by=CAROL)
    assert ", it is denied" in str(bot.posted(0)["blocks"])
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services).tick()
    await bot.finished()
    assert bot.tool_log.calls == []


def test_a_dangerous_action_is_never_approved_by_default() -> None:
    with pytest.raises(PolicyError, match="never approved by default"):
        Policy(users=(ALICE,), dangerous=True, if_nobody_decides="approve")
