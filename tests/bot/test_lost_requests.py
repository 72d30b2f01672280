"""A job's pending request whose record Redis lost (evicted, or deleted by hand): its
card (a batch card whole, whichever item was lost) says it can no longer be decided."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from harness import CHANNEL, Harness
from requests_jobs import Jobs

from bot.schedule.scheduler import Scheduler
from storage.requests import request_record_id


async def _lose(bot: Harness, record_id: str) -> None:
    """Delete the record's key, as an eviction does."""
    storage = bot.services.storage
    assert await storage.client.raw.delete(storage.keys.record(record_id)) == 1


async def _sweep(bot: Harness) -> None:
    """Two schedulers meet the lost request at once, its time up."""
    bot.clock.advance(timedelta(days=2))
    await asyncio.gather(Scheduler(bot.services).tick(), Scheduler(bot.services).tick())


async def _lost_entries(bot: Harness) -> list[Any]:
    return [e for e in await bot.services.storage.audit.read(count=100) if e.event == "lost"]


async def test_a_lost_requests_card_says_it_can_no_longer_be_decided(jobs: Jobs) -> None:
    status, made = await jobs.ask()
    assert status == 201
    await _lose(jobs.bot, request_record_id(made["id"]))
    await _sweep(jobs.bot)
    [card] = [u for u in jobs.bot.slack.called("chat.update") if u["ts"] == jobs.bot.message_ts()]
    assert card["channel"] == CHANNEL
    said = str(card["blocks"])
    assert "can no longer be decided" in said and "actions" not in said, said


@pytest.mark.parametrize("lost", [1, 0], ids=["an item", "its lead"])
async def test_a_lost_items_batch_card_is_drawn_whole(jobs: Jobs, lost: int) -> None:
    items = ["vol-a", "vol-b", "vol-c"]
    status, made = await jobs.ask(items=items)
    assert status == 201
    lead = await jobs.bot.services.storage.queries.get(request_record_id(made["id"]))
    assert lead is not None and len(lead.batch_items) == 3
    await _lose(jobs.bot, lead.batch_items[lost])
    await _sweep(jobs.bot)

    assert len(await _lost_entries(jobs.bot)) == 1
    updates = [u for u in jobs.bot.slack.called("chat.update") if u["ts"] == jobs.bot.message_ts()]
    said = str(updates[-1]["blocks"])
    assert "Decided but for lost items" in updates[-1]["text"], updates[-1]["text"]
    assert f"{lost + 1}. :warning: Lost from Redis while it waited" in said, said
    for n, item in enumerate(items):
        assert (f"{n + 1}. {item}: Expired" in said) == (n != lost), said
