"""A pending request whose record Redis lost (evicted, or deleted by hand): the expiry
sweep that meets its due entry ends what waited on it, once, whoever else sweeps; the
log and the audit trail name the request."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import batch_agents
import pytest
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Escalate, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage.sweeps import LOST


async def _lose(bot: Harness, record_id: str) -> None:
    """Delete the record's key, as an eviction does."""
    storage = bot.services.storage
    assert await storage.client.raw.delete(storage.keys.record(record_id)) == 1


async def _lost_entries(bot: Harness) -> list[Any]:
    return [e for e in await bot.services.storage.audit.read(count=100) if e.event == "lost"]


async def test_a_run_whose_other_request_was_lost_ends_and_its_other_card_says_so(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    deleted: list[str] = []
    files = ["/tmp/a", "/tmp/b"]
    bot: Harness = await make_bot(
        spec=batch_agents.spec(deleted, files, batch=False, expires_after=timedelta(hours=1))
    )
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("chat.postMessage")) == 2, what="both cards"
    )
    first, second = (
        bot.record_id(p["blocks"][-1]["elements"][0]["value"])
        for p in bot.slack.called("chat.postMessage")
    )
    await _lose(bot, first)
    storage = bot.services.storage
    due = storage.keys.due(storage.keys.shard_of_record(first))
    await storage.client.raw.zadd(due, {first: 1})  # its time came first: the other waits
    bot.clock.advance(timedelta(minutes=1))
    # Two schedulers meet the lost request at once: one of them ends what waited on it.
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())

    [entry] = await _lost_entries(bot)
    assert entry.record_id == first and entry.detail == LOST
    assert [r for r in caplog.records if first in r.getMessage() and LOST in r.getMessage()]
    assert not [r for r in caplog.records if "corrupt" in r.getMessage()]
    stopped = [
        str(p.get("text"))
        for p in bot.slack.called("chat.postMessage")
        if str(p.get("text")).startswith("Stopped")
    ]
    assert len(stopped) == 1 and first in stopped[0] and "lost" in stopped[0], stopped
    kept = await bot.services.storage.queries.get(second)
    assert kept is not None and kept.state == "cancelled"
    status = await bot.services.registry.agent("cleanup").thread_status(kept.thread_id)
    assert status is not None and status.status == "idle"
    updates = bot.slack.called("chat.update")
    [lost_card] = [u for u in updates if u["ts"] == bot.message_ts(0)]
    assert "can no longer be decided" in str(lost_card["blocks"])
    other_card = [u for u in updates if u["ts"] == bot.message_ts(1)][-1]
    assert "Cancelled" in str(other_card["blocks"]) and first in str(other_card["blocks"])
    assert deleted == []
    assert await bot.services.storage.queries.pending_count() == 0

    bot.clock.advance(timedelta(hours=2))
    await Scheduler(bot.services).tick()
    assert len(await _lost_entries(bot)) == 1, "met once"


async def test_a_run_whose_only_request_was_lost_ends_and_its_card_says_so(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    bot: Harness = await make_bot()
    rid = bot.record_id(await bot.start(requested_by=CAROL))
    thread_id = (await bot.services.storage.queries.get(rid)).thread_id  # type: ignore[union-attr]
    await _lose(bot, rid)
    bot.clock.advance(timedelta(hours=25))
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())

    [entry] = await _lost_entries(bot)
    assert entry.record_id == rid and entry.detail == LOST
    said = [r.getMessage() for r in caplog.records if rid in r.getMessage()]
    assert any(LOST in line for line in said), said
    text = await bot.finished()
    assert text.startswith("Stopped (cancelled)") and rid in text and "lost" in text, text
    [card] = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()]
    assert "can no longer be decided" in str(card["blocks"]) and "actions" not in str(card)
    status = await bot.services.registry.agent("cleanup").thread_status(thread_id)
    assert status is not None and status.status == "idle"
    assert bot.tool_log.calls == []


