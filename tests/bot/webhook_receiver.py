"""A webhook receiver on real HTTP, and a bot whose requests name it, shared by the webhooks'
test files."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from harness import ALICE, BOB, CHANNEL, Harness

from bot.api.request_records import REQUESTS_PATH


@dataclass
class Receiver:
    """A webhook receiver that answers ``status``; it keeps every request it got."""

    status: int = 503
    location: str | None = None
    """Where an answer redirects to, sent as its ``Location``."""
    got: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def handle(self, request: web.Request) -> web.Response:
        self.got.append((self.status, dict(request.headers), await request.read()))
        async with self.changed:
            self.changed.notify_all()
        headers = {"Location": self.location} if self.location else None
        return web.Response(status=self.status, headers=headers)

    async def wait(self, count: int) -> None:
        async with self.changed, asyncio.timeout(10):
            await self.changed.wait_for(lambda: len(self.got) >= count)

    def taken(self) -> dict[str, dict[str, Any]]:
        """The deliveries it accepted, by delivery id (duplicates dropped, as it should)."""
        return {
            headers["X-Signoff-Delivery"]: json.loads(body)
            for status, headers, body in self.got
            if status == 200
        }


@dataclass
class Hooked:
    bot: Harness
    base: str
    http: aiohttp.ClientSession
    token: str
    secret: str
    receiver: Receiver
    hook: str
    rescheduled: asyncio.Condition
    outcomes: list[str]

    async def ask(self, **fields: Any) -> dict[str, Any]:
        body = {"title": "Rotate keys", "channel": CHANNEL, "approvers": [ALICE, BOB]}
        headers = {"Authorization": f"Bearer {self.token}"}
        body |= {"callback_url": self.hook, **fields}
        async with self.http.post(self.base + REQUESTS_PATH, json=body, headers=headers) as r:
            assert r.status == 201, await r.text()
            return dict(await r.json())

    async def got(self, count: int) -> None:
        await self.receiver.wait(count)

    async def settled(self, *outcomes: str) -> None:
        """Wait until the sender has handled its attempts so far with ``outcomes``."""
        async with self.rescheduled, asyncio.timeout(10):
            await self.rescheduled.wait_for(lambda: self.outcomes == list(outcomes))
