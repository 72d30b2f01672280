"""The person who started a run hears what became of it, once per event: in the run's
thread when they asked there, else in a direct message with a link to the card."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import home_click_payload
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

ELSEWHERE = "C0DEV"


def _mentions(bot: Harness, user: str) -> list[str]:
    """Texts of the bot's posts that mention ``user``."""
    return [
        str(p["text"])
        for p in bot.slack.called("chat.postMessage")
        if f"<@{user}>" in str(p.get("text"))
    ]


async def test_the_requester_is_mentioned_in_the_thread_once_on_the_decision_and_at_the_end(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    assert _mentions(bot, CAROL) == []
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.click(ids.APPROVE, value, user=ALICE)  # a double click is told nothing new
    final = await bot.finished()
    assert final.endswith(f"cc <@{CAROL}>")
    await bot.settled()  # the decision's note is posted after the click is decided
    decided = [t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]
    assert len(decided) == 1 and f"Approved by <@{ALICE}>" in decided[0]
    assert "`delete_files`" in decided[0]


async def test_a_requester_who_asked_elsewhere_gets_direct_messages_with_a_link(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    place = Place(channel=ELSEWHERE, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_calls("chat.postMessage")
    card = bot.posted()
    assert card["channel"] == CHANNEL  # the policy's channel, not where Carol asked
    value = card["blocks"][-1]["elements"][0]["value"]

    status, _ = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not today")
    assert status == 200

    def direct() -> list[dict[str, Any]]:
        return [p for p in bot.slack.called("chat.postMessage") if p["channel"].startswith("D")]

    await bot.slack.wait_for(lambda: len(direct()) == 2, what="two DMs to the requester")
    assert {c["users"] for c in bot.slack.called("conversations.open")} == {CAROL}
    # The decision's note is posted in the background, so it may come after the run's end.
    [denied] = [p for p in direct() if "Denied by" in p["text"]]
    [finished] = [p for p in direct() if p["text"].startswith("Finished")]
    assert f"Denied by <@{BOB}>" in denied["text"] and "|Open>" in denied["text"]
    assert "|Open>" in finished["text"]
    # Nothing in the card's thread mentions her: she is not there.
    assert not any(t.startswith(f"<@{CAROL}>") or "cc <@" in t for t in bot.thread())


async def test_the_requester_hears_of_an_escalation_and_then_of_the_expiry(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(users=(BOB,), expires_after=timedelta(minutes=30)),
    )
    bot: Harness = await make_bot(policy)
    await bot.start(requested_by=CAROL)
    scheduler = Scheduler(bot.services)
    bot.clock.advance(timedelta(minutes=31))
    await scheduler.tick()
    [escalated] = [t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]
    assert "Escalated in this thread" in escalated

    bot.clock.advance(timedelta(minutes=31))
    await scheduler.tick()
    told = [t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]
    assert len(told) == 2 and "Expired" in told[1]
    await scheduler.tick()  # a later sweep tells nobody again
    assert len([t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]) == 2


async def test_nobody_is_told_of_their_own_decision(make_bot: Any) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(CAROL,), self_approval=True))
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=CAROL)
    await bot.finished()
    assert not any(t.startswith(f"<@{CAROL}>") for t in bot.thread())


async def test_a_requester_whose_channel_refuses_the_app_hears_by_direct_message(
    make_bot: Any,
) -> None:
    """The app is not in the run's channel: its card waits in the outbox, an approver
    decides from App Home, and the requester learns the decision and the end by DM."""
    bot: Harness = await make_bot()
    bot.slack.not_in.add(CHANNEL)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.event({"type": "app_home_opened", "user": ALICE, "tab": "home"})
    await bot.slack.wait_calls("views.publish")
    home = bot.slack.called("views.publish")[-1]["view"]["blocks"]
    [value] = [
        e["value"]
        for b in home
        for e in b.get("elements") or []
        if e.get("action_id") == ids.HOME_APPROVE
    ]
    await bot.send(home_click_payload(user=ALICE, action_id=ids.HOME_APPROVE, value=value))

    def told() -> list[str]:  # anywhere but the channel that refuses the app
        posts = bot.slack.called("chat.postMessage")
        return [str(p["text"]) for p in posts if p["channel"] != CHANNEL]

    await bot.slack.wait_for(lambda: any("Finished" in t for t in told()), what="the end by DM")
    assert any(f"Approved by <@{ALICE}>" in t for t in told())
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
