"""A refused click's refusal is queued in the step that stores it: a decider that dies
before telling the clicker leaves it to the scheduler, which tells it once; one its
decider told is not told again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, MALLORY, Harness

from bot.decisions import clicks
from bot.decisions.clicks import decide_click
from bot.schedule.scheduler import Scheduler
from bot.ui import holding, ids
from storage import Storage
from storage.epoch import to_ms
from storage.sweeps import POST_LEASE

NOT_AN_APPROVER = "You are not among the approvers of this request; nothing was decided."


def _told(bot: Harness) -> list[str]:
    return [str(e["text"]) for e in bot.slack.called("chat.postEphemeral") if e["user"] == MALLORY]


async def test_a_refusal_whose_decider_died_before_telling_it_is_told_once_by_the_scheduler(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    front: Harness = await make_bot(workers=0, deciders=0)  # acks only, like --no-workers
    value = await front.start()
    await front.click(ids.APPROVE, value, user=MALLORY)  # not an approver: refused
    [entry] = await storage.clicks.claim("dead-decider", count=10)
    with monkeypatch.context() as patched:

        async def dies(*_: Any, **__: Any) -> None:  # its process dies as it would tell it
            raise asyncio.CancelledError

        patched.setattr(clicks, "post_ephemeral", dies)
        with pytest.raises(asyncio.CancelledError):
            await decide_click(front.services, entry)
    record = await storage.queries.get(front.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()

    other: Harness = await make_bot(reclaim_after=0.05)  # takes the click over: a replay
    await other.clicks_done()
    await other.loops.stop()
    assert _told(front) == []
    await Scheduler(other.services).tick()
    assert _told(front) == []  # still its decider's to tell

    for _ in range(3):
        other.clock.advance(POST_LEASE + timedelta(seconds=1))
        await Scheduler(other.services).tick()
    [told] = _told(front)
    assert told.startswith(NOT_AN_APPROVER)
    [ephemeral] = front.slack.called("chat.postEphemeral")
    assert ephemeral["channel"] == entry.channel_id


async def test_a_refusal_its_decider_told_is_not_told_again(make_bot: Any) -> None:
    bot: Harness = await make_bot(workers=0)
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    await bot.clicks_done()

    for _ in range(3):
        bot.clock.advance(POST_LEASE + timedelta(seconds=1))
        await Scheduler(bot.services).tick()
    [told] = _told(bot)
    assert told.startswith(NOT_AN_APPROVER)


async def test_a_click_naming_no_record_id_is_told_so_and_acknowledged(make_bot: Any) -> None:
    """A forged button value that is no record id is refused as unknown, told, and its
    click acknowledged, with nothing queued to hold."""
    bot: Harness = await make_bot(workers=0)
    await bot.start()
    await bot.click(ids.APPROVE, "x", user=MALLORY)
    await bot.clicks_done()
    [told] = _told(bot)
    assert "nothing was decided" in told


async def test_a_refusal_told_while_a_click_of_its_batch_is_slow_is_not_told_again(
    make_bot: Any, storage: Storage
) -> None:
    """Its decider told it at once; another click it read with it waits on a slow Slack past
    the refusal's hold: the scheduler does not tell it a second time meanwhile."""
    front: Harness = await make_bot(workers=0, deciders=0)
    value = await front.start()
    await front.click(ids.APPROVE, value, user=MALLORY)  # refused: told at once
    await front.click(ids.APPROVE, value, user=ALICE)  # decided: its card waits on Slack
    slow = front.slack.held["chat.update"] = asyncio.Event()

    decider: Harness = await make_bot(workers=0)  # reads both clicks in one batch
    await front.slack.wait_calls("chat.postEphemeral")
    for _ in range(3):
        decider.clock.advance(POST_LEASE + timedelta(seconds=1))
        await Scheduler(decider.services).tick()
    slow.set()
    await decider.clicks_done()
    [told] = _told(front)
    assert told.startswith(NOT_AN_APPROVER)


async def _polled(check: Callable[[], Awaitable[object]]) -> None:
    """Wait until ``check()`` holds in Redis: another task writes it, the holder on its own
    clock, so there is nothing to wait on but Redis."""
    async with asyncio.timeout(10):
        while True:
            if await check():
                return
            await asyncio.sleep(0.02)


async def _held_past(bot: Harness, shard_key: str, member: str) -> None:
    """Wait until the refusal's lease ends after the bot's now: its teller renewed it."""

    async def held() -> bool:
        score = await bot.services.storage.client.raw.zscore(shard_key, member)
        return score is not None and score > to_ms(bot.clock.now())

    await _polled(held)


def _queued(bot: Harness, record_id: str) -> str:
    keys = bot.services.storage.keys
    return keys.refusals(keys.shard_of_record(record_id))


async def test_a_refusal_its_decider_is_slow_to_tell_is_held_not_told_again(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack takes longer than the refusal's lease to take its telling (a rate limit slept
    out): the decider holds it meanwhile, so another process's scheduler does not tell it."""
    monkeypatch.setattr(holding, "POST_LEASE", timedelta(seconds=0.3))  # held every 0.1 s
    bot: Harness = await make_bot(workers=0)
    value = await bot.start()
    slow = bot.slack.held["chat.postEphemeral"] = asyncio.Event()
    await bot.click(ids.APPROVE, value, user=MALLORY)
    queued = _queued(bot, bot.record_id(value))
    storage = bot.services.storage
    await _polled(lambda: storage.client.raw.exists(queued))  # stored by the decider's task
    [member] = [str(m) for m in await storage.client.raw.zrange(queued, 0, -1)]
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    await _held_past(bot, queued, member)
    # Another process's scheduler, which would tell it too (and wait on Slack as it does).
    await asyncio.wait_for(Scheduler(bot.services).tick(), 10)
    slow.set()
    await bot.clicks_done()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    [told] = _told(bot)
    assert told.startswith(NOT_AN_APPROVER)


async def test_a_refusal_the_scheduler_is_slow_to_tell_is_held_not_told_again(
    make_bot: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduler telling a dead decider's refusal holds it while Slack is slow, so
    another process's scheduler does not tell it too."""
    monkeypatch.setattr(holding, "POST_LEASE", timedelta(seconds=0.3))  # held every 0.1 s
    bot: Harness = await make_bot(workers=0, deciders=0)
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=MALLORY)
    [entry] = await storage.clicks.claim("dead-decider", count=10)
    with monkeypatch.context() as patched:

        async def dies(*_: Any, **__: Any) -> None:
            raise asyncio.CancelledError

        patched.setattr(clicks, "post_ephemeral", dies)
        with pytest.raises(asyncio.CancelledError):
            await decide_click(bot.services, entry)
    queued = _queued(bot, bot.record_id(value))
    [member] = [str(m) for m in await storage.client.raw.zrange(queued, 0, -1)]
    slow = bot.slack.held["chat.postEphemeral"] = asyncio.Event()
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))
    claimed = to_ms(bot.clock.now() + POST_LEASE)
    telling = asyncio.create_task(Scheduler(bot.services).tick())

    async def claimed_now() -> bool:
        return await storage.client.raw.zscore(queued, member) == claimed

    await _polled(claimed_now)  # by the scheduler's task
    bot.clock.advance(POST_LEASE + timedelta(seconds=1))  # past the lease it claimed
    await _held_past(bot, queued, member)
    await asyncio.wait_for(Scheduler(bot.services).tick(), 10)  # another process's
    slow.set()
    await telling
    [told] = _told(bot)
    assert told.startswith(NOT_AN_APPROVER)
    assert await storage.client.raw.zrange(queued, 0, -1) == []
