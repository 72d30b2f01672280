"""Expiry, reminders in each approver's working hours, and the outbox (issue 4, tests 8, 10)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fakes import Fault
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Escalate, Policy, Reminders
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule import scheduler as scheduler_module
from bot.schedule.scheduler import Scheduler
from bot.ui import ids, posting
from storage.epoch import to_ms

# A Monday: 12:00 UTC is 13:00 in Paris (Alice) and 07:00 in New York (Bob).
NOON_UTC = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _reminders(bot: Harness) -> list[str]:
    posts = bot.slack.called("chat.postMessage")
    return [str(p["text"]) for p in posts if str(p.get("text", "")).startswith("Reminder")]


async def test_reminders_mention_only_approvers_inside_their_working_hours(make_bot: Any) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE, BOB),
        expires_after=timedelta(hours=4),
        reminders=Reminders(every=timedelta(hours=1), limit=3),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = NOON_UTC
    await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)

    await scheduler.tick()
    assert _reminders(bot) == []  # nothing due yet

    bot.clock.advance(timedelta(hours=1))  # 13:00 UTC: Paris 14:00, New York 08:00
    await scheduler.tick()
    first = _reminders(bot)
    assert len(first) == 1 and f"<@{ALICE}>" in first[0] and f"<@{BOB}>" not in first[0]
    reminder = next(p for p in bot.slack.called("chat.postMessage") if p["text"] == first[0])
    assert reminder["thread_ts"] == bot.message_ts()

    bot.clock.advance(timedelta(hours=1))  # 14:00 UTC: Paris 15:00, New York 09:00
    await scheduler.tick()
    second = _reminders(bot)[-1]
    assert f"<@{ALICE}>" in second and f"<@{BOB}>" in second


async def test_reminders_keep_the_policys_own_working_hours(make_bot: Any) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE, BOB),
        reminders=Reminders(every=timedelta(hours=1), start_hour=7, end_hour=10, limit=2),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = NOON_UTC
    await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)

    bot.clock.advance(timedelta(hours=1))  # 13:00 UTC: Paris 14:00 (off), New York 08:00 (on)
    await scheduler.tick()
    [first] = _reminders(bot)
    assert f"<@{BOB}>" in first and f"<@{ALICE}>" not in first


async def test_a_reminder_due_while_everyone_is_off_hours_waits_for_the_first_workday(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE, BOB),
        reminders=Reminders(every=timedelta(hours=1), limit=2),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)  # Paris 04:00, New York 22:00
    await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(timedelta(hours=1))
    await scheduler.tick()
    assert _reminders(bot) == []

    bot.clock.current = datetime(2026, 11, 23, 7, 59, tzinfo=UTC)
    await scheduler.tick()
    assert _reminders(bot) == []

    bot.clock.current = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)  # 09:00 in Paris
    await scheduler.tick()
    await scheduler.tick()
    [first] = _reminders(bot)
    assert f"<@{ALICE}>" in first and f"<@{BOB}>" not in first

    bot.clock.advance(timedelta(minutes=59))  # the next keeps its hour of spacing
    await scheduler.tick()
    assert len(_reminders(bot)) == 1
    bot.clock.advance(timedelta(minutes=1))
    await scheduler.tick()
    assert len(_reminders(bot)) == 2


async def test_expiry_updates_the_message_honestly_and_the_tool_never_runs(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(minutes=30))
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(timedelta(minutes=29))
    await scheduler.tick()
    assert bot.slack.called("chat.update") == []

    bot.clock.advance(timedelta(minutes=2))
    await scheduler.tick()
    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"].startswith("Expired, not approved")
    assert "actions" not in [b["type"] for b in update["blocks"]]
    [verdict, *_] = next(b for b in update["blocks"] if b["type"] == "context")["elements"]
    assert "by <@" not in verdict["text"]  # nobody decided it
    await bot.finished()
    assert bot.tool_log.calls == []
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "expired"


async def test_rate_limit_then_server_error_then_ok_posts_the_interrupt_once(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    bot.slack.faults["chat.postMessage"].extend(
        [
            Fault(
                status=429, headers={"Retry-After": "0"}, body={"ok": False, "error": "ratelimited"}
            ),
            Fault(status=500),
        ]
    )
    await bot.start()
    assert len(bot.slack.failed) == 2
    assert len(bot.slack.called("chat.postMessage")) == 1
    assert await Scheduler(bot.services).drain_outbox() == 0
    assert len(bot.slack.called("chat.postMessage")) == 1


async def test_a_long_rate_limit_hands_the_post_to_the_outbox_once_slack_allows(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    limited = Fault(
        status=429, headers={"Retry-After": "40"}, body={"ok": False, "error": "ratelimited"}
    )
    bot.slack.faults["chat.postMessage"].append(limited)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)  # not 40 s: no sleep
    assert len(bot.slack.failed) == 1 and bot.slack.called("chat.postMessage") == []
    scheduler = Scheduler(bot.services)

    bot.clock.advance(timedelta(seconds=31))  # past the creator's lease, not Slack's 40 s
    assert await scheduler.drain_outbox() == 0
    bot.clock.advance(timedelta(seconds=10))
    assert await scheduler.drain_outbox() == 1
    assert await scheduler.drain_outbox() == 0
    assert len(bot.slack.called("chat.postMessage")) == 1


async def test_interrupt_waits_in_the_outbox_while_slack_is_down(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    bot.slack.down = True
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    assert bot.slack.called("chat.postMessage") == []
    scheduler = Scheduler(bot.services)
    bot.clock.advance(timedelta(seconds=31))  # past the creator's lease: the outbox hands it out
    await scheduler.tick()
    assert bot.slack.called("chat.postMessage") == []

    bot.slack.down = False
    bot.clock.advance(timedelta(minutes=1))  # past the failed scheduler's lease
    assert await scheduler.drain_outbox() == 1
    assert await scheduler.drain_outbox() == 0
    assert len(bot.slack.called("chat.postMessage")) == 1
    value = bot.posted()["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    assert len(bot.tool_log.calls) == 1


async def test_a_reminder_does_not_ask_the_requester_to_decide_their_own_request(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE, CAROL),
        expires_after=timedelta(hours=4),
        reminders=Reminders(every=timedelta(hours=1), limit=3),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = NOON_UTC
    await bot.start(requested_by=CAROL)
    assert f"<@{CAROL}>" not in bot.posted(0)["text"]  # the post leaves the requester out
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services).tick()
    [reminder] = _reminders(bot)
    assert f"<@{ALICE}>" in reminder
    assert f"<@{CAROL}>" not in reminder, reminder  # hers to ask, not to decide


async def test_a_reminder_does_not_ask_the_stand_in_of_someone_who_voted(make_bot: Any) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE, BOB),
        min_approvals=2,
        expires_after=timedelta(hours=4),
        reminders=Reminders(every=timedelta(hours=1), limit=3),
    )
    bot: Harness = await make_bot(policy)
    bot.slack.add_user(MALLORY, tz="UTC")
    bot.slack.add_user(BOB, tz="UTC")
    bot.clock.current = NOON_UTC
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{MALLORY}|mallory>", user=ALICE)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services).tick()
    [reminder] = _reminders(bot)
    assert f"<@{BOB}>" in reminder
    assert f"<@{MALLORY}>" not in reminder, reminder  # one voice with Alice: already counted


async def test_an_escalation_card_does_not_ping_the_requester(make_bot: Any) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=2),
        on_expiry=Escalate(channel="C0LEADS", users=(BOB, CAROL)),
        reminders=None,
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = NOON_UTC
    await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=2, minutes=1))
    await Scheduler(bot.services).tick()
    await bot.slack.wait_for(
        lambda: any(p["channel"] == "C0LEADS" for p in bot.slack.called("chat.postMessage")),
        what="escalation card",
    )
    card = next(p for p in bot.slack.called("chat.postMessage") if p["channel"] == "C0LEADS")
    assert f"<@{CAROL}>" not in card["text"], card["text"]


TO_LEADS = Policy(
    channel=CHANNEL,
    users=(ALICE,),
    expires_after=timedelta(hours=2),
    on_expiry=Escalate(channel="C0LEADS", users=(BOB,), expires_after=timedelta(hours=4)),
    reminders=None,
)
"""Escalated to #leads (Bob) when Alice has not decided in two hours."""


