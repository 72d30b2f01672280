"""A job's request that climbs a ladder of approvers, step by step, until it is decided."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CHANNEL
from requests_jobs import Jobs

from bot.schedule.scheduler import Scheduler


async def test_a_jobs_request_climbs_a_ladder_of_two_steps_then_is_denied(jobs: Jobs) -> None:
    jobs.bot.slack.groups["S0TOKYO"] = ["U0SAM"]
    jobs.bot.slack.handles["S0TOKYO"] = "oncall"
    climb: dict[str, Any] = {
        "approvers": [ALICE],
        "expires_in": 3600,
        "on_expiry": "escalate",
        "escalate_channel": "C0NYC",
        "escalate_to": [BOB],
        "escalate_expires_in": 1800,
        "ladder": [{"channel": "C0TOKYO", "approvers": ["@oncall"], "expires_in": 600}],
    }
    # A client may not reach a channel it may not post in by escalating there.
    status, refused = await jobs.ask(**climb)
    assert status == 403 and refused["field"] == "escalate_channel", refused
    allowed = (CHANNEL, "C0NYC")
    status, refused = await (await jobs.as_client("follow-the-sun-1", allowed)).ask(**climb)
    assert status == 403 and refused["field"] == "ladder.0.channel", refused
    everywhere = (CHANNEL, "C0NYC", "C0TOKYO")
    jobs = await jobs.as_client("follow-the-sun", everywhere)
    status, made = await jobs.ask(**climb)
    assert status == 201, made
    steps = str(jobs.card(0)["blocks"])
    assert f"it goes to <@{BOB}>; if nobody decides by" in steps
    assert "it goes to <!subteam^S0TOKYO>" in steps
    record = await jobs.bot.services.storage.queries.get(jobs.bot.record_id(jobs.value(0)))
    assert record is not None and record.policy.ladder[0].group_members == ("U0SAM",)
    assert steps.count("If nobody decides by") + steps.count("if nobody decides by") == 3

    scheduler = Scheduler(jobs.bot.services)
    channels = []
    for wait in (3600, 1800, 600):
        jobs.bot.clock.advance(timedelta(seconds=wait))
        await scheduler.tick()
        _, seen = await jobs.get(made["status_url"])
        channels.append(seen["status"])
    posted = [p["channel"] for p in jobs.bot.slack.called("chat.postMessage") if p.get("blocks")]
    assert posted == [CHANNEL, "C0NYC", "C0TOKYO"]
    assert channels == ["pending", "pending", "expired"]


async def test_a_ladder_needs_an_escalation_and_someone_at_each_step(jobs: Jobs) -> None:
    status, body = await jobs.ask(ladder=[{"approvers": [BOB]}])
    assert status == 400 and "a ladder follows an escalation" in body["error"], body
    status, body = await jobs.ask(
        on_expiry="escalate", escalate_to=[BOB], ladder=[{"channel": "C0TOKYO"}]
    )
    assert status == 400 and body["field"] == "ladder.0", body
