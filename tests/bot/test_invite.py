"""Inviting the app to a channel that refused its card posts the card at once: Slack's
``member_joined_channel`` event for the app's own bot user retries the outbox entries
waiting for that channel, through the outbox's leases, so each card is posted once."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from fake_slack import BOT_USER
from harness import CAROL, CHANNEL, Harness
from requests_jobs import Jobs, escalated_to_a_refusing_channel

from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler

RANDOM = "C0RANDOM"


def _joined(user: str, channel: str = CHANNEL) -> dict[str, Any]:
    """Slack's ``member_joined_channel`` event, as it sends it."""
    return {
        "type": "member_joined_channel",
        "user": user,
        "channel": channel,
        "channel_type": "C",
        "team": "T0TEST",
        "inviter": CAROL,
    }


def _cards(bot: Harness, channel: str = CHANNEL) -> list[dict[str, Any]]:
    """The cards Slack took in ``channel``."""
    return [p for p in bot.slack.called("chat.postMessage") if p["channel"] == channel]


async def _refused(bot: Harness) -> None:
    """Start a run whose channel refuses the app; return once the requester is told."""
    bot.slack.not_in.add(CHANNEL)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_for(
        lambda: any(
            "could not be posted" in str(p.get("text"))
            for p in bot.slack.called("chat.postMessage")
        ),
        what="the requester told the card was refused",
    )
    await bot.services.background.idle()
    assert _cards(bot) == []
    bot.slack.not_in.discard(CHANNEL)  # the app is invited


async def test_the_app_joining_the_channel_posts_its_refused_card_at_once(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    await _refused(bot)
    # No scheduler tick, and the clock stands still: the outbox would not try yet.
    await bot.event(_joined(BOT_USER))
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 1, what="the card posted on the invite")
    await bot.services.background.idle()
    [card] = _cards(bot)
    value = card["blocks"][-1]["elements"][0]["value"]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.message_ts == bot.message_ts(-1)


async def test_someone_else_joining_the_channel_posts_nothing(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    await _refused(bot)
    await bot.event(_joined("U0DAVE"))
    await bot.services.background.idle()
    assert _cards(bot) == []
    # The app's own join, in another channel, posts nothing here either.
    await bot.event(_joined(BOT_USER, "C0ELSEWHERE"))
    await bot.services.background.idle()
    assert _cards(bot) == []


async def test_a_retried_event_with_the_scheduler_racing_posts_the_card_once(
    make_bot: Any,
) -> None:
    """Slack delivers the event twice (to two processes), while a scheduler whose outbox
    entry fell due drains the outbox: one card."""
    bot: Harness = await make_bot()
    other: Harness = await make_bot()
    await _refused(bot)
    for clock in (bot.clock, other.clock):  # the entry's lease has ended for both
        clock.advance(timedelta(seconds=31))
    await asyncio.gather(
        bot.event(_joined(BOT_USER), event_id="Ev0JOINED"),
        other.event(_joined(BOT_USER), event_id="Ev0JOINED", retry=1),
        Scheduler(other.services).drain_outbox(),
    )
    await bot.slack.wait_for(lambda: len(_cards(bot)) >= 1, what="the card posted")
    await asyncio.gather(bot.services.background.idle(), other.services.background.idle())
    assert len(_cards(bot)) == 1


async def test_the_app_joining_posts_an_escalation_card_that_waited_for_it(jobs: Jobs) -> None:
    jobs, made, _ = await escalated_to_a_refusing_channel(jobs, RANDOM)
    assert _cards(jobs.bot, RANDOM) == []
    jobs.bot.slack.not_in.clear()
    await jobs.bot.event(_joined(BOT_USER, RANDOM))
    await jobs.bot.slack.wait_for(
        lambda: len(_cards(jobs.bot, RANDOM)) == 1, what="the step's card"
    )
    await jobs.bot.services.background.idle()
    _, view = await jobs.get(made["status_url"])
    assert view["escalation_not_posted"] is None and view["escalation_channel"] == RANDOM
