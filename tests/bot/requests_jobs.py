"""A bot with the requests API, as a job sees it, shared by the requests API's test files."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from harness import ALICE, BOB, CHANNEL, Harness

from bot.api.request_records import REQUESTS_PATH
from bot.schedule.scheduler import Scheduler

ADMIN_TOKEN = "admin-token-" + "x" * 24


@dataclass
class Jobs:
    """A bot with the requests API, and one named client's token."""

    bot: Harness
    base: str
    http: aiohttp.ClientSession
    token: str

    async def as_client(self, name: str, channels: tuple[str, ...]) -> Jobs:
        """The same server, through a new client that may post in ``channels``."""
        storage = self.bot.services.storage
        _, token = await storage.api_clients.create(name, channels=channels, now=datetime.now(UTC))
        return dataclasses.replace(self, token=token)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def ask(self, **fields: Any) -> tuple[int, dict[str, Any]]:
        body = {"title": "Delete 42 stale volumes", "channel": CHANNEL, "approvers": [ALICE, BOB]}
        async with self.http.post(
            self.base + REQUESTS_PATH, json={**body, **fields}, headers=self.auth
        ) as r:
            return r.status, await r.json()

    async def get(self, path: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        async with self.http.get(self.base + path, headers=kw.pop("headers", self.auth)) as r:
            return r.status, await r.json()

    async def post(self, path: str, body: Any = None, **kw: Any) -> tuple[int, dict[str, Any]]:
        headers = kw.pop("headers", self.auth)
        async with self.http.post(self.base + path, json=body, headers=headers) as r:
            return r.status, await r.json()

    def card(self, index: int = -1) -> dict[str, Any]:
        return self.bot.posted(index)

    def value(self, index: int = -1) -> str:
        return str(self.card(index)["blocks"][-1]["elements"][0]["value"])


async def escalated_to_a_refusing_channel(
    jobs: Jobs, channel: str
) -> tuple[Jobs, dict[str, Any], Scheduler]:
    """A request escalated to Bob in ``channel`` an hour on, Slack refusing its card there
    (the app is not in it): the client that asked, its answer, and the scheduler."""
    jobs = await jobs.as_client("weekly-cleanup", (CHANNEL, channel))
    jobs.bot.slack.not_in.add(channel)
    status, made = await jobs.ask(
        approvers=[ALICE],
        expires_in=3600,
        on_expiry="escalate",
        escalate_channel=channel,
        escalate_to=[BOB],
    )
    assert status == 201, made
    scheduler = Scheduler(jobs.bot.services)
    jobs.bot.clock.advance(timedelta(seconds=3600))
    await scheduler.tick()
    return jobs, made, scheduler
