"""A request created in this process that falls due before the scheduler's planned tick
wakes it: expired on time, not up to a tick late."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from harness import ALICE, CHANNEL, Harness
from requests_jobs import Jobs

from bot.agents.policy import Policy
from bot.schedule.scheduler import Scheduler


async def _asleep(bot: Harness) -> None:
    """Wait until the scheduler has planned its next tick (at most 5 s)."""
    due_soon = bot.services.due_soon
    deadline = asyncio.get_running_loop().time() + 5
    while due_soon.planned is None:
        assert asyncio.get_running_loop().time() < deadline, "the scheduler never slept"
        await asyncio.sleep(0.01)


async def test_a_request_due_before_the_next_tick_is_expired_on_time(jobs: Jobs) -> None:
    bot = jobs.bot
    scheduler = Scheduler(bot.services, interval=timedelta(minutes=10))
    running = asyncio.create_task(scheduler.run())
    try:
        await _asleep(bot)  # nothing pending: it sleeps its 10 minutes
        status, made = await jobs.ask(approvers=[ALICE], expires_in=1)
        assert status == 201, made
        bot.clock.advance(timedelta(seconds=2))
        await bot.slack.wait_for(
            lambda: any("Expired" in str(u["blocks"]) for u in bot.slack.called("chat.update")),
            within=10,
            what="the card updated as expired",
        )
        _, view = await jobs.get(made["status_url"])
        assert view["status"] == "expired"
    finally:
        scheduler.stop()
        await running


async def test_an_agents_interrupt_due_before_the_next_tick_is_expired_on_time(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(
        Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(seconds=1))
    )
    scheduler = Scheduler(bot.services, interval=timedelta(minutes=10))
    running = asyncio.create_task(scheduler.run())
    try:
        await _asleep(bot)
        value = await bot.start()
        bot.clock.advance(timedelta(seconds=2))
        await bot.slack.wait_for(
            lambda: any("Expired" in str(u["blocks"]) for u in bot.slack.called("chat.update")),
            within=10,
            what="the card updated as expired",
        )
        record = await bot.services.storage.queries.get(bot.record_id(value))
        assert record is not None and record.state == "expired"
    finally:
        scheduler.stop()
        await running
