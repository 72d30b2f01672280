"""The follow-the-sun ladder, through the real Bolt app, for approvers in Paris, New York
and Tokyo: the card states every step from the start; when a step's time is up the
request goes to the next one (another channel, other people), two steps deep, and at the
end to the policy's safe default; every copy of the card stays in sync."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.blocks import date_token

KENJI = "U0KENJI"
NEW_YORK, TOKYO = "C0NYC", "C0TOKYO"
START = datetime(2026, 11, 23, 17, 0, tzinfo=UTC)  # Paris 18:00, New York 12:00, Tokyo 02:00
STEP = timedelta(hours=2)
LADDER = Policy(
    channel=CHANNEL,
    users=(ALICE,),
    expires_after=STEP,
    on_expiry=(
        Escalate(channel=NEW_YORK, users=(BOB,), expires_after=STEP),
        Escalate(channel=TOKYO, users=(KENJI,), expires_after=STEP),
    ),
    reminders=None,
)


async def _started(make_bot: Any) -> tuple[Harness, str]:
    bot: Harness = await make_bot(LADDER)
    bot.slack.add_user(KENJI, tz="Asia/Tokyo")
    bot.clock.current = START
    return bot, await bot.start(requested_by=CAROL)


def _copies(bot: Harness) -> dict[str, dict[str, Any]]:
    """Each copy of the card as it reads now, by channel."""
    posts = zip(
        bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage"), strict=True
    )
    cards = {a["ts"]: (p["channel"], p) for p, a in posts if p.get("blocks")}
    for update in bot.slack.called("chat.update"):
        if update["ts"] in cards:
            cards[update["ts"]] = (cards[update["ts"]][0], update)
    return {channel: card for channel, card in cards.values()}


async def _clicks_settled(bot: Harness, value: str) -> None:
    """Wait until no acknowledged click on the card waits for its decider (at most 5 s)."""
    storage = bot.services.storage
    waiting = storage.keys.clicks_waiting(bot.record_id(value))
    deadline = asyncio.get_running_loop().time() + 5
    while await storage.client.raw.exists(waiting):
        assert asyncio.get_running_loop().time() < deadline, "a click still waits"
        await asyncio.sleep(0.01)


def _ts(bot: Harness, channel: str) -> str:
    posts = zip(
        bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage"), strict=True
    )
    return next(str(a["ts"]) for p, a in posts if p["channel"] == channel and p.get("blocks"))


async def test_the_ladder_is_shown_climbed_step_by_step_and_ends_in_its_safe_default(
    make_bot: Any,
) -> None:
    bot, value = await _started(make_bot)
    steps = [date_token(START + STEP * n) for n in (1, 2, 3)]
    assert (
        f"If nobody decides by {steps[0]}, it goes to <@{BOB}>; if nobody decides by "
        f"{steps[1]}, it goes to <@{KENJI}>; if nobody decides by {steps[2]}, it is denied"
    ) in str(bot.posted(0)["blocks"])
    await bot.click(ids.APPROVE, value, user=KENJI)  # not his turn yet
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    await _clicks_settled(bot, value)  # a click still waiting would hold the expiry back

    scheduler = Scheduler(bot.services)
    bot.clock.advance(STEP)  # Paris's day is over: New York is asked
    await scheduler.tick()
    assert set(_copies(bot)) == {CHANNEL, NEW_YORK}
    [new_york] = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == NEW_YORK]
    assert f"<@{BOB}>" in new_york["text"] and f"<@{KENJI}>" not in new_york["text"]
    assert f"Escalated to <#{NEW_YORK}>" in str(_copies(bot)[CHANNEL]["blocks"])

    bot.clock.advance(STEP)  # then Tokyo, where the day begins
    await scheduler.tick()
    assert set(_copies(bot)) == {CHANNEL, NEW_YORK, TOKYO}
    [tokyo] = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == TOKYO]
    assert f"<@{KENJI}>" in tokyo["text"]
    assert all(f"Escalated to <#{TOKYO}>" in str(c["blocks"]) for c in _copies(bot).values())

    bot.clock.advance(STEP)  # nobody decided: the safe default
    await scheduler.tick()
    await bot.finished()
    for channel, card in _copies(bot).items():
        assert card["blocks"][0]["text"]["text"] == "Expired, not approved: delete_files", channel
        assert f"Escalated to <#{TOKYO}>" in str(card["blocks"]), channel  # where it went
    assert bot.tool_log.calls == []


async def test_a_decision_on_any_rung_updates_every_copy(make_bot: Any) -> None:
    bot, value = await _started(make_bot)
    scheduler = Scheduler(bot.services)
    for _ in range(2):
        bot.clock.advance(STEP)
        await scheduler.tick()
    # Bob decides from New York's card, a step behind the latest: still his to decide.
    await bot.click(ids.APPROVE, value, user=BOB, channel=NEW_YORK, message_ts=_ts(bot, NEW_YORK))
    await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    # The copies are redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_for(
        lambda: all(f"by <@{BOB}>" in str(c["blocks"]) for c in _copies(bot).values()),
        what="every copy redrawn",
    )
    copies = _copies(bot)
    assert set(copies) == {CHANNEL, NEW_YORK, TOKYO}
    for channel, card in copies.items():
        assert card["blocks"][0]["text"]["text"] == "Approved: delete_files", channel
        assert f"Approved by <@{BOB}>" in str(card["blocks"]), channel


async def test_a_new_card_notifies_the_approvers_inside_their_working_hours(
    make_bot: Any,
) -> None:
    everyone = Policy(channel=CHANNEL, users=(ALICE, BOB, KENJI), reminders=None)
    bot: Harness = await make_bot(everyone)
    bot.slack.add_user(KENJI, tz="Asia/Tokyo")
    bot.clock.current = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)  # Paris 03:00, NY 21:00
    await bot.start(requested_by=CAROL)
    first = bot.posted(0)["text"]
    assert f"<@{KENJI}>" in first  # 11:00 in Tokyo
    assert f"<@{ALICE}>" not in first and f"<@{BOB}>" not in first

    bot.clock.current = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)  # Paris 14:00, NY 08:00
    await bot.start(requested_by=CAROL)
    second = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")][-1]["text"]
    assert f"<@{ALICE}>" in second
    assert f"<@{BOB}>" not in second and f"<@{KENJI}>" not in second  # 22:00 in Tokyo


async def test_a_decision_held_on_an_earlier_steps_card_is_undone_there(make_bot: Any) -> None:
    """Earlier steps' cards still decide, so their Undo works too."""
    bot: Harness = await make_bot(replace(LADDER, undo_window=timedelta(seconds=60)))
    bot.slack.add_user(KENJI, tz="Asia/Tokyo")
    value = await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)
    for _ in range(2):  # up to Tokyo
        bot.clock.advance(STEP)
        await scheduler.tick()
    new_york = _ts(bot, NEW_YORK)
    await bot.click(ids.APPROVE, value, user=BOB, channel=NEW_YORK, message_ts=new_york)
    # The click is decided after its ack: the redrawn card says when it is held.
    await bot.slack.wait_for(
        lambda: any(
            "not yet final" in str(u.get("blocks")) for u in bot.slack.called("chat.update")
        ),
        what="the held approval",
    )
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.held is not None
    await bot.click(ids.UNDO, value, user=BOB, channel=NEW_YORK, message_ts=new_york)
    await bot.slack.wait_for(
        lambda: any("undid" in str(p.get("text")) for p in bot.slack.called("chat.postMessage")),
        what="the undo said in the thread",
    )
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.held is None
    assert bot.slack.called("chat.postEphemeral") == []