async def test_an_approval_waiting_on_a_lost_request_says_it_never_ran(make_bot: Any) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(
        spec=batch_agents.spec(
            deleted, ["/tmp/a", "/tmp/b"], batch=False, expires_after=timedelta(hours=1)
        )
    )
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("chat.postMessage")) == 2, what="both cards"
    )
    first, second = (
        p["blocks"][-1]["elements"][0]["value"] for p in bot.slack.called("chat.postMessage")
    )
    await bot.click(ids.APPROVE, second, user=ALICE, message_ts=bot.message_ts(1))
    await bot.slack.wait_for(
        lambda: any(u["ts"] == bot.message_ts(1) for u in bot.slack.called("chat.update")),
        what="the approval drawn",
    )
    approved = await bot.services.storage.queries.get(bot.record_id(second))
    assert approved is not None and approved.state == "approved"
    await _lose(bot, bot.record_id(first))
    bot.clock.advance(timedelta(hours=2))
    await Scheduler(bot.services).tick()

    card = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts(1)][-1]
    said = str(card["blocks"])
    assert "Approved" in said and "Not run" in said and bot.record_id(first) in said, said
    assert deleted == []


@pytest.mark.parametrize("lost", [1, 0], ids=["an item", "its lead"])
async def test_a_batch_card_names_its_lost_item_as_not_done(make_bot: Any, lost: int) -> None:
    deleted: list[str] = []
    files = ["/tmp/a", "/tmp/b", "/tmp/c"]
    bot: Harness = await make_bot(
        spec=batch_agents.spec(deleted, files, expires_after=timedelta(hours=1))
    )
    lead = await bot.services.storage.queries.get(
        bot.record_id(await bot.start(requested_by=CAROL))
    )
    assert lead is not None and len(lead.batch_items) == 3
    await _lose(bot, lead.batch_items[lost])
    bot.clock.advance(timedelta(hours=2))
    # Two schedulers meet the lost item at once: one of them ends what waited on it.
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())

    assert len(await _lost_entries(bot)) == 1
    card = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()][-1]
    said = str(card["blocks"])
    assert "3 calls" in card["text"] and "for lost items" in card["text"], card["text"]
    assert f"{lost + 1}. :warning: Lost from Redis while it waited" in said, said
    assert "can no longer be decided, and what it asked was not done" in said
    for n, path in enumerate(files):
        assert (f"{n + 1}. {path}: Expired" in said) == (n != lost), said
    assert deleted == []


async def test_a_lost_requests_escalation_card_says_so_too(make_bot: Any) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel="C0ESCALATE", users=(BOB,)),
    )
    bot: Harness = await make_bot(policy)
    rid = bot.record_id(await bot.start(requested_by=CAROL))
    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services).tick()
    [escalation_ts] = [
        c.answer["ts"]
        for c in bot.slack.calls
        if c.method == "chat.postMessage" and c.args["channel"] == "C0ESCALATE"
    ]
    await _lose(bot, rid)
    bot.clock.advance(timedelta(hours=5))
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())

    assert len(await _lost_entries(bot)) == 1
    for channel, ts in ((CHANNEL, bot.message_ts()), ("C0ESCALATE", escalation_ts)):
        card = [u for u in bot.slack.called("chat.update") if u["ts"] == ts][-1]
        assert card["channel"] == channel
        said = str(card["blocks"])
        assert "can no longer be decided" in said and "actions" not in said, said


async def test_batch_items_approved_while_another_was_lost_say_they_never_ran(
    make_bot: Any,
) -> None:
    deleted: list[str] = []
    files = ["/tmp/a", "/tmp/b", "/tmp/c"]
    bot: Harness = await make_bot(
        spec=batch_agents.spec(deleted, files, expires_after=timedelta(hours=1))
    )
    lead = await bot.services.storage.queries.get(
        bot.record_id(await bot.start(requested_by=CAROL))
    )
    assert lead is not None
    await _lose(bot, lead.batch_items[1])
    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == bot.message_ts() for u in bot.slack.called("chat.update")),
        what="the approvals drawn",
    )
    bot.clock.advance(timedelta(hours=2))
    await Scheduler(bot.services).tick()

    card = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()][-1]
    said = str(card["blocks"])
    for n, path in ((1, "/tmp/a"), (3, "/tmp/c")):
        line = f"{n}. {path}: Approved by <@{ALICE}>, but not run: an item was lost"
        assert line in said, said
    assert "2. :warning: Lost from Redis while it waited" in said, said
    assert deleted == []
