"""Chaos scenarios of Redis failing while approvers click: frozen (SIGSTOP) for 8 s, and
killed -9, restarted, shut down and restarted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Callable
from typing import Any

from bot.ui.refusals import STORAGE_DOWN, UNCONFIRMED
from sandbox.entities import Message
from storage import EmbeddedRedis

from .chaos_stack import BOB, CHANNEL, Stack, is_decided, stack


async def frozen() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        cards = await s.runs(10)
        assert s.redis.pid is not None
        os.kill(s.redis.pid, signal.SIGSTOP)
        try:
            acks = await asyncio.gather(*(s.approve(c) for c in cards))
            await asyncio.sleep(max(0.0, 8 - max(acks)))  # keep Redis frozen for 8 s in all
        finally:
            os.kill(s.redis.pid, signal.SIGCONT)
        # A click Redis never confirmed may be lost: its clicker was told to look at the
        # card and click again if it does not change. Wait for those that were kept.
        with contextlib.suppress(TimeoutError):
            await s.sandbox.wait_for(lambda: all(s.finished(c) for c in cards), within=30)
        notes = [e.text for e in s.sandbox.workspace.ephemerals(BOB, CHANNEL)]
        decided = sum(is_decided(m) for m in s.cards())
        finished = sum(s.finished(c) for c in cards)
        # "Nothing was recorded" would be untrue for a click that was carried out.
        untrue = max(0, decided - (len(cards) - notes.count(STORAGE_DOWN)))
        return {
            "frozen_clicks": len(cards),
            "frozen_ack_max_s": round(max(acks), 2),
            "frozen_acks_over_3s": sum(a > 3 for a in acks),
            "frozen_told_unconfirmed": notes.count(UNCONFIRMED),
            "frozen_decided": decided,
            "frozen_runs_finished": finished,
            "frozen_still_pending": len(s.pending_cards()),
            "frozen_untrue_messages": untrue,
        }


async def redis() -> dict[str, Any]:
    async with stack() as s:
        await s.serve()
        cards = await s.runs(30)
        assert s.redis.pid is not None
        outages = (_kill_redis, _shutdown_redis)
        for batch, outage in enumerate(outages):
            clicks = [s.approve(c) for c in cards[batch * 15 : batch * 15 + 15]]
            await asyncio.gather(*clicks, _outage(s.redis, outage, after=0.02))
        notes = [e.text for e in s.sandbox.workspace.ephemerals(BOB, CHANNEL)]
        told_lost = notes.count(STORAGE_DOWN)
        decided = await _settled(s, cards, refused=told_lost)
        return {
            "redis_clicks": len(cards),
            "redis_outages": len(outages),
            "redis_told_not_recorded": told_lost,
            "redis_decided": decided,
            "redis_lost": len(cards) - told_lost - decided,
        }


async def _settled(s: Stack, cards: list[Message], *, refused: int) -> int:
    """How many of ``cards`` end decided, once all but the ``refused`` ones are."""
    await s.sandbox.wait_for(
        lambda: sum(is_decided(c) for c in s.cards()) >= len(cards) - refused, within=90
    )
    return sum(is_decided(c) for c in s.cards())


async def _outage(
    server: EmbeddedRedis, stop: Callable[[EmbeddedRedis], None], *, after: float
) -> None:
    """Stop Redis ``after`` seconds into a batch of clicks, then start it again at once."""
    await asyncio.sleep(after)  # a moment into the clicks, not a wait for work
    stop(server)
    await asyncio.to_thread(server.stop)  # reaps the dead server
    await asyncio.to_thread(server.start)


def _kill_redis(server: EmbeddedRedis) -> None:
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)


def _shutdown_redis(server: EmbeddedRedis) -> None:
    path = server.url.removeprefix("unix://").split("?")[0]
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        sock.sendall(b"SHUTDOWN\r\n")
        sock.recv(64)  # the server closes the connection once its data is on disk
