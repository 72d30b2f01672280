"""A step that lands while another is being drawn or announced: Slack is left showing the
latest state, and nobody is told of an outcome a later step overtook. Each test holds
one step at its exact point (a wrapped storage method) while the other lands."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy, Reminders
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

LEADS = "C0LEADS"


def _headline(update: dict[str, Any]) -> str:
    return str(update["blocks"][0]["text"]["text"])


def _shown(bot: Harness) -> dict[tuple[str, str], dict[str, Any]]:
    """Each posted card as Slack shows it now: its last update, or its post."""
    shown = {
        (post["channel"], answer["ts"]): post
        for post, answer in zip(
            bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage"), strict=True
        )
        if post.get("blocks")
    }
    for update in bot.slack.called("chat.update"):
        shown[(update["channel"], update["ts"])] = update
    return shown


def _offering_buttons(bot: Harness) -> list[str]:
    return [
        _headline(card)
        for card in _shown(bot).values()
        if "actions" in [block["type"] for block in card["blocks"]]
    ]


async def test_a_vote_drawn_after_the_denial_that_followed_it_is_drawn_again(
    make_bot: Any,
) -> None:
    """A quorum of two: Alice's vote is recorded, then Bob's denial is recorded and drawn
    before Alice's redraw of her vote reaches Slack."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    value = await bot.start(requested_by=CAROL)
    store = bot.services.storage.interrupts
    decide = store.decide

    async def denied_before_the_vote_is_drawn(rid: str, user: str, *a: Any, **kw: Any) -> Any:
        outcome = await decide(rid, user, *a, **kw)
        if user == ALICE:
            assert outcome.status == "progress"
            await bot.decide("reject", value, user=BOB)
            await bot.slack.wait_for(
                lambda: any(
                    _headline(u).startswith("Denied") for u in bot.slack.called("chat.update")
                ),
                what="the denial drawn",
            )
        return outcome

    store.decide = denied_before_the_vote_is_drawn  # type: ignore[method-assign]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    await bot.slack.wait_calls("chat.update", 3)  # the denial, the vote, the denial again
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "denied"
    assert _headline(bot.slack.called("chat.update")[-1]).startswith("Denied")
    assert _offering_buttons(bot) == []


async def test_an_approval_while_the_request_escalates_leaves_no_card_asking(
    make_bot: Any,
) -> None:
    """The sweep escalates the request; Alice approves on its card before the escalation
    card is posted. Both cards say approved, and the requester hears of no escalation."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=10),
        on_expiry=Escalate(channel=LEADS, users=(BOB,), expires_after=timedelta(minutes=10)),
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    store = bot.services.storage.interrupts
    expire_due = store.expire_due

    async def approved_meanwhile(now: Any, **kw: Any) -> Any:
        results = await expire_due(now, **kw)
        if results:
            bot.clock.advance(timedelta(seconds=-1))  # Alice clicked just before the sweep
            await bot.click(ids.APPROVE, value, user=ALICE)
            await bot.finished()
            bot.clock.advance(timedelta(seconds=1))
        return results

    store.expire_due = approved_meanwhile  # type: ignore[method-assign]
    bot.clock.advance(timedelta(minutes=10, seconds=1))
    await Scheduler(bot.services).tick()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved"
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert any(channel == LEADS for channel, _ in _shown(bot))  # the escalation card
    assert _offering_buttons(bot) == []
    assert not any(":arrow_up: Escalated" in text for text in bot.thread()), bot.thread()


async def test_a_reminder_that_falls_due_as_the_request_is_approved_is_not_sent(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        reminders=Reminders(every=timedelta(minutes=1), start_hour=0, end_hour=24),
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    store = bot.services.storage.interrupts
    due_reminders = store.due_reminders

    async def approved_meanwhile(now: Any, **kw: Any) -> Any:
        due = await due_reminders(now, **kw)
        if due:
            await bot.click(ids.APPROVE, value, user=ALICE)
            await bot.finished()
        return due

    store.due_reminders = approved_meanwhile  # type: ignore[method-assign]
    bot.clock.advance(timedelta(minutes=1, seconds=1))
    await Scheduler(bot.services).tick()
    assert not any(t.startswith("Reminder:") for t in bot.thread()), bot.thread()
    trail = await bot.services.storage.audit.read(count=100)
    assert "reminded" not in [entry.event for entry in trail]
