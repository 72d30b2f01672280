"""An escalation card Slack refuses: no card, note or job view says it was escalated there
until it is; each says it could not be posted, and why, while the outbox tries again."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, BOB, CAROL, CHANNEL, Harness
from requests_jobs import Jobs, escalated_to_a_refusing_channel

from bot.agents.policy import Escalate, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import outbox

RANDOM = "C0RANDOM"


def _card_text(jobs: Jobs) -> str:
    """The first card as its latest redraw shows it."""
    return json.dumps(jobs.bot.slack.called("chat.update")[-1]["blocks"])


async def test_an_escalation_slack_refuses_says_so_until_it_is_posted(jobs: Jobs) -> None:
    jobs, made, scheduler = await escalated_to_a_refusing_channel(jobs, RANDOM)
    card = _card_text(jobs)
    assert "Escalated to" not in card
    assert f"Escalation to <#{RANDOM}> could not be posted" in card
    assert "/invite @Signoff" in card
    _, view = await jobs.get(made["status_url"])
    assert view["escalated"] is True and view["escalation_not_posted"] == "not_in_channel"
    assert view["escalation_channel"] == RANDOM
    trail = await jobs.bot.services.storage.audit.read(count=50)
    refused = [e for e in trail if e.event == "escalation_not_posted"]
    assert [e.detail for e in refused] == ["step 1: not_in_channel"]

    # Slack refuses again: the card is not redrawn, nor the refusal audited, a second time.
    updates = len(jobs.bot.slack.called("chat.update"))
    jobs.bot.clock.advance(timedelta(seconds=31))
    await scheduler.tick()
    assert len(jobs.bot.slack.called("chat.update")) == updates
    trail = await jobs.bot.services.storage.audit.read(count=50)
    assert len([e for e in trail if e.event == "escalation_not_posted"]) == 1

    jobs.bot.slack.not_in.clear()  # the app is invited: the outbox posts it
    jobs.bot.clock.advance(timedelta(seconds=31))
    await scheduler.tick()
    posted = [p["channel"] for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert posted == [CHANNEL, RANDOM]
    card = _card_text(jobs)
    assert f"Escalated to <#{RANDOM}>" in card and "could not be posted" not in card
    _, view = await jobs.get(made["status_url"])
    assert view["escalation_not_posted"] is None
    trail = await jobs.bot.services.storage.audit.read(count=50)
    assert "escalation_posted" in [e.event for e in trail]


async def test_an_escalation_card_left_unposted_by_a_stopped_poster_is_posted_by_the_outbox(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack refused both cards until the request escalated; the outbox posts its own card,
    then stops before the escalation card: the next try posts that card, and each card is
    posted once."""
    jobs = await jobs.as_client("weekly-cleanup", (CHANNEL, RANDOM))
    jobs.bot.slack.not_in |= {CHANNEL, RANDOM}
    status, made = await jobs.ask(
        approvers=[ALICE],
        expires_in=3600,
        on_expiry="escalate",
        escalate_channel=RANDOM,
        escalate_to=[BOB],
    )
    assert status == 201, made
    scheduler = Scheduler(jobs.bot.services)
    jobs.bot.clock.advance(timedelta(seconds=3600))
    await scheduler.tick()
    jobs.bot.slack.not_in.clear()

    async def stopped(services: Any, record: Any) -> bool:
        return False

    monkeypatch.setattr(outbox, "_repost_escalation", stopped)
    jobs.bot.clock.advance(timedelta(seconds=31))
    await scheduler.tick()
    monkeypatch.undo()
    for _ in range(3):
        jobs.bot.clock.advance(timedelta(seconds=31))
        await scheduler.tick()
    posted = [p["channel"] for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert posted == [CHANNEL, RANDOM]
    _, view = await jobs.get(made["status_url"])
    assert view["escalation_channel"] == RANDOM and view["escalation_not_posted"] is None


async def test_a_ladder_step_slack_refuses_says_so_on_every_earlier_card(jobs: Jobs) -> None:
    jobs, made, _ = await _climbed_ladder(jobs, refused={RANDOM})
    redrawn = {u["channel"]: json.dumps(u["blocks"]) for u in jobs.bot.slack.called("chat.update")}
    for copy in (CHANNEL, "C0NYC"):
        assert f"Escalation to <#{RANDOM}> could not be posted" in redrawn[copy], copy
    _, view = await jobs.get(made["status_url"])
    assert view["escalation_not_posted"] == "not_in_channel"
    assert view["escalation_channel"] == RANDOM


async def test_the_requester_of_an_agents_run_hears_the_escalation_was_not_posted(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel=RANDOM, users=(BOB,), expires_after=timedelta(minutes=30)),
    )
    bot: Harness = await make_bot(policy)
    bot.slack.not_in.add(RANDOM)
    await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services).tick()
    [told] = [t for t in bot.thread() if t.startswith(f"<@{CAROL}>")]
    assert "was not decided in time" in told and "Escalated to" not in told
    assert f"Escalation to <#{RANDOM}> could not be posted: the app is not in that channel" in told
    card = json.dumps(bot.slack.called("chat.update")[-1]["blocks"])
    assert f"Escalation to <#{RANDOM}> could not be posted" in card


