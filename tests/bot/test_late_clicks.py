"""A click after the card's deadline, before the expiry sweep stored what the deadline
does: the click stores that expiry itself (once, whoever comes first), so what the
clicker is told has happened (an Approve from App Home too); a click made in time and
still waiting is decided first."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from fakes import home_click_payload
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Escalate, Policy
from bot.decisions import clicks
from bot.decisions.clicks import made_final
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage import Storage
from storage.clicks import ClickEntry

WAIT = timedelta(minutes=30)
ESCALATES = Policy(
    channel=CHANNEL,
    users=(ALICE, BOB),
    expires_after=WAIT,
    on_expiry=Escalate(users=(MALLORY,), expires_after=WAIT),
    reminders=None,
)
DENIES = Policy(channel=CHANNEL, users=(ALICE, BOB), expires_after=WAIT, reminders=None)
APPROVES = Policy(
    channel=CHANNEL,
    users=(ALICE, BOB),
    expires_after=WAIT,
    if_nobody_decides="approve",
    reminders=None,
)
TOLD = {
    "escalated": "This request's time is up and it is escalated now; your click changed nothing.",
    "expired": "This request has expired; nothing was approved.",
    "approved": (
        "This request's time is up, so it is approved by default, as its card said; "
        "your click changed nothing."
    ),
}
POLICIES = {"escalated": ESCALATES, "expired": DENIES, "approved": APPROVES}
"""Each policy by what its expiry stores."""


async def _late_click(bot: Harness, value: str, *, user: str = ALICE) -> ClickEntry:
    """``user``'s Approve, a minute past the deadline, queued for a decider."""
    await bot.click(ids.APPROVE, value, user=user)
    [entry] = await bot.services.storage.clicks.claim("decider", count=10)
    return entry


async def _decide(bot: Harness, entry: ClickEntry) -> None:
    """What a click decider does with ``entry``: decide it, then acknowledge it."""
    await clicks.decide_click(bot.services, entry)
    await bot.services.storage.clicks.done([entry])


def _told(bot: Harness, user: str) -> list[str]:
    return [str(n["text"]) for n in bot.slack.called("chat.postEphemeral") if n["user"] == user]


async def _stored_outcomes(bot: Harness, storage: Storage, rid: str) -> tuple[str, list[str]]:
    """The record's stored state (``escalated`` when pending one step up) and the audit
    trail's entries for it."""
    record = await storage.queries.get(rid)
    assert record is not None
    state = "escalated" if record.state == "pending" and record.escalation_step else record.state
    trail = [e.event for e in await storage.audit.read(count=100) if e.record_id == rid]
    return state, trail


@pytest.mark.parametrize("stores", ["escalated", "expired", "approved"])
async def test_a_late_click_stores_the_expiry_it_is_told_of_before_any_sweep(
    make_bot: Any, storage: Storage, stores: str
) -> None:
    bot: Harness = await make_bot(POLICIES[stores], deciders=0)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(WAIT + timedelta(minutes=1))
    await _decide(bot, await _late_click(bot, value))
    assert _told(bot, ALICE) == [TOLD[stores]]
    state, trail = await _stored_outcomes(bot, storage, bot.record_id(value))
    assert state == stores  # already, no sweep has run
    expiry = {"escalated": "escalated", "expired": "expired", "approved": "approved_by_default"}
    assert trail.count(expiry[stores]) == 1


