"""An Undo near the request's deadline: undone past it, a request is not approved by default,
and says its time is up; a denial taken back leaves the default its card said."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, Harness, card_now
from undo_cards import WINDOW, headline

from bot.agents.policy import Policy
from bot.decisions.clicks import made_final
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

LOW_RISK = Policy(
    channel=CHANNEL,
    users=(ALICE, BOB),
    expires_after=timedelta(minutes=30),
    if_nobody_decides="approve",
    undo_window=WINDOW,
    reminders=None,
)
"""Approved by default when nobody decides within 30 minutes; decisions wait a minute."""


async def test_an_approval_undone_past_the_deadline_is_not_approved_by_default(
    make_bot: Any,
) -> None:
    """Someone took the approval back: its expiry, seconds later, is no approval either."""
    bot: Harness = await make_bot(LOW_RISK)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(minutes=29, seconds=30))
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(lambda: headline(bot) == "Approved, not yet final: delete_files")
    bot.clock.advance(timedelta(seconds=45))  # past the deadline, inside the undo window
    await bot.click(ids.UNDO, value, user=BOB)
    await bot.slack.wait_for(lambda: headline(bot) == "Approval needed: delete_files")
    assert "it is denied" in str(card_now(bot)["blocks"])  # no longer "approved by default"
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.services.background.idle()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "expired"
    assert bot.tool_log.calls == []
    [expired] = [e for e in await bot.services.storage.audit.read() if e.event == "expired"]
    assert expired.detail == "not approved by default: an approval was undone"


async def test_a_denial_taken_back_leaves_the_low_risk_default_as_the_card_said(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(LOW_RISK)
    value = await bot.start(requested_by=CAROL)
    status, _ = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="misclick")
    assert status == 200
    await bot.slack.wait_for(lambda: "not yet final" in str(card_now(bot)["blocks"]), what="held")
    await bot.click(ids.UNDO, value, user=ALICE)  # Alice takes her own denial back at once
    await bot.slack.wait_for(lambda: headline(bot) == "Approval needed: delete_files")
    card = str(card_now(bot)["blocks"])
    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.services.background.idle()
    audit = [(e.event, e.detail) for e in await bot.services.storage.audit.read(count=100)]
    expired = [d for e, d in audit if e == "expired"]
    assert expired != ["not approved by default: an approval was undone"], audit  # none was
    assert "it is approved by default" in card, card


async def test_an_undo_past_the_deadline_says_the_time_is_up_not_that_it_waits(
    make_bot: Any,
) -> None:
    """Undone after its deadline, the request waits for nobody: its expiry comes with the
    next sweep, and the card and the thread say so rather than that it waits again."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE, BOB),
        expires_after=timedelta(minutes=30),
        undo_window=WINDOW,
        reminders=None,
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(minutes=29, seconds=30))
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(lambda: headline(bot) == "Approved, not yet final: delete_files")
    bot.clock.advance(timedelta(seconds=45))  # past the deadline, inside the undo window
    await bot.click(ids.UNDO, value, user=BOB)
    await bot.slack.wait_for(
        lambda: any("undid the decision" in t for t in bot.thread()), what="the undo's note"
    )
    note = next(t for t in bot.thread() if "undid the decision" in t)
    assert "waits for a decision again" not in note, note
    assert "its time is up, so it is denied" in note, note
    card = str(card_now(bot)["blocks"])
    assert "waits for a decision again" not in card
    assert "its time is up, so it is denied" in card
    await Scheduler(bot.services, made_final=made_final).tick()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "expired"
