"""Queued notes the scheduler posts while Slack is slow (a rate limit slept out): each is
held while Slack takes it, so another process's scheduler does not post it too, and the
notes of different threads are posted side by side."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from harness import CAROL, CHANNEL, Harness

from bot.schedule.scheduler import Scheduler
from bot.ui import holding
from bot.ui.notes import post_mrkdwn
from storage.epoch import to_ms
from storage.sweeps import POST_LEASE


async def _scores(bot: Harness) -> list[float]:
    storage = bot.services.storage
    key = storage.keys.notes(storage.keys.shard_of(CHANNEL))
    return [score for _, score in await storage.client.raw.zrange(key, 0, -1, withscores=True)]


async def _until(bot: Harness, holds: Any) -> None:
    """Wait until the queue's scores satisfy ``holds``: the scheduler's task writes them,
    its holder on its own clock, so there is nothing to wait on but Redis."""
    async with asyncio.timeout(10):
        while True:
            if holds(await _scores(bot)):
                return
            await asyncio.sleep(0.02)


async def test_notes_slack_is_slow_to_take_are_held_side_by_side_and_posted_once(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(holding, "POST_LEASE", timedelta(seconds=0.3))  # held every 0.1 s
    bot: Harness = await make_bot()
    bot.slack.down = True
    await post_mrkdwn(bot.services, channel=CHANNEL, thread_ts="1.1", text="in one thread")
    await post_mrkdwn(bot.services, channel=CHANNEL, thread_ts="2.2", text="in another")
    bot.slack.down = False
    slow = bot.slack.held["chat.postMessage"] = asyncio.Event()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    claimed = to_ms(bot.clock.now() + POST_LEASE)
    posting = asyncio.create_task(Scheduler(bot.services).tick())
    await _until(bot, lambda scores: scores == [claimed, claimed])
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))  # past the lease it claimed
    now = to_ms(bot.clock.now())
    await _until(bot, lambda scores: len(scores) == 2 and min(scores) > now)  # both held
    await asyncio.wait_for(Scheduler(bot.services).tick(), 10)  # another process's
    slow.set()
    await posting
    texts = sorted(p["text"] for p in bot.slack.called("chat.postMessage"))
    assert texts == ["in another", "in one thread"]
    assert await _scores(bot) == []


async def test_the_notes_waiting_behind_a_slow_one_in_its_thread_are_held_and_keep_order(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While Slack is slow to take a thread's first note, its later ones wait on it, held
    too: another process's scheduler neither posts them again nor before it."""
    monkeypatch.setattr(holding, "POST_LEASE", timedelta(seconds=0.3))  # held every 0.1 s
    bot: Harness = await make_bot()
    bot.slack.down = True
    for text in ("first", "second", "third"):
        await post_mrkdwn(bot.services, channel=CHANNEL, thread_ts="1.1", text=text)
    bot.slack.down = False
    slow = bot.slack.held["chat.postMessage"] = asyncio.Event()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    claimed = to_ms(bot.clock.now() + POST_LEASE)
    posting = asyncio.create_task(Scheduler(bot.services).tick())
    await _until(bot, lambda scores: scores == [claimed] * 3)
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))  # past the lease it claimed
    now = to_ms(bot.clock.now())
    await _until(bot, lambda scores: max(scores) > now)  # the first one held
    assert all(score > now for score in await _scores(bot))  # and those waiting on it
    await asyncio.wait_for(Scheduler(bot.services).tick(), 10)  # another process's
    slow.set()
    await posting
    texts = [p["text"] for p in bot.slack.called("chat.postMessage")]
    assert texts == ["first", "second", "third"]
    assert await _scores(bot) == []


async def test_a_note_slack_refuses_is_held_while_its_requester_is_told_by_dm(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack refuses a queued note for good (the app left the channel) and is slow to open
    the requester's DM: the note stays held meanwhile, so they are told once."""
    monkeypatch.setattr(holding, "POST_LEASE", timedelta(seconds=0.3))  # held every 0.1 s
    bot: Harness = await make_bot()
    bot.slack.down = True
    await post_mrkdwn(bot.services, channel="C0LEFT", thread_ts="1.1", text="done", or_tell=CAROL)
    bot.slack.down = False
    bot.slack.not_in.add("C0LEFT")
    slow = bot.slack.held["conversations.open"] = asyncio.Event()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    tried = len(bot.slack.failed)
    posting = asyncio.create_task(Scheduler(bot.services).tick())
    await bot.slack.wait_for(lambda: len(bot.slack.failed) > tried, what="the note refused")
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))  # past the lease it claimed
    now = to_ms(bot.clock.now())
    await _until(bot, lambda scores: scores[0] > now)  # held while its DM is opened
    await asyncio.wait_for(Scheduler(bot.services).tick(), 10)  # another process's
    slow.set()
    await posting
    assert len(bot.slack.called("conversations.open")) == 1
    assert [p["text"] for p in bot.slack.called("chat.postMessage")] == ["done"]
    assert await _scores(bot) == []