async def test_each_ladder_step_slack_refuses_is_audited_and_the_latest_is_shown(
    jobs: Jobs,
) -> None:
    """Step 1's card was never posted when step 2 is due: the cards speak of step 2."""
    jobs, _, _ = await _climbed_ladder(jobs, refused={"C0NYC", RANDOM})
    card = _card_text(jobs)
    assert f"Escalation to <#{RANDOM}> could not be posted" in card and "C0NYC" not in card
    trail = await jobs.bot.services.storage.audit.read(count=50)
    refused = [e.detail for e in trail if e.event == "escalation_not_posted"]
    assert refused == ["step 1: not_in_channel", "step 2: not_in_channel"]


async def test_a_ladder_past_a_step_slack_refused_posts_the_next_steps_card_and_says_so(
    jobs: Jobs,
) -> None:
    """Step 1's card was refused; step 2's is posted: every view says step 2 is asked
    there, nothing says step 1's card is posted, and the outbox posts no second card."""
    jobs, made, scheduler = await _climbed_ladder(jobs, refused={"C0NYC"})
    posted = [p["channel"] for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert posted == [CHANNEL, RANDOM]
    card = _card_text(jobs)
    assert f"Escalated to <#{RANDOM}>" in card and "could not be posted" not in card
    _, view = await jobs.get(made["status_url"])
    assert view["escalation_channel"] == RANDOM and view["escalation_not_posted"] is None
    record = await jobs.bot.services.storage.queries.get(jobs.bot.record_id(jobs.value()))
    assert record is not None and not record.escalation_unposted
    # A refusal of step 1's card that comes back now is not step 2's: nothing says so.
    interrupts = jobs.bot.services.storage.interrupts
    now = jobs.bot.clock.now()
    assert not await interrupts.escalation_post_failed(record.id, "x", step=1, now=now)
    _, view = await jobs.get(made["status_url"])
    assert view["escalation_not_posted"] is None

    # Slack takes posts in #nyc again, and step 2's card fails a redraw: no card is posted
    # again, nor is step 1's card said to be posted.
    jobs.bot.slack.not_in.clear()
    for _ in range(3):
        jobs.bot.clock.advance(timedelta(seconds=31))
        await scheduler.tick()
    posted = [p["channel"] for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert posted == [CHANNEL, RANDOM]
    trail = await jobs.bot.services.storage.audit.read(count=50)
    assert [e.detail for e in trail if e.event == "escalation_not_posted"] == [
        "step 1: not_in_channel"
    ]
    assert "escalation_posted" not in [e.event for e in trail]


async def _climbed_ladder(
    jobs: Jobs, *, refused: set[str]
) -> tuple[Jobs, dict[str, Any], Scheduler]:
    """A request escalated to #nyc, then to the ladder's step in #random, with Slack
    refusing the cards in ``refused``: the client that asked it, its answer, and the
    scheduler that climbed it."""
    jobs = await jobs.as_client("follow-the-sun", (CHANNEL, "C0NYC", RANDOM))
    jobs.bot.slack.not_in |= refused
    ladder: dict[str, Any] = {"channel": RANDOM, "approvers": [ALICE], "expires_in": 600}
    status, made = await jobs.ask(
        approvers=[ALICE],
        expires_in=3600,
        on_expiry="escalate",
        escalate_channel="C0NYC",
        escalate_to=[BOB],
        escalate_expires_in=1800,
        ladder=[ladder],
    )
    assert status == 201, made
    scheduler = Scheduler(jobs.bot.services)
    for wait in (3600, 1800):
        jobs.bot.clock.advance(timedelta(seconds=wait))
        await scheduler.tick()
    return jobs, made, scheduler
