"""Fixtures: a running sandbox, a Web API client pointed at it, and Bolt apps served for real."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox, Timing

Serve = Callable[[AsyncApp], Awaitable[str]]


@pytest.fixture
def timing(request: pytest.FixtureRequest) -> Timing:
    """Slack's clocks, unless a test parametrizes shorter ones (`indirect=True`)."""
    return getattr(request, "param", Timing())


@pytest.fixture
async def sb(timing: Timing) -> AsyncIterator[Sandbox]:
    async with Sandbox(timing=timing) as sandbox:
        yield sandbox


@pytest.fixture
def client(sb: Sandbox) -> AsyncWebClient:
    return AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)


@pytest.fixture
def app(sb: Sandbox) -> AsyncApp:
    """A Bolt app configured as a user would configure it against the sandbox."""
    return AsyncApp(
        client=AsyncWebClient(base_url=sb.api_url, token=sb.bot_token),
        signing_secret=sb.signing_secret,
    )


@pytest.fixture
async def serve(sb: Sandbox) -> AsyncIterator[Serve]:
    """Serve a Bolt app over real HTTP on a free port and point the sandbox's deliveries at it."""
    runners: list[web.AppRunner] = []

    async def _serve(bolt: AsyncApp) -> str:
        runner = web.AppRunner(bolt.web_app(path="/slack/events"))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        host, port = runner.addresses[0][:2]
        sb.request_url = f"http://{host}:{port}/slack/events"
        return sb.request_url

    yield _serve
    for runner in runners:
        await runner.cleanup()
