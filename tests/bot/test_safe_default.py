"""The safe default when nobody decides: stated on the card from the start, denied unless
the policy explicitly approves a low-risk action then, and never for a dangerous one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fakes import Fault
from harness import ALICE, CAROL, CHANNEL, Harness

from bot.agents.policy import Policy
from bot.decisions.clicks import made_final
from bot.errors import PolicyError
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

LOW_RISK = Policy(
    channel=CHANNEL,
    users=(ALICE,),
    expires_after=timedelta(hours=1),
    if_nobody_decides="approve",
    reminders=None,
)
"""Approved when nobody decides within the hour."""


async def test_a_low_risk_action_is_approved_by_default_and_says_so(make_bot: Any) -> None:
    bot: Harness = await make_bot(LOW_RISK)
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


async def test_a_request_whose_card_was_never_posted_is_not_approved_by_default(
    make_bot: Any,
) -> None:
    """Slack refused the card (the app is not in the channel): no approver could decide."""
    bot: Harness = await make_bot(LOW_RISK)
    refused = Fault(status=200, body={"ok": False, "error": "not_in_channel"})
    bot.slack.faults["chat.postMessage"].extend([refused] * 50)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.services.background.idle()
    assert bot.tool_log.calls == []
    events = {e.event: e.detail for e in await bot.services.storage.audit.read(count=100)}
    assert "approved_by_default" not in events
    assert events["expired"] == "not approved by default: its card was never posted"


async def test_a_click_after_the_deadline_is_told_what_the_expiry_does(make_bot: Any) -> None:
    """The sweep has not run yet: the denial changes nothing, its form stores the expiry
    the sweep would (approved by default) and says so, so that is true when read."""
    bot: Harness = await make_bot(LOW_RISK)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=1, seconds=2))
    status, said = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="do not")
    assert status == 200
    assert "time is up, so it is approved by default" in said, said
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and (record.state, record.decided_by) == ("approved", None)
    await Scheduler(bot.services, made_final=made_final).tick()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved"
