"""Someone who joined a policy's user group after the interrupt was posted (a new on-call
engineer) may decide it: Slack is asked again, at most once a minute per group."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CHANNEL, MALLORY, Harness

from bot import ids
from bot.policy import Policy

ONCALL = "S0ONCALL"


async def _bot_for_oncall(make_bot: Any, *members: str) -> tuple[Harness, str]:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,)))
    bot.slack.groups[ONCALL] = list(members)
    value = await bot.start()
    return bot, value


async def test_a_newcomer_to_the_group_approves_with_the_button(make_bot: Any) -> None:
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    bot.slack.groups[ONCALL] = [BOB]  # the rotation changed after the request was posted
    bot.clock.advance(timedelta(minutes=2))

    await bot.click(ids.APPROVE, value, user=BOB)

    assert "deleted 2 file(s)" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.decided_by == BOB
    assert record.policy.group_members == (BOB,)
    assert bot.slack.called("chat.postEphemeral") == []
    audit = await bot.services.storage.audit.read()
    assert [(e.event, e.user_id) for e in audit if e.event == "approvers_refreshed"] == [
        ("approvers_refreshed", BOB)
    ]


async def test_a_newcomer_denies_through_the_modal(make_bot: Any) -> None:
    bot, value = await _bot_for_oncall(make_bot)  # nobody at first
    bot.slack.groups[ONCALL] = [BOB]
    bot.clock.advance(timedelta(minutes=2))

    await bot.click(ids.DENY, value, user=BOB)
    await bot.slack.wait_calls("views.open")
    await bot.services.background.idle()  # the members are asked for once the modal is open
    status, body = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not today")

    assert status == 200 and "errors" not in body
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "denied" and record.decided_by == BOB
    assert bot.tool_log.calls == []


async def test_an_outsider_is_refused_and_slack_is_asked_at_most_once_a_minute(
    make_bot: Any,
) -> None:
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    before = await bot.services.storage.queries.get(bot.record_id(value))
    bot.clock.advance(timedelta(minutes=2))

    for _ in range(3):
        await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral", 3)

    assert len(bot.slack.called("usergroups.users.list")) == 2  # posting, then once now
    assert await bot.services.storage.queries.get(bot.record_id(value)) == before
    assert bot.tool_log.calls == []
