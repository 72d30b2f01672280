"""App Home after a decision on a request open to a channel: the Home of the members it
was listed for is redrawn, whichever ``serve`` process drew it."""

from __future__ import annotations

from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness
from home_lists import last_home, open_home

from bot.agents.policy import Policy
from bot.ui import ids


async def test_a_decision_redraws_the_home_of_members_who_saw_it_open_to_their_channel(
    make_bot: Any,
) -> None:
    """Carol decides nothing by name, but sees the request open to her channel: once Alice
    decides it on its card, Carol's Home is redrawn without it (the outsider's is not)."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,), anyone_in_channel=True))
    value = await bot.start(requested_by=BOB)
    bot.slack.channels_of.update({CAROL: [CHANNEL], MALLORY: ["C0ELSEWHERE"]})
    listed = "*cleanup* wants to run `delete_files`"
    assert listed in str(await open_home(bot, CAROL))
    await open_home(bot, MALLORY)
    published = len(bot.slack.called("views.publish"))
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    await bot.slack.wait_for(
        lambda: any(c["user_id"] == CAROL for c in bot.slack.called("views.publish")[published:]),
        what="Carol's Home redrawn",
    )
    await bot.services.background.idle()
    redrawn = [c["user_id"] for c in bot.slack.called("views.publish")[published:]]
    assert redrawn == [CAROL]
    assert listed not in str(last_home(bot, CAROL)) and "Open to everyone" not in str(
        last_home(bot, CAROL)
    )


async def test_a_decision_in_another_process_redraws_the_home_of_members_who_saw_it(
    make_bot: Any,
) -> None:
    """Carol's Home, drawn by one ``serve`` process, listed the request open to her
    channel; Alice decides it through another process, which redraws Carol's Home too."""
    policy = Policy(channel=CHANNEL, users=(ALICE,), anyone_in_channel=True)
    first: Harness = await make_bot(policy)
    value = await first.start(requested_by=BOB)
    first.slack.channels_of.update({CAROL: [CHANNEL], MALLORY: [CHANNEL]})
    listed = "*cleanup* wants to run `delete_files`"
    assert listed in str(await open_home(first, CAROL))
    await first.loops.stop()  # what follows happens in the second process alone
    second: Harness = await make_bot(policy)
    published = len(first.slack.called("views.publish"))
    await second.click(ids.APPROVE, value, user=ALICE)
    await second.finished()
    await first.slack.wait_for(
        lambda: any(c["user_id"] == CAROL for c in first.slack.called("views.publish")[published:]),
        what="Carol's Home redrawn",
    )
    await second.services.background.idle()
    redrawn = [c["user_id"] for c in first.slack.called("views.publish")[published:]]
    assert redrawn == [CAROL]  # Mallory never opened Home
    assert listed not in str(last_home(first, CAROL))
