"""A bot's runs API served over real HTTP, in Socket Mode's or HTTP mode's web app; shared
by the runs API's test files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
from aiohttp.test_utils import TestServer
from fakes import SIGNING_SECRET
from harness import Harness
from pydantic import SecretStr

from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app, web_app
from bot.slack.app import build_app

TOKEN = "api-token-" + "x" * 24
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Api:
    bot: Harness
    url: str
    http: aiohttp.ClientSession


@asynccontextmanager
async def served_runs_api(bot: Harness, mode: str) -> AsyncIterator[Api]:
    """The URL of ``bot``'s runs API: served beside /metrics as in Socket Mode (``"socket"``),
    or beside /slack/events as in HTTP mode (``"http"``)."""
    token = SecretStr(TOKEN)
    if mode == "socket":
        app = operator_app(bot.services, api_token=token)
    else:
        bolt = build_app(bot.services, signing_secret=SIGNING_SECRET)
        app = web_app(bolt, bot.services, signing_secret=SIGNING_SECRET, api_token=token)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    async with aiohttp.ClientSession() as http:
        yield Api(bot=bot, url=f"http://127.0.0.1:{server.port}{RUNS_PATH}", http=http)
    await server.close()