async def test_an_escalation_card_slack_did_not_take_is_posted_once_it_is_back(
    make_bot: Any,
) -> None:
    bot, value = await _started(make_bot)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(STEP)
    bot.slack.down = True
    await scheduler.tick()  # escalated to New York, but its card is not posted
    bot.slack.down = False
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.escalated and record.escalation_ts is None
    for _ in range(2):
        bot.clock.advance(timedelta(minutes=1))
        await scheduler.tick()
    cards = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == NEW_YORK]
    assert len(cards) == 1 and f"<@{BOB}>" in cards[0]["text"]
    await bot.click(ids.APPROVE, value, user=BOB, channel=NEW_YORK, message_ts=_ts(bot, NEW_YORK))
    await bot.finished()
    assert bot.tool_log.calls != []


async def test_a_step_open_to_its_channel_takes_clicks_on_its_own_card_only(
    make_bot: Any,
) -> None:
    """Step 1 asks Bob in #nyc; step 2 anyone in #tokyo. Once step 2 is reached, Mallory,
    who is in #nyc and named nowhere, is refused on the #nyc card (though its Full details
    open for her); in #tokyo she decides."""
    nyc, tokyo, mallory = "C0NYC", "C0TOKYO", "U0MALLORY"
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=STEP,
        reminders=None,
        on_expiry=(
            Escalate(channel=nyc, users=(BOB,), expires_after=STEP),
            Escalate(channel=tokyo, anyone_in_channel=True, expires_after=STEP),
        ),
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    for _ in range(2):
        bot.clock.advance(STEP)
        await Scheduler(bot.services).tick()
    cards = {
        post["channel"]: answer["ts"]
        for post, answer in zip(
            bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage"), strict=True
        )
        if post.get("blocks")
    }
    await bot.click(ids.APPROVE, value, user=mallory, channel=nyc, message_ts=cards[nyc])
    await bot.slack.wait_calls("chat.postEphemeral")
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"
    # Full details decides nothing: it shows her the whole card there, as to anyone.
    await bot.click(ids.FULL_ARGS, value, user=mallory, channel=nyc, message_ts=cards[nyc])
    await bot.slack.wait_calls("views.open")
    assert len(bot.slack.called("chat.postEphemeral")) == 1
    await bot.click(ids.APPROVE, value, user=mallory, channel=tokyo, message_ts=cards[tokyo])
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and (record.state, record.decided_by) == ("approved", mallory)


async def test_an_earlier_steps_card_opens_the_deny_form_too(make_bot: Any) -> None:
    """Earlier steps' cards still decide: Deny on one opens its form, like Approve there."""
    bot, value = await _started(make_bot)
    scheduler = Scheduler(bot.services)
    for _ in range(2):  # up to Tokyo
        bot.clock.advance(STEP)
        await scheduler.tick()
    await bot.click(ids.DENY, value, user=BOB, channel=NEW_YORK, message_ts=_ts(bot, NEW_YORK))
    await bot.slack.wait_calls("views.open")
    assert bot.slack.called("chat.postEphemeral") == []


async def test_a_step_naming_an_approver_again_lists_each_person_once(make_bot: Any) -> None:
    """Bob's step also names Alice, already an approver: "Who may approve" names her once."""
    policy = replace(
        LADDER, on_expiry=(Escalate(channel=NEW_YORK, users=(BOB, ALICE), expires_after=STEP),)
    )
    bot: Harness = await make_bot(policy)
    bot.clock.current = START
    await bot.start(requested_by=CAROL)
    bot.clock.advance(STEP)
    await Scheduler(bot.services).tick()
    for channel, card in _copies(bot).items():
        who = re.search(r"Who may approve: ([^|\n']*)", str(card["blocks"]))
        assert who is not None, channel
        assert who.group(1).split(", ") == [
            f"<@{ALICE}>",
            f"<@{BOB}>",
            "not the requester",
        ], channel
