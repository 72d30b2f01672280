"""A process told to stop answers what it holds and then does it: ``/signoff run`` in hand
as ``signoff serve`` or ``signoff socket`` stops is answered "Starting cleanup…" and the
run starts, its card posted, before the process exits. Each runs as the command line runs
it, against the fake Slack and the test's Redis."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from fakes import BOT_TOKEN, SIGNING_SECRET, FakeSlack, command_body, sign
from harness import CAROL, CHANNEL
from pydantic import SecretStr

from bot.process import cli
from bot.process.settings import Settings
from bot.services import Services
from bot.services.background import Background
from bot.slack import replays
from bot.slack.events import EVENTS_PATH

STARTING = "Starting cleanup…"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("mode", ["serve", "socket"])
async def test_a_run_command_in_hand_as_the_process_stops_is_started(
    mode: str,
    slack: FakeSlack,
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command's replay check waits on Redis until the process closes its background
    work (the latest a request in hand can be answered): the run it acks must not be the
    work a stopping process drops."""
    port = _free_port()
    settings = Settings(
        bot_token=SecretStr(BOT_TOKEN),
        signing_secret=SecretStr(SIGNING_SECRET),
        app_token=SecretStr("xapp-test-token"),
        slack_api_url=slack.api_url,
        redis_url=SecretStr(redis_url),
        redis_prefix=key_prefix,
        agents="cleanup_agents",
        host="127.0.0.1",
        port=port,
    )
    checking, closing = asyncio.Event(), asyncio.Event()
    opened: list[Services] = []
    open_services = cli.open_services

    @contextlib.asynccontextmanager
    async def held_replay_checks(*args: Any, **kwargs: Any) -> AsyncIterator[Services]:
        async with open_services(*args, **kwargs) as services:
            deliveries = services.storage.deliveries
            deliveries.first_signed = _held(deliveries.first_signed, checking, closing)  # type: ignore[method-assign]
            deliveries.first_envelope = _held(deliveries.first_envelope, checking, closing)  # type: ignore[method-assign]
            opened.append(services)
            yield services

    close = Background.close

    async def closed_when_told(self: Background, *, grace: float = 5.0) -> None:
        closing.set()  # the held check answers once this close has begun
        await close(self, grace=grace)

    # Past the budget the request is taken unchecked: longer than the loops take to stop,
    # shorter than Slack waits for an ack.
    monkeypatch.setattr(replays, "REPLAY_BUDGET", 1.0)
    monkeypatch.setattr(cli, "open_services", held_replay_checks)
    monkeypatch.setattr(Background, "close", closed_when_told)
    stopping = asyncio.Event()
    command = cli._serve if mode == "serve" else cli._socket
    process = asyncio.create_task(
        command(settings, argparse.Namespace(agents=None, no_workers=False), stopping)
    )
    try:
        body = command_body(text="run cleanup tidy", user=CAROL, channel=CHANNEL)
        if mode == "socket":
            payload = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
            envelope = await slack.deliver(payload, kind="slash_commands")
            await asyncio.wait_for(checking.wait(), 10)
            stopping.set()
            answer = ((await slack.acked(envelope)).get("payload") or {}).get("text")
        else:
            async with aiohttp.ClientSession() as http:
                await _until_served(http, f"http://127.0.0.1:{port}/healthz", process)
                posted = http.post(
                    f"http://127.0.0.1:{port}{EVENTS_PATH}", data=body.encode(), headers=sign(body)
                )
                sending = asyncio.ensure_future(_text(posted))
                await asyncio.wait_for(checking.wait(), 10)
                stopping.set()
                answer = await asyncio.wait_for(sending, 10)
        assert answer == STARTING
        assert await asyncio.wait_for(process, 30) == 0
    finally:
        stopping.set()
        closing.set()
        await asyncio.wait_for(asyncio.gather(process, return_exceptions=True), 30)
    [card] = slack.called("chat.postMessage")  # the run started, and asked for approval
    assert card["channel"] == CHANNEL
    [services] = opened
    assert services.background.pending == 0


def _held(
    check: Callable[[str], Awaitable[bool]], checking: asyncio.Event, closing: asyncio.Event
) -> Callable[[str], Awaitable[bool]]:
    """``check``, answered once ``closing`` is set (Redis slow to answer it until then)."""

    async def held(key: str) -> bool:
        checking.set()
        await closing.wait()
        return await check(key)

    return held


async def _until_served(http: aiohttp.ClientSession, url: str, process: asyncio.Task[int]) -> None:
    async with asyncio.timeout(30):
        while True:
            assert not process.done(), process
            with contextlib.suppress(aiohttp.ClientConnectionError):
                async with http.get(url) as answer:
                    if answer.status == 200:
                        return
            await asyncio.sleep(0.05)  # the process is starting: poll its health endpoint


async def _text(posting: Any) -> str:
    async with posting as answer:
        assert answer.status == 200, answer.status
        return str(await answer.text())