@pytest.mark.parametrize("order", ["click first", "sweep first", "together"])
@pytest.mark.parametrize("stores", ["escalated", "expired", "approved"])
async def test_a_late_click_racing_the_sweep_ends_with_one_expiry_and_is_told_it(
    make_bot: Any, storage: Storage, stores: str, order: str
) -> None:
    """The sweep and the click's decider each make the expiry when they come first: it is
    stored once, its card and requester told once, and the click is told what it is."""
    bot: Harness = await make_bot(POLICIES[stores], deciders=0)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(WAIT + timedelta(minutes=1))
    entry = await _late_click(bot, value)
    sweep = Scheduler(bot.services, made_final=made_final).tick
    if order == "click first":
        await _decide(bot, entry)
        await sweep()
    elif order == "sweep first":  # it waits for the click, which makes the expiry
        await sweep()
        await _decide(bot, entry)
    else:
        await asyncio.gather(sweep(), _decide(bot, entry))
    bot.clock.advance(timedelta(seconds=2))  # past when a sweep that waited looks again
    await sweep()
    await bot.services.background.idle()

    state, trail = await _stored_outcomes(bot, storage, bot.record_id(value))
    assert state == stores
    assert _told(bot, ALICE) == [TOLD[stores]]
    told_carol = [t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]
    assert len(told_carol) == 1, told_carol
    expiry = {"escalated": "escalated", "expired": "expired", "approved": "approved_by_default"}
    assert trail.count(expiry[stores]) == 1
    counted = {} if stores == "escalated" else {"expired": 1}  # by whoever made it, once
    assert bot.services.metrics.decisions == counted
    assert bot.services.metrics.refusals == {"expired": 1}
    if stores == "escalated":  # one escalation card, in the thread
        cards = [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]
        assert len(cards) == 2


async def test_a_late_click_while_a_click_in_time_waits_claims_no_expiry(
    make_bot: Any, storage: Storage
) -> None:
    """Bob clicked Approve in time; Alice, after the deadline, is decided first. Her click
    stores no expiry (Bob's counts first) and she is told only that the time is up: Bob's
    approval is what is stored, not the escalation the deadline would have made."""
    bot: Harness = await make_bot(ESCALATES, deciders=0)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(WAIT - timedelta(minutes=1))
    await bot.click(ids.APPROVE, value, user=BOB)
    bot.clock.advance(timedelta(minutes=2))
    await bot.click(ids.APPROVE, value, user=ALICE)
    bobs, alices = await storage.clicks.claim("decider", count=10)
    assert (bobs.user_id, alices.user_id) == (BOB, ALICE)

    await _decide(bot, alices)
    assert _told(bot, ALICE) == ["This request's time is up; your click changed nothing."]
    await _decide(bot, bobs)
    await Scheduler(bot.services, made_final=made_final).tick()
    record = await storage.queries.get(bot.record_id(value))
    assert record is not None and (record.state, record.decided_by) == ("approved", BOB)
    assert record.escalation_step == 0
    await bot.finished()
    assert len(bot.tool_log.calls) == 1


@pytest.mark.parametrize("stores", ["escalated", "expired", "approved"])
async def test_a_late_approve_from_home_stores_the_expiry_its_notice_tells_of(
    make_bot: Any, storage: Storage, stores: str
) -> None:
    """Approve from App Home after the deadline, before any sweep, stores the expiry as a
    late click on the card does, and Home's notice says what is stored."""
    bot: Harness = await make_bot(POLICIES[stores], deciders=0)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(WAIT + timedelta(minutes=1))
    await bot.send(home_click_payload(user=ALICE, action_id=ids.HOME_APPROVE, value=value))

    def homes() -> list[str]:
        views = [c for c in bot.slack.called("views.publish") if c["user_id"] == ALICE]
        return [str(v["view"]["blocks"][0]["text"]["text"]) for v in views]

    await bot.slack.wait_for(lambda: bool(homes()), what="Alice's Home")
    assert homes()[0] == TOLD[stores]
    state, trail = await _stored_outcomes(bot, storage, bot.record_id(value))
    assert state == stores  # already, no sweep has run
    expiry = {"escalated": "escalated", "expired": "expired", "approved": "approved_by_default"}
    assert trail.count(expiry[stores]) == 1
    await bot.services.background.idle()  # its requester told, as after a sweep
    assert len([t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]) == 1
