"""A background loop that ends on an unexpected error is logged, and /healthz says so:
the process does not run on without it unnoticed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from harness import Harness

from bot.process.web import operator_app


async def test_a_loop_that_fails_is_logged_and_fails_healthz(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot: Harness = await make_bot()
    [decider] = bot.loops.deciders
    web = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await web.start_server()
    try:
        async with bot.http.get(f"http://127.0.0.1:{web.port}/healthz") as answer:
            assert answer.status == 200

        async def broken(*_: Any, **__: Any) -> list[Any]:
            raise RuntimeError("a bug in the loop")

        caplog.set_level(logging.ERROR, logger="bot.process.loops")
        decider._next = broken  # type: ignore[method-assign]
        async with asyncio.timeout(10):
            while True:
                if decider.consumer in bot.services.stopped_loops:
                    break
                await asyncio.sleep(0.01)  # the loop reads again within its 250 ms block
        async with bot.http.get(f"http://127.0.0.1:{web.port}/healthz") as answer:
            assert answer.status == 503
            assert await answer.text() == f"background loops stopped: {decider.consumer}\n"
    finally:
        await web.close()
    [logged] = [r for r in caplog.records if r.name == "bot.process.loops"]
    assert logged.getMessage().startswith(f"background loop {decider.consumer} stopped")
    assert logged.exc_info is not None and "a bug in the loop" in str(logged.exc_info[1])
