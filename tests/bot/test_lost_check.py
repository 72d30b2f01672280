"""A pending request whose record Redis lost is found by the scheduler's periodic check,
not only once its time is up: a job that waits only on its webhook hears ``request.lost``
within minutes, once, with several schedulers running; what is intact is left alone."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

import batch_agents
import pytest
from harness import ALICE, CAROL, Harness
from requests_jobs import Jobs
from webhook_receiver import Hooked

from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.api.request_records import REQUESTS_PATH
from bot.schedule.lost_check import LOST_CHECK_EVERY
from bot.schedule.scheduler import Scheduler
from storage.requests import request_record_id


async def _lose(bot: Harness, record_id: str) -> None:
    """Delete the record's key, as an eviction does."""
    storage = bot.services.storage
    assert await storage.client.raw.delete(storage.keys.record(record_id)) == 1


async def _two_schedulers(bot: Harness) -> None:
    """Two schedulers pass at once, the clock where it is."""
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())


async def _lost_entries(bot: Harness) -> list[Any]:
    return [e for e in await bot.services.storage.audit.read(count=100) if e.event == "lost"]


async def test_a_lost_request_reaches_its_webhook_long_before_its_expiry_once(
    hooked: Hooked,
) -> None:
    hooked.receiver.status = 200
    bot = hooked.bot
    kept = await hooked.ask(title="Kept")
    made = await hooked.ask()
    assert datetime.fromisoformat(made["expires_at"]) - bot.clock.now() > timedelta(hours=12)
    await _lose(bot, request_record_id(made["id"]))
    await _two_schedulers(bot)

    await hooked.got(1)
    await hooked.settled("done")
    [sent] = hooked.receiver.taken().values()
    assert sent["event"] == "request.lost" and sent["request"]["id"] == made["id"], sent
    assert sent["request"]["status"] == "lost", sent
    [entry] = await _lost_entries(bot)
    assert entry.record_id == request_record_id(made["id"])
    lost_card = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts(1)]
    assert "can no longer be decided" in str(lost_card[-1]["blocks"]), lost_card

    # The request left intact waits on, untouched; later checks find nothing more.
    bot.clock.advance(LOST_CHECK_EVERY)
    await _two_schedulers(bot)
    assert len(await _lost_entries(bot)) == 1
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.get(f"{hooked.base}{REQUESTS_PATH}/{kept['id']}", headers=headers) as r:
        view = await r.json()
    assert r.status == 200 and view["status"] == "pending", view
    assert not [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts(0)]
    record = await bot.services.storage.queries.get(request_record_id(kept["id"]))
    assert record is not None and record.state == "pending"
    assert len(hooked.receiver.got) == 1, "delivered once"


async def test_an_agent_run_whose_request_was_lost_ends_long_before_its_expiry(
    make_bot: Any,
) -> None:
    files = ["/tmp/a", "/tmp/b"]
    bot: Harness = await make_bot(
        spec=batch_agents.spec([], files, batch=False, expires_after=timedelta(days=1))
    )
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("chat.postMessage")) == 2, what="both cards"
    )
    first, second = (
        bot.record_id(p["blocks"][-1]["elements"][0]["value"])
        for p in bot.slack.called("chat.postMessage")
    )
    await _lose(bot, first)
    await _two_schedulers(bot)

    [entry] = await _lost_entries(bot)
    assert entry.record_id == first
    other = await bot.services.storage.queries.get(second)
    assert other is not None and other.state == "cancelled"
    stopped = [
        p for p in bot.slack.called("chat.postMessage") if str(p.get("text")).startswith("Stopped")
    ]
    assert len(stopped) == 1 and first in str(stopped[0]["text"]), stopped


async def test_a_scheduler_checks_again_only_once_the_period_is_over(jobs: Jobs) -> None:
    """The check runs with a scheduler's first pass, then once every ``LOST_CHECK_EVERY``:
    a loss after a check is found by the first pass after the period, not by every tick."""
    bot = jobs.bot
    status, made = await jobs.ask()
    assert status == 201
    scheduler = Scheduler(bot.services)
    await scheduler.tick()
    await _lose(bot, request_record_id(made["id"]))
    bot.clock.advance(LOST_CHECK_EVERY - timedelta(seconds=1))
    await scheduler.tick()
    assert await _lost_entries(bot) == []
    bot.clock.advance(timedelta(seconds=1))
    await scheduler.tick()
    [entry] = await _lost_entries(bot)
    assert entry.record_id == request_record_id(made["id"])


def _unbuildable(store: SessionStore) -> Any:
    raise KeyError("OPENAI_API_KEY")  # as a build lacking its model's API key fails


async def test_a_lost_request_of_an_agent_whose_build_fails_leaves_the_scheduler_running(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The scheduler that finds the loss runs where the agent's build fails (a key that
    process lacks): the run cannot be ended there, which the log says, and the scheduler
    goes on expiring, reminding and posting instead of stopping for good."""
    bot: Harness = await make_bot()
    record_id = bot.record_id(await bot.start(requested_by=CAROL))
    await _lose(bot, record_id)
    elsewhere: Harness = await make_bot(
        spec=AgentSpec(name="cleanup", build=_unbuildable, policy=Policy(users=(ALICE,)))
    )
    caplog.set_level(logging.ERROR)
    scheduler = Scheduler(elsewhere.services, interval=timedelta(milliseconds=10))
    running = asyncio.create_task(scheduler.run())
    try:
        async with asyncio.timeout(10):
            while True:
                if running.done() or "was not ended" in caplog.text:
                    break
                await asyncio.sleep(0.01)  # the scheduler's first pass finds the loss
        assert not running.done(), running
    finally:
        scheduler.stop()
        await asyncio.wait_for(running, 10)
    [logged] = [r for r in caplog.records if "was not ended" in r.getMessage()]
    assert "build() raised KeyError" in logged.getMessage(), logged.getMessage()
    [entry] = await _lost_entries(bot)
    assert entry.record_id == record_id
    lost_card = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()]
    assert "can no longer be decided" in str(lost_card[-1]["blocks"]), lost_card
