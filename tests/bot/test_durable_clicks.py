"""Durable clicks: an acknowledged click is in Redis, so it outlives the process that took
it, and deciding the same stream entry again changes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from harness import ALICE, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Policy
from bot.decisions.clicks import decide_click
from bot.ui import ids
from storage import Storage


async def _stored(storage: Storage, record_id: str) -> str:
    record = await storage.queries.get(record_id)
    assert record is not None
    return json.dumps(record.model_dump(mode="json"), sort_keys=True)


async def test_a_click_read_by_a_decider_that_died_is_decided_once_by_another_process(
    make_bot: Any, storage: Storage
) -> None:
    front: Harness = await make_bot(workers=0, deciders=0)  # acks only, like --no-workers
    value = await front.start()
    response = await front.click(ids.APPROVE, value, user=ALICE)
    assert response.status == 200
    # A decider read the click, then its process died before deciding it.
    [entry] = await storage.clicks.claim("dead-decider", count=10)
    assert entry.record_id == front.record_id(value) and entry.user_id == ALICE

    other: Harness = await make_bot(reclaim_after=0.05)
    assert "deleted 2 file(s)" in await other.finished()
    await other.loops.stop()  # the decider acknowledges what it decided before it stops

    record = await storage.queries.get(front.record_id(value))
    assert record is not None and record.state == "approved" and record.decided_by == ALICE
    assert len(record.votes) == 1
    assert other.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert len(front.slack.called("chat.update")) == 1
    assert front.slack.called("chat.postEphemeral") == []
    assert await storage.clicks.claim("late-decider", count=10) == []
    assert await storage.clicks.reclaim("late-decider", min_idle=timedelta(0)) == []


async def test_a_replayed_click_changes_nothing_and_sends_no_second_message(
    make_bot: Any, storage: Storage
) -> None:
    bot: Harness = await make_bot(workers=0, deciders=0)
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=MALLORY)  # refused: not an approver
    await bot.click(ids.APPROVE, value, user=ALICE)
    refused, approved = await storage.clicks.claim("decider", count=10)

    for entry in (refused, approved):
        await decide_click(bot.services, entry)
    stored = await _stored(storage, bot.record_id(value))
    [update] = bot.slack.called("chat.update")
    assert [e["user"] for e in bot.slack.called("chat.postEphemeral")] == [MALLORY]

    for entry in (refused, approved):  # a decider died before acknowledging them
        await decide_click(bot.services, entry)

    assert await _stored(storage, bot.record_id(value)) == stored
    assert [e["user"] for e in bot.slack.called("chat.postEphemeral")] == [MALLORY]
    # The interrupt, and the requester told of the approval once.
    await bot.slack.wait_calls("chat.postMessage", 2)
    posts = bot.slack.called("chat.postMessage")
    assert len(posts) == 2 and posts[1]["text"].startswith(f"<@{CAROL}> :white_check_mark:")
    # The replay re-renders the message from the record: the same update, nothing new.
    assert bot.slack.called("chat.update") == [update, update]
    assert bot.tool_log.calls == []


async def test_a_click_in_time_counts_when_its_decider_gets_to_it_after_the_expiry(
    make_bot: Any, storage: Storage
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(minutes=30))
    bot: Harness = await make_bot(policy, workers=0, deciders=0)
    value = await bot.start()
    bot.clock.advance(timedelta(minutes=29))
    await bot.click(ids.APPROVE, value, user=ALICE)
    [entry] = await storage.clicks.claim("decider", count=10)
    bot.clock.advance(timedelta(minutes=2))  # the decider was behind; now past the expiry

    await decide_click(bot.services, entry)

    record = await storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved"
    assert record.decided_at == entry.clicked_at
    assert bot.slack.called("chat.postEphemeral") == []


async def test_the_expiry_sweep_waits_for_a_click_made_in_time_that_no_decider_has_taken(
    make_bot: Any, storage: Storage
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(minutes=30))
    front: Harness = await make_bot(policy, workers=0, deciders=0)  # no decider is running
    value = await front.start()
    front.clock.advance(timedelta(minutes=29))
    await front.click(ids.APPROVE, value, user=ALICE)
    front.clock.advance(timedelta(minutes=2))  # past the expiry: the sweep runs first

    assert await storage.interrupts.expire_due(front.clock.now()) == []
    record = await storage.queries.get(front.record_id(value))
    assert record is not None and record.state == "pending"

    decider: Harness = await make_bot(policy, workers=0)  # a decider comes back
    await decider.slack.wait_calls("chat.update")
    await decider.loops.stop()
    record = await storage.queries.get(front.record_id(value))
    assert record is not None and record.state == "approved" and record.decided_by == ALICE
    # Decided, the click no longer holds the expiry back; nothing is left to expire.
    assert await storage.client.raw.exists(storage.keys.clicks_waiting(record.id)) == 0
    front.clock.advance(timedelta(hours=1))
    assert await storage.interrupts.expire_due(front.clock.now()) == []


async def test_a_refused_click_does_not_hold_the_expiry_back(
    make_bot: Any, storage: Storage
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), expires_after=timedelta(minutes=30))
    bot: Harness = await make_bot(policy, workers=0)
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    await bot.loops.stop()  # the refused click is acknowledged
    bot.clock.advance(timedelta(minutes=31))
    [expired] = await storage.interrupts.expire_due(bot.clock.now())
    assert expired.outcome == "expired" and expired.record.id == bot.record_id(value)