async def test_an_escalation_swept_by_a_scheduler_that_died_is_posted_by_another(
    make_bot: Any,
) -> None:
    """The sweep took the step in Redis, then its process died before posting the card."""
    bot: Harness = await make_bot(TO_LEADS)
    await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=2, minutes=1))
    [taken] = await bot.services.storage.interrupts.expire_due(bot.clock.now())
    assert taken.outcome == "escalated"  # and nothing posted it
    survivor = Scheduler(bot.services)
    await survivor.tick()
    assert [p for p in bot.slack.called("chat.postMessage") if p["channel"] == "C0LEADS"] == []
    bot.clock.advance(timedelta(minutes=1))  # the dead sweeper's time to post it is over
    await survivor.tick()
    [card] = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == "C0LEADS"]
    assert card["text"].startswith("Escalated, not decided in time")
    bot.clock.advance(timedelta(minutes=5))
    await survivor.tick()  # posted once
    assert len([p for p in bot.slack.called("chat.postMessage") if p["channel"] == "C0LEADS"]) == 1


async def test_a_reminder_slack_did_not_take_waits_for_working_hours_again(
    make_bot: Any,
) -> None:
    """Slack failed at 17:30 in Paris; it answers again at 03:00: no reminder then, but at
    the start of Alice's next working day."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),  # Europe/Paris
        expires_after=timedelta(hours=48),
        reminders=Reminders(every=timedelta(hours=1), limit=1),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = datetime(2026, 11, 23, 15, 30, tzinfo=UTC)  # Monday, 16:30 in Paris
    await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(timedelta(hours=1))  # 17:30 in Paris
    bot.slack.down = True
    await scheduler.tick()
    bot.slack.down = False
    bot.clock.current = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)  # 03:00 in Paris
    await scheduler.tick()
    assert _reminders(bot) == []
    bot.clock.current = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)  # 09:00 in Paris
    await scheduler.tick()
    [reminder] = _reminders(bot)
    assert f"<@{ALICE}>" in reminder


async def test_an_escalation_card_slow_to_post_is_held_not_posted_again(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the sweeper's post of the step's card is under way (a rate limit slept out),
    its outbox entry is held, so another scheduler does not post it too."""
    monkeypatch.setattr(posting, "POST_LEASE", timedelta(seconds=0.3))  # held every 0.1 s
    bot: Harness = await make_bot(TO_LEADS)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=2, minutes=1))
    client, posting_it, release = bot.services.client, asyncio.Event(), asyncio.Event()
    post = client.chat_postMessage

    async def slow(**kwargs: Any) -> Any:
        if kwargs.get("channel") == "C0LEADS":
            posting_it.set()
            await release.wait()
        return await post(**kwargs)

    client.chat_postMessage = slow  # type: ignore[method-assign]
    sweeper = asyncio.create_task(Scheduler(bot.services).tick())
    await asyncio.wait_for(posting_it.wait(), 10)
    storage = bot.services.storage
    outbox = storage.keys.outbox(storage.keys.shard_of_record(bot.record_id(value)))
    bot.clock.advance(timedelta(minutes=1))  # past the step's time to be posted by its sweeper

    async def held() -> bool:
        score = await storage.client.raw.zscore(outbox, bot.record_id(value))
        return score is not None and score > to_ms(bot.clock.now())

    async with asyncio.timeout(10):
        while True:
            if await held():
                break
            await asyncio.sleep(0.02)  # the holder renews on its own clock: poll Redis
    await Scheduler(bot.services).tick()  # another process's scheduler
    release.set()
    await sweeper
    leads = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == "C0LEADS"]
    assert len(leads) == 1


async def test_the_stream_consumers_of_stopped_processes_are_removed_hourly(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot()
    monkeypatch.setattr(scheduler_module, "STOPPED_CONSUMER", timedelta(0))  # idle "long enough"
    storage = bot.services.storage
    group = storage.resume.shard_groups[0]

    async def consumers() -> list[str]:
        found = await storage.client.raw.xinfo_consumers(group.key, group.group)
        return [str(c["name"]) for c in found]

    await group.read("a-stopped-process-0", count=1, block=None)
    scheduler = Scheduler(bot.services)
    await scheduler.tick()
    assert "a-stopped-process-0" not in await consumers()

    await group.read("another-stopped-process-0", count=1, block=None)
    bot.clock.advance(timedelta(minutes=59))
    await scheduler.tick()
    assert "another-stopped-process-0" in await consumers()  # looked again only hourly
    bot.clock.advance(timedelta(minutes=1))
    await scheduler.tick()
    assert "another-stopped-process-0" not in await consumers()
