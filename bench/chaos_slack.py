"""Chaos scenarios of Slack failing: a storm of 429s and 5xx while runs start and are
approved, and a card post answered 429 with a long Retry-After."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bot.ui import ids

from .chaos_stack import ALICE, CHANNEL, is_decided, stack


async def storm() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        faults = s.sandbox.faults

        async def weather(seconds: float) -> None:
            until = time.monotonic() + seconds
            while time.monotonic() < until:  # keep faults queued for every method
                faults.rate_limit(count=3, retry_after=1)
                faults.server_error(count=3, status=503)
                await asyncio.sleep(0.5)  # the storm's own pace, not a wait for work
            faults.clear()

        storm_task = asyncio.create_task(weather(30))
        for _ in range(10):
            await s.sandbox.interactions.slash_command(
                ALICE, channel=CHANNEL, command="/signoff", text="run cleanup now"
            )
        await s.sandbox.wait_for(lambda: len(s.cards()) >= 10, within=120)
        cards = s.pending_cards()
        for card in cards:
            await s.approve(card)
        await storm_task
        await s.sandbox.wait_for(lambda: all(s.finished(c) for c in cards), within=120)
        failed = [c for c in faults.calls() if not c.ok]
        return {
            "storm_seconds_of_faults": 30,
            "storm_failed_calls": len(failed),
            "storm_cards_posted": len(s.cards()),
            "storm_runs_finished": sum(s.finished(c) for c in cards),
            "storm_finished_posts": s.finished_posts(cards),
            "storm_decided": sum(is_decided(m) for m in s.cards()),
        }


async def ratelimit() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        s.sandbox.faults.rate_limit("chat.postMessage", retry_after=40)
        started = time.monotonic()
        [card] = await s.runs(1, within=90)
        waited = time.monotonic() - started
        cards = s.cards()
        refused = [c for c in s.sandbox.faults.calls("chat.postMessage") if not c.ok]
        return {
            "ratelimit_retry_after_s": 40,
            "ratelimit_cards_posted": len(cards),
            "ratelimit_refused_posts": len(refused),
            "ratelimit_posted_after_s": round(waited, 1),
            "ratelimit_card_is_live": int(ids.APPROVE in str(card.blocks)),
        }
