"""A request from Slack whose replay check Redis cannot answer in time is taken, and the
operator is told the check was skipped: a warning at most once a minute, over HTTP and
over Socket Mode alike."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import Any

import pytest
from harness import ALICE, Harness
from socket_bot import SocketBot

from bot.slack import rare_warnings
from bot.ui.refusals import LIST_DOWN
from storage import EmbeddedRedis, Storage

SKIPPED = "took requests from Slack without checking for replays"


@pytest.fixture
def storage(own_storage: Storage) -> Storage:
    """The bot's storage is on this test's own Redis, which it stops, or freezes."""
    return own_storage


def _skipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "bot.slack.replays" and r.levelno == logging.WARNING
    ]


@pytest.mark.parametrize("retries", [0])  # Redis refusing is told before the 0.5 s are up
async def test_commands_taken_while_redis_is_down_are_warned_of_once_a_minute(
    make_bot: Any,
    server: EmbeddedRedis,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bot: Harness = await make_bot(workers=0, deciders=0)
    caplog.set_level(logging.WARNING, logger="bot.slack.replays")
    assert (await bot.command("", user=ALICE))["text"] != LIST_DOWN  # checked: nothing to warn of
    assert _skipped(caplog) == []
    server.stop()
    for _ in range(3):
        assert (await bot.command("", user=ALICE))["text"] == LIST_DOWN
    [first] = _skipped(caplog)
    assert first.startswith(f"{SKIPPED} (1 since startup): "), first
    assert "cannot reach Redis" in first, first
    monkeypatch.setattr(rare_warnings, "WARN_EVERY", 0.0)  # the minute has passed
    assert (await bot.command("", user=ALICE))["text"] == LIST_DOWN
    [_, second] = _skipped(caplog)
    assert second.startswith(f"{SKIPPED} (3 since the last warning): "), second


async def test_an_envelope_taken_while_redis_is_frozen_is_warned_of(
    socket_bot: Any, server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    sb: SocketBot = await socket_bot()
    caplog.set_level(logging.WARNING, logger="bot.slack.replays")
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)  # Redis holds its connections and answers nothing
    try:
        async with asyncio.timeout(3):
            listed = await sb.command("", user=ALICE)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert listed["text"] == LIST_DOWN
    assert _skipped(caplog) == [
        f"{SKIPPED} (1 since startup): Redis could not say whether each was received "
        "before (the last time: no answer within 0.5 s)"
    ]
