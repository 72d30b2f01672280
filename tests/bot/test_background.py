"""Work a listener handed off after its ack: at shutdown what is still running when the
grace is over is cancelled, and the log names each piece cut off."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.services.background import Background


async def test_work_still_running_when_the_grace_is_over_is_cancelled_and_named_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    background = Background()
    started, finished = asyncio.Event(), asyncio.Event()

    async def slow() -> None:
        started.set()
        await asyncio.Event().wait()  # never set: outlasts any grace

    async def quick() -> None:
        finished.set()

    background.spawn(slow(), name="slash run")
    background.spawn(quick(), name="home U0ALICE")
    await asyncio.wait_for(started.wait(), 5)
    caplog.set_level(logging.WARNING, logger="bot.services.background")
    await background.close(grace=0.05)
    assert finished.is_set() and background.pending == 0
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert said == [
        (
            logging.WARNING,
            "background task slash run cancelled: still running 0.05 s after shutdown began",
        )
    ]
