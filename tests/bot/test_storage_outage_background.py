"""Redis fails under the bot's background work: its loops log the outage once and its end
once, and a card Slack took while Redis failed to record it is recorded, not posted again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from batch_agents import spec as batch_spec
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy
from bot.process.web import operator_app
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import EmbeddedRedis, Storage
from storage.errors import StorageError
from storage.sweeps import POST_LEASE

ONE_RETRY = pytest.mark.parametrize("retries", [1])
"""Enough to reconnect once Redis is back, without 1.2 s of retries for each failed step."""


@pytest.fixture
def storage(own_storage: Storage) -> Storage:
    """The bot's storage is on this module's own Redis, which its tests stop and start again."""
    return own_storage


@ONE_RETRY
async def test_the_loops_log_an_outage_once_and_its_end_once(
    make_bot: Any, server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    bot: Harness = await make_bot(workers=2)
    loops = [*bot.loops.deciders, *bot.loops.workers, *bot.loops.webhook_events]
    consumers = {loop.consumer for loop in loops} | {"webhooks"}
    outage = bot.services.outage
    caplog.set_level(logging.INFO)

    def each_failed_twice() -> bool:
        failing = outage.failing
        return all(failing.get(consumer, 0) >= 2 for consumer in consumers)

    server.stop()
    await _until(each_failed_twice, what="every loop failing twice")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    [line] = errors  # one line for 5 loops' failures, not one per failure
    assert line.startswith("background work cannot use Redis: ") and "after retrying" in line
    web = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await web.start_server()
    try:
        async with bot.http.get(f"http://127.0.0.1:{web.port}/metrics") as answer:
            assert "signoff_background_loops_failing 5" in (await answer.text()).splitlines()
    finally:
        await web.close()

    server.start()
    await _until(lambda: not outage.failing, what="every loop using Redis again")
    [back] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert back.startswith("background work uses Redis again, after ")
    assert await bot.start()  # and the loops work: a run asks, its card is posted


async def _until(holds: Callable[[], bool], *, what: str) -> None:
    """Wait until ``holds()``: the loops retry Redis on their own backoff."""
    try:
        async with asyncio.timeout(60):
            while True:
                if holds():
                    return
                await asyncio.sleep(0.05)  # the loops log nothing more to wait on
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


@ONE_RETRY
async def test_a_card_slack_took_while_redis_failed_to_record_it_is_recorded_not_posted_again(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    """Redis stops just after Slack took the card: once Redis is back, the outbox records
    that card, instead of posting a second one whose twin's buttons would be refused."""
    bot: Harness = await make_bot()
    bot.slack.after["chat.postMessage"] = server.stop
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    with pytest.raises(StorageError):
        await start_run(bot.services, "cleanup", "clean up", place=place)
    [card] = bot.slack.answers("chat.postMessage")

    server.start()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    assert len(bot.slack.called("chat.postMessage")) == 1
    [record] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert (record.channel, record.message_ts) == (card["channel"], card["ts"])
    value = bot.posted()["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 2 file(s)" in await bot.finished()


@ONE_RETRY
async def test_an_escalation_card_redis_failed_to_record_is_recorded_not_posted_again(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    nyc, step = "C0NYC", timedelta(hours=2)
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=step,
        on_expiry=Escalate(channel=nyc, users=(BOB,), expires_after=step),
        reminders=None,
    )
    bot: Harness = await make_bot(policy)
    await bot.start()
    scheduler = Scheduler(bot.services)
    bot.clock.advance(step + timedelta(minutes=1))
    bot.slack.after["chat.postMessage"] = server.stop  # just after the escalation card
    with pytest.raises(StorageError):  # the tick's next sweep
        await scheduler.tick()
    [escalated] = [p for p in bot.slack.answers("chat.postMessage") if p["channel"] == nyc]

    server.start()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    await scheduler.tick()
    cards = [p["channel"] for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert cards == [CHANNEL, nyc]
    [record] = (await storage.queries.pending_for_channel(CHANNEL)).records
    assert (record.escalation_channel, record.escalation_ts) == (nyc, escalated["ts"])


@ONE_RETRY
async def test_a_batch_decided_as_redis_stops_says_its_note_was_not_posted_without_a_traceback(
    make_bot: Any, server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis stops just after "Approve selected" landed and the card was redrawn: the note
    to the requester cannot be claimed, and the log says it was not posted, in one line,
    instead of the click's work failing with a traceback."""
    bot: Harness = await make_bot(spec=batch_spec([]))
    await bot.start(requested_by=CAROL)
    bot.slack.after["chat.update"] = server.stop  # just after the decided card's redraw
    with caplog.at_level(logging.WARNING):
        await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
        await bot.services.background.idle()
    server.start()
    failed = [r.getMessage() for r in caplog.records if r.name == "bot.services.background"]
    assert failed == []
    [said] = [r.getMessage() for r in caplog.records if "calls decided" in r.getMessage()]
    assert "not posted" in said and "Redis" in said


@ONE_RETRY
async def test_a_card_redis_failed_to_record_shows_its_request_decided_before_it_was_recorded(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    """Redis stops just after Slack took the card, and the request expires before the
    outbox tries again: the card Slack has shows that, not buttons nobody can use."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    bot.slack.after["chat.postMessage"] = server.stop
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    with pytest.raises(StorageError):
        await start_run(bot.services, "cleanup", "clean up", place=place)
    [card] = bot.slack.answers("chat.postMessage")

    server.start()
    bot.clock.advance(timedelta(days=1))  # past its expiry
    await Scheduler(bot.services).tick()
    [redrawn] = [u for u in bot.slack.called("chat.update") if u["ts"] == card["ts"]]
    assert "Approve" not in str(redrawn["blocks"]) and redrawn["channel"] == card["channel"]
