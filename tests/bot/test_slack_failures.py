"""Slack failing under the scheduler and the outbox: a network error, a rate limit or a
refusal delays a reminder, a note or a card; it never stops the loop, nor misplaces
anyone, and what Slack did not take is posted later, once and in order."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from fakes import BAD_GATEWAY, Fault
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy, Reminders
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.notes import post_in_thread, post_mrkdwn, send_queued_notes
from storage.epoch import to_ms
from storage.notes import Note


def _reminders(bot: Harness) -> list[str]:
    posts = bot.slack.called("chat.postMessage")
    return [str(p["text"]) for p in posts if str(p.get("text", "")).startswith("Reminder")]


async def test_a_network_error_on_users_info_does_not_fail_the_schedulers_tick(
    make_bot: Any,
) -> None:
    """A reminder falls due once the approver's cached time zone is stale, while Slack
    cannot be reached: the tick goes on (before, the error ended the scheduler's loop)."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=8),
        reminders=Reminders(every=timedelta(hours=6, minutes=30), limit=1),
    )
    bot: Harness = await make_bot(policy)
    await bot.start(requested_by=CAROL)  # Alice's zone is cached for 6 h

    async def unreachable(**_: Any) -> Any:
        raise aiohttp.ServerDisconnectedError()  # what slack-sdk raises after its retries

    bot.services.client.users_info = unreachable  # type: ignore[method-assign]
    bot.clock.advance(timedelta(hours=6, minutes=30))
    await Scheduler(bot.services).tick()
    [record] = (await bot.services.storage.queries.pending_for_channel(CHANNEL, limit=5)).records
    assert record.state == "pending"


