"""The bot under test: a real aiohttp server on a free port, real Redis, a fake Web API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from fakes import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlack,
    ManualClock,
    OneToolModel,
    click_payload,
    form_body,
    sign,
    submit_payload,
)

from agent_runtime import Agent, tool
from agent_runtime.session import SessionStore
from bot.app import build_app
from bot.policy import AgentSpec, Policy
from bot.process import Loops, make_services
from bot.runs import Place, start_run
from bot.server import EVENTS_PATH, web_app
from bot.services import Services
from bot.settings import Settings
from bot.slack_client import close_client, make_client
from storage import Storage, connect

CHANNEL = "C0OPS"
ALICE, BOB, CAROL, MALLORY = "U0ALICE", "U0BOB", "U0CAROL", "U0MALLORY"


@dataclass
class ToolLog:
    """Every call of the guarded tool, so tests can say it ran once, or never."""

    calls: list[dict[str, Any]] = field(default_factory=list)


def cleanup_spec(log: ToolLog, policy: Policy) -> AgentSpec:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        log.calls.append({"paths": paths})
        return f"deleted {len(paths)} file(s)"

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": ["/tmp/a", "/tmp/b"]}),
            tools=[delete_files],
            interrupt_on={"delete_files": True},
            session_store=store,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=policy)


@dataclass
class Harness:
    """One running bot: its URL, services, fake Slack, clock and the tool's call log."""

    url: str
    services: Services
    slack: FakeSlack
    clock: ManualClock
    tool_log: ToolLog
    http: aiohttp.ClientSession
    loops: Loops

    async def start(self, prompt: str = "clean up", *, requested_by: str = CAROL) -> str:
        """Start a cleanup run; the record id of its interrupt once posted."""
        place = Place(channel=CHANNEL, thread_ts=None, requested_by=requested_by)
        await start_run(self.services, "cleanup", prompt, place=place)
        await self.slack.wait_calls("chat.postMessage")
        posts = self.slack.called("chat.postMessage")
        value = posts[-1]["blocks"][-1]["elements"][0]["value"]
        return str(value)

    def posted(self, index: int = -1) -> dict[str, Any]:
        return self.slack.called("chat.postMessage")[index]

    async def send(self, payload: dict[str, Any], **sign_kw: Any) -> aiohttp.ClientResponse:
        body = form_body(payload)
        async with self.http.post(
            self.url + EVENTS_PATH, data=body.encode(), headers=sign(body, **sign_kw)
        ) as response:
            await response.read()
            return response

    async def click(
        self,
        action_id: str,
        value: str,
        *,
        user: str,
        channel: str = CHANNEL,
        message_ts: str | None = None,
    ) -> aiohttp.ClientResponse:
        ts = message_ts or self.message_ts()
        return await self.send(
            click_payload(
                action_id=action_id, value=value, user=user, channel=channel, message_ts=ts
            )
        )

    async def submit(self, callback_id: str, value: str, *, user: str, text: str | None) -> Any:
        payload = submit_payload(callback_id=callback_id, metadata=value, user=user, text=text)
        body = form_body(payload)
        async with self.http.post(
            self.url + EVENTS_PATH, data=body.encode(), headers=sign(body)
        ) as response:
            text_body = await response.text()
            return response.status, text_body

    def thread(self) -> list[str]:
        """Texts posted in the first interrupt message's thread."""
        root = self.message_ts()
        posts = self.slack.called("chat.postMessage")
        return [str(p.get("text")) for p in posts if p.get("thread_ts") == root]

    async def finished(self) -> str:
        """Wait for the run's final result in the thread, and return it."""

        def done() -> bool:
            return any(t.startswith(("Finished", "Stopped")) for t in self.thread())

        await self.slack.wait_for(done, what="the run's final result in the thread")
        return next(t for t in self.thread() if t.startswith(("Finished", "Stopped")))

    def record_id(self, value: str) -> str:
        return value.split(" ")[0]

    def message_ts(self, index: int = 0) -> str:
        return str(self.slack.answers("chat.postMessage")[index]["ts"])


Factory = Callable[..., Any]


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    await fake.start()
    for user, tz in ((ALICE, "Europe/Paris"), (BOB, "America/New_York"), (CAROL, "UTC")):
        fake.add_user(user, tz=tz)
    yield fake
    await fake.close()


@pytest.fixture
async def storage(redis_url: str, key_prefix: str) -> AsyncIterator[Storage]:
    store = await connect(redis_url, prefix=key_prefix)
    yield store
    await store.close()


@pytest.fixture
async def make_bot(slack: FakeSlack, storage: Storage) -> AsyncIterator[Callable[..., Any]]:
    """Start bot processes sharing one Redis and one fake Slack; all stopped at the end."""
    started: list[tuple[Harness, TestServer]] = []

    async def start(
        policy: Policy | None = None, *, workers: int = 1, reclaim_after: float = 60.0
    ) -> Harness:
        settings = Settings.from_env(
            {
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "SIGNOFF_SLACK_API_URL": slack.api_url,
            }
        )
        clock = ManualClock()
        log = ToolLog()
        the_policy = policy or Policy(channel=CHANNEL, users=(ALICE, BOB))
        services = make_services(
            client=make_client(settings, retries=3),
            storage=storage,
            specs=[cleanup_spec(log, the_policy)],
            clock=clock,
        )
        app = build_app(services, signing_secret=SIGNING_SECRET)
        server = TestServer(
            web_app(app, services, signing_secret=SIGNING_SECRET), host="127.0.0.1", port=0
        )
        await server.start_server()
        loops = Loops(
            services,
            workers=workers,
            scheduler=False,
            reclaim_after=timedelta(seconds=reclaim_after),
        )
        loops.start()
        harness = Harness(
            url=f"http://127.0.0.1:{server.port}",
            services=services,
            slack=slack,
            clock=clock,
            tool_log=log,
            http=aiohttp.ClientSession(),
            loops=loops,
        )
        started.append((harness, server))
        return harness

    yield start
    for harness, server in started:
        await harness.loops.stop()
        await harness.http.close()
        await server.close()
        await close_client(harness.services.client)


__all__ = ["ALICE", "BOB", "CAROL", "CHANNEL", "MALLORY", "Harness", "web"]
