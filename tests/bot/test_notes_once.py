"""A note only one caller posts (a batch's "N calls decided", a request's decision) is
queued in the same step as it is claimed: a process that dies between claiming it and
posting it leaves it to the scheduler, which posts it once."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from batch_agents import spec
from harness import ALICE, CAROL, Harness

from bot.schedule.scheduler import Scheduler
from bot.services import Services
from bot.ui import ids, notes
from storage.sweeps import POST_LEASE

BATCH_NOTE = f"<@{CAROL}> :ballot_box_with_check: 40 calls of `delete_file` decided: 40 approved"


def _dies_posting(monkeypatch: pytest.MonkeyPatch, opening: str) -> asyncio.Event:
    """The process dies as it is about to post a note starting with ``opening``: its task
    is cancelled there, and nothing after it runs. The event is set once it died."""
    send = notes.send_mrkdwn
    died = asyncio.Event()

    async def dying(services: Services, channel: str, thread_ts: str | None, text: str) -> None:
        if text.startswith(opening):
            died.set()
            raise asyncio.CancelledError
        await send(services, channel, thread_ts, text)

    monkeypatch.setattr(notes, "send_mrkdwn", dying)
    return died


async def test_a_batch_note_whose_process_died_before_posting_it_is_posted_once(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot(spec=spec([]))
    await bot.start(requested_by=CAROL)
    with monkeypatch.context() as patched:
        _dies_posting(patched, f"<@{CAROL}> :ballot_box_with_check:")
        await bot.batch_click(ids.BATCH_APPROVE, user=ALICE)
        await bot.services.background.idle()
    assert BATCH_NOTE not in bot.thread()

    other: Harness = await make_bot(spec=spec([]))
    await Scheduler(other.services).tick()
    assert BATCH_NOTE not in bot.thread()  # still leased to the process that claimed it
    other.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(other.services).tick()
    other.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(other.services).tick()
    assert bot.thread().count(BATCH_NOTE) == 1


async def test_a_decision_note_whose_process_died_before_posting_it_is_posted_once(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    told = f"<@{CAROL}> :white_check_mark:"
    with monkeypatch.context() as patched:
        died = _dies_posting(patched, told)
        await bot.click(ids.APPROVE, value, user=ALICE)
        await bot.finished()
        # The note is claimed after the click decider draws the card, not before the run ends.
        await asyncio.wait_for(died.wait(), 5)
    assert not [t for t in bot.thread() if t.startswith(told)]

    other: Harness = await make_bot()
    other.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(other.services).tick()
    await bot.click(ids.APPROVE, value, user=ALICE)  # a second click tells nobody again
    await bot.clicks_done()
    await bot.services.background.idle()
    other.clock.advance(POST_LEASE + timedelta(seconds=1))
    await Scheduler(other.services).tick()
    assert len([t for t in bot.thread() if t.startswith(told)]) == 1