async def test_one_failed_users_info_does_not_put_an_approver_on_utc_for_hours(
    make_bot: Any,
) -> None:
    """users.info is rate-limited once when the card is posted (05:00 UTC, midnight in New
    York). At 10:00 UTC (05:00 in New York) Bob's reminder waits for his working day."""
    policy = Policy(
        channel=CHANNEL,
        users=(BOB,),
        expires_after=timedelta(hours=20),
        reminders=Reminders(every=timedelta(hours=5), limit=2),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = datetime(2026, 11, 23, 5, 0, tzinfo=UTC)
    limited = Fault(
        status=429, headers={"Retry-After": "30"}, body={"ok": False, "error": "ratelimited"}
    )
    bot.slack.faults["users.info"].append(limited)
    await bot.start(requested_by=CAROL)
    assert len(bot.slack.failed) == 1  # Bob's users.info, once

    bot.clock.advance(timedelta(hours=5))
    await Scheduler(bot.services).tick()
    assert _reminders(bot) == []


async def test_a_request_escalated_before_its_first_card_was_posted_gets_both_cards(
    make_bot: Any,
) -> None:
    """Slack is down from the request's creation until past its first step: it escalates
    with no card anywhere. Once Slack is back the outbox posts both cards."""
    nyc, step = "C0NYC", timedelta(hours=2)
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=step,
        on_expiry=Escalate(channel=nyc, users=(BOB,), expires_after=step),
        reminders=None,
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = datetime(2026, 11, 23, 17, 0, tzinfo=UTC)
    bot.slack.down = True
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(step + timedelta(minutes=1))
    await scheduler.tick()
    [record] = (await bot.services.storage.queries.pending_for_channel(CHANNEL, limit=5)).records
    assert record.escalated and record.message_ts is None

    bot.slack.down = False
    for _ in range(3):
        bot.clock.advance(timedelta(minutes=1))
        await scheduler.tick()
    cards = [p["channel"] for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert cards.count(CHANNEL) == 1 and cards.count(nyc) == 1


async def _queued_notes(bot: Harness) -> int:
    storage = bot.services.storage
    return sum(
        [await storage.client.raw.zcard(storage.keys.notes(s)) for s in storage.keys.all_shards]
    )


async def test_how_a_run_ended_is_posted_once_slack_answers_again(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack answers 502 to every post from Alice's approval on: the decision, the tool's
    outcome and how the run ended are queued, and the scheduler posts them, in order and
    once, when Slack is back."""
    bot: Harness = await make_bot()
    notes = bot.services.storage.notes
    queued, later, made = asyncio.Condition(), notes.later, []

    async def later_and_tell(note: Note, *, at: datetime, member: str | None = None) -> None:
        await later(note, at=at, member=member)
        async with queued:
            made.append(note)
            queued.notify_all()

    monkeypatch.setattr(notes, "later", later_and_tell)
    value = await bot.start(requested_by=CAROL)
    bot.slack.down = True
    await bot.click(ids.APPROVE, value, user=ALICE)
    async with queued, asyncio.timeout(5):
        await queued.wait_for(lambda: len(made) == 3)
    assert await _queued_notes(bot) == 3 and bot.thread() == []
    bot.slack.down = False

    scheduler = Scheduler(bot.services)
    await scheduler.tick()
    assert bot.thread() == []  # not due yet
    for _ in range(2):
        bot.clock.advance(timedelta(seconds=31))
        await scheduler.tick()
    # The decision's note is made in the background, so the run's may be made, or
    # queued, first: they are posted in the order they were made.
    texts_made = [note.text for note in sorted(made, key=lambda note: note.id)]
    assert bot.thread() == texts_made
    [decided] = [t for t in texts_made if "Approved by" in t]
    tool, end = [t for t in texts_made if t != decided]
    assert tool.startswith("delete_files:") and end.startswith("Finished:")
    assert await _queued_notes(bot) == 0


async def test_a_reminder_slack_did_not_take_is_sent_later_unless_decided(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=4),
        reminders=Reminders(every=timedelta(hours=1), limit=2),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=1))
    bot.slack.faults["chat.postMessage"].append(BAD_GATEWAY)  # the reminder's post
    scheduler = Scheduler(bot.services)
    await scheduler.tick()
    assert _reminders(bot) == [] and await _queued_notes(bot) == 0  # handed out again later
    bot.clock.advance(timedelta(seconds=31))
    await scheduler.tick()
    assert len(_reminders(bot)) == 1  # the first reminder, once Slack takes it
    bot.slack.faults["chat.postMessage"].append(BAD_GATEWAY)  # the second one's post
    bot.clock.advance(timedelta(hours=1))
    await scheduler.tick()
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    await bot.services.background.idle()
    bot.clock.advance(timedelta(seconds=31))
    await scheduler.tick()
    assert len(_reminders(bot)) == 1  # decided meanwhile: the second is not sent


async def test_a_thread_s_queued_notes_keep_their_order_when_one_fails_again(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    bot.slack.down = True
    for text in ("first", "second"):
        await post_mrkdwn(bot.services, channel=CHANNEL, thread_ts="1.1", text=text)
    bot.slack.down = False
    bot.slack.faults["chat.postMessage"].append(BAD_GATEWAY)  # "first", once more
    scheduler = Scheduler(bot.services)
    for _ in range(2):
        bot.clock.advance(timedelta(seconds=31))
        await scheduler.tick()
    assert [p["text"] for p in bot.slack.called("chat.postMessage")] == ["first", "second"]


async def test_a_note_whose_text_json_cannot_hold_is_queued_all_the_same(
    make_bot: Any,
) -> None:
    """A tool's outcome names a file os.listdir could not decode (a lone surrogate)."""
    bot: Harness = await make_bot()
    bot.slack.down = True
    await post_in_thread(bot.services, channel=CHANNEL, thread_ts="1.1", text="rm \udcff.txt")
    assert await _queued_notes(bot) == 1


async def test_a_card_slack_refuses_is_told_to_its_requester_once(make_bot: Any) -> None:
    """The app is not in the channel: Carol, who asked, learns it in a direct message,
    once, however often the outbox tries again; the card is posted once the app is in."""
    bot: Harness = await make_bot()
    refused = Fault(status=200, body={"ok": False, "error": "not_in_channel"})
    bot.slack.faults["chat.postMessage"].append(refused)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    scheduler = Scheduler(bot.services)
    bot.slack.faults["chat.postMessage"].append(refused)  # the outbox's first try
    for _ in range(2):  # refused, then posted
        bot.clock.advance(timedelta(seconds=31))
        await scheduler.tick()
    assert len(bot.slack.failed) == 2
    [opened] = bot.slack.called("conversations.open")
    assert opened["users"] == CAROL
    told, card = bot.slack.called("chat.postMessage")
    assert told["text"] == (
        f"Your request `delete_files` could not be posted in <#{CHANNEL}>: Slack answered "
        "`not_in_channel`. Invite the app there (`/invite @Signoff`). It is posted once "
        "Slack takes it."
    )
    assert card["channel"] == CHANNEL and card["blocks"]


async def test_a_card_refused_for_another_reason_is_told_without_the_invite_hint(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    refused = Fault(status=200, body={"ok": False, "error": "is_archived"})
    bot.slack.faults["chat.postMessage"].append(refused)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    [told] = bot.slack.called("chat.postMessage")
    assert told["text"] == (
        f"Your request `delete_files` could not be posted in <#{CHANNEL}>: Slack answered "
        "`is_archived`. It is posted once Slack takes it."
    )


async def test_a_reminder_queued_by_the_previous_version_is_not_posted_once_decided(
    make_bot: Any,
) -> None:
    """Upgrade: the previous version queued a reminder Slack did not take as a note
    ``while_pending`` its record; the request is decided since."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    record_id = bot.record_id(value)
    keys, client = bot.services.storage.keys, bot.services.storage.client
    now = bot.clock.now()
    old_note = {
        "id": "note_00000000000000000001_abcd",
        "channel": CHANNEL,
        "thread_ts": None,
        "text": f"Reminder: this request is still waiting for a decision. <@{ALICE}>",
        "until_ms": to_ms(now + timedelta(hours=24)),
        "while_pending": record_id,
    }
    await client.raw.zadd(keys.notes(keys.shard_of(CHANNEL)), {json.dumps(old_note): to_ms(now)})
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    before = len(bot.slack.called("chat.postMessage"))
    bot.clock.advance(timedelta(minutes=1))
    await send_queued_notes(bot.services)
    posted = [p["text"] for p in bot.slack.called("chat.postMessage")[before:]]
    assert not any(t.startswith("Reminder") for t in posted), posted


async def test_a_note_refused_on_its_retry_still_reaches_the_requester(make_bot: Any) -> None:
    """Slack was away when the note was first sent; when it answers, the app is not in
    the channel: the requester is told by DM, as on a first refusal."""
    bot: Harness = await make_bot()
    bot.slack.down = True
    await post_mrkdwn(
        bot.services, channel="C0NOTIN", thread_ts=None, text=f"<@{CAROL}> done", or_tell=CAROL
    )
    bot.slack.down = False
    bot.slack.faults["chat.postMessage"].append(
        Fault(status=200, body={"ok": False, "error": "not_in_channel"})
    )
    bot.clock.advance(timedelta(minutes=1))
    await send_queued_notes(bot.services)
    assert not bot.slack.faults["chat.postMessage"]  # the queued note was tried, and refused
    assert bot.slack.called("conversations.open"), "no DM to the requester"


async def test_a_reminder_waits_for_its_card_instead_of_reminding_of_nothing(
    make_bot: Any,
) -> None:
    """The card is not posted yet (the app is not in the channel) when its reminder falls
    due: no reminder appears in the channel with no card to point at; once the card is
    posted, the reminder follows in its thread."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=8),
        reminders=Reminders(every=timedelta(hours=1), limit=1),
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # 10:00 for Alice in Paris
    bot.slack.not_in.add(CHANNEL)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(timedelta(hours=1))
    await scheduler.tick()
    assert [c for c in bot.slack.failed if c.args.get("text", "").startswith("Rem")] == []

    bot.slack.not_in.clear()  # the app is invited
    for _ in range(2):
        bot.clock.advance(timedelta(minutes=1))
        await scheduler.tick()
    [card] = [c.answer for c in bot.slack.calls if c.args.get("blocks")]
    [reminder] = [p for p in bot.slack.called("chat.postMessage") if p["text"].startswith("Rem")]
    assert reminder["thread_ts"] == card["ts"]
