"""The bot under test: a real aiohttp server on a free port, real Redis, a fake Web API."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
import shutil
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from agui_endpoint import CLIENT, TOKEN, Endpoint
from aiohttp import web
from aiohttp.test_utils import TestServer
from fakes import BOT_TOKEN, SIGNING_SECRET, FakeSlack, ManualClock
from harness import ALICE, BOB, CAROL, CHANNEL, Harness, ToolLog, cleanup_spec
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import SecretStr
from requests_jobs import ADMIN_TOKEN, Jobs
from socket_bot import SocketBot
from webhook_receiver import Hooked, Receiver

from bot.agents.policy import AgentSpec, Policy
from bot.api.agui import AGUI_PATH
from bot.process.loops import Loops
from bot.process.settings import Settings
from bot.process.slack_client import close_client, make_client
from bot.process.web import operator_app, web_app
from bot.process.wiring import make_services
from bot.services.callbacks import CallbackPolicy
from bot.services.limits import ApiLimits
from bot.slack.app import build_app
from storage import EmbeddedRedis, Storage, connect
from storage.webhooks import LeasedDelivery

BACKOFF = 0.01
"""The bots' Slack client retries as often as an operator's, without its seconds of backoff."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A Redis of the test's own, which it stops, or freezes, and starts again; a module
    puts the bot on it by overriding ``storage`` with ``own_storage``."""
    own = EmbeddedRedis(tmp_path / "redis")
    own.start()
    yield own
    own.stop()


@pytest.fixture
def retries() -> int:
    """How often ``own_storage`` tries a lost connection again: as in production (about
    1.2 s), unless a test whose point is not how long a call waits sets fewer."""
    return 4


@pytest.fixture
async def own_storage(
    server: EmbeddedRedis, key_prefix: str, retries: int
) -> AsyncIterator[Storage]:
    """Storage on the test's own ``server``."""
    store = await connect(server.url, prefix=key_prefix, retries=retries)
    yield store
    await store.close()


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    await fake.start()
    for user, tz in ((ALICE, "Europe/Paris"), (BOB, "America/New_York"), (CAROL, "UTC")):
        fake.add_user(user, tz=tz)
    yield fake
    await fake.close()


@pytest.fixture
async def make_bot(slack: FakeSlack, storage: Storage) -> AsyncIterator[Callable[..., Any]]:
    """Start bot processes sharing one Redis and one fake Slack; all stopped at the end."""
    started: list[tuple[Harness, TestServer]] = []

    async def start(
        policy: Policy | None = None,
        *,
        workers: int = 1,
        deciders: int = 1,
        reclaim_after: float = 60.0,
        then: tuple[dict[str, Any], ...] = (),
        started_by: tuple[str, ...] = (),
        spec: AgentSpec | None = None,
        also: tuple[AgentSpec, ...] = (),
        admins: tuple[str, ...] = (),
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
            client=make_client(settings, retries=3, backoff=BACKOFF),
            storage=storage,
            specs=[spec or cleanup_spec(log, the_policy, then=then, started_by=started_by), *also],
            clock=clock,
            admins=admins,
            # The tests' webhook receivers listen on this machine, on ports of their own.
            callbacks=CallbackPolicy(allow=frozenset({"127.0.0.1"})),
        )
        app = build_app(services, signing_secret=SIGNING_SECRET)
        server = TestServer(
            web_app(app, services, signing_secret=SIGNING_SECRET), host="127.0.0.1", port=0
        )
        await server.start_server()
        loops = Loops(
            services,
            workers=workers,
            deciders=deciders,
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
            agent=spec.name if spec else "cleanup",
        )
        started.append((harness, server))
        return harness

    yield start
    for harness, server in started:
        await harness.loops.stop()
        await harness.http.close()
        await server.close()
        await close_client(harness.services.client)


@pytest.fixture
async def jobs(make_bot: Any) -> AsyncIterator[Jobs]:
    """A bot serving the requests API, and the token of its client ``nightly-cleanup``."""
    bot: Harness = await make_bot()
    storage = bot.services.storage
    _, token = await storage.api_clients.create(
        "nightly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    server = TestServer(
        operator_app(bot.services, api_token=SecretStr(ADMIN_TOKEN)), host="127.0.0.1", port=0
    )
    await server.start_server()
    async with aiohttp.ClientSession() as http:
        yield Jobs(bot=bot, base=f"http://127.0.0.1:{server.port}", http=http, token=token)
    await server.close()


@pytest.fixture
async def limited_jobs(
    make_bot: Any,
) -> AsyncIterator[Callable[[ApiLimits], Awaitable[tuple[Jobs, web.Application]]]]:
    """Starts a bot serving the requests API under ``limits``, with the token of its client
    ``nightly-cleanup``, served as ``signoff serve`` serves it (a handler is not cancelled
    when its client goes away); answers the jobs and the application."""
    runners: list[web.AppRunner] = []

    async def start(limits: ApiLimits) -> tuple[Jobs, web.Application]:
        bot: Harness = await make_bot()
        services = dataclasses.replace(bot.services, limits=limits)
        _, token = await services.storage.api_clients.create(
            "nightly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC)
        )
        app = operator_app(services, api_token=SecretStr(ADMIN_TOKEN))
        runner = web.AppRunner(app)
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        return Jobs(bot=bot, base=base, http=bot.http, token=token), app

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def endpoint_for(make_bot: Any) -> AsyncIterator[Callable[..., Awaitable[Endpoint]]]:
    """Starts the endpoint of a bot whose agent has ``policy`` (the harness's default), or
    is ``spec``, with the agents ``also``."""
    node = shutil.which("node")
    installed = CLIENT.parent / "node_modules" / "@ag-ui" / "client" / "package.json"
    if node is None or not installed.exists():
        pytest.fail("Node and @ag-ui/client are needed: ./run test installs both", pytrace=False)
    runners: list[web.AppRunner] = []

    async def start(
        policy: Policy | None = None,
        spec: AgentSpec | None = None,
        also: tuple[AgentSpec, ...] = (),
        then: tuple[dict[str, Any], ...] = (),
    ) -> Endpoint:
        bot: Harness = await make_bot(policy, spec=spec, also=also, then=then)
        # Served as `signoff serve` serves it (a handler is not cancelled when its client
        # goes away), not as aiohttp's TestServer does.
        runner = web.AppRunner(operator_app(bot.services, api_token=SecretStr(TOKEN)))
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = runner.addresses[0][1]
        return Endpoint(bot=bot, url=f"http://127.0.0.1:{port}{AGUI_PATH}/cleanup")

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def endpoint(endpoint_for: Callable[..., Awaitable[Endpoint]]) -> Endpoint:
    return await endpoint_for()


@pytest.fixture
async def socket_bot(make_bot: Any) -> AsyncIterator[Callable[..., Awaitable[SocketBot]]]:
    """Starts bots (``make_bot``'s options) connected to the fake Slack over Socket Mode."""
    started: list[SocketBot] = []

    async def start(**options: Any) -> SocketBot:
        bot = SocketBot(await make_bot(**options))
        await bot.connect()
        started.append(bot)
        return bot

    yield start
    for bot in started:
        await bot.close()


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """A LangGraph checkpointer on SQLite, for the graphs of the LangGraph adapter's tests."""
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.sqlite")) as checkpoints:
        yield checkpoints


@pytest.fixture
async def hooked(make_bot: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Hooked]:
    """A bot whose client ``key-rotation`` names a receiver; each retry or done is noted."""
    bot: Harness = await make_bot()
    outbox = bot.services.storage.webhooks
    rescheduled, retry, done = asyncio.Condition(), outbox.retry, outbox.done
    outcomes: list[str] = []

    async def tell(what: str) -> None:
        async with rescheduled:
            outcomes.append(what)
            rescheduled.notify_all()

    async def retry_and_tell(leased: LeasedDelivery, *, at: datetime) -> bool:
        kept = await retry(leased, at=at)
        await tell("retried")
        return kept

    async def done_and_tell(delivery_id: str) -> None:
        await done(delivery_id)
        await tell("done")

    monkeypatch.setattr(outbox, "retry", retry_and_tell)
    monkeypatch.setattr(outbox, "done", done_and_tell)
    receiver = Receiver()
    hook_app = web.Application()
    hook_app.router.add_post("/hook", receiver.handle)
    hook_server = TestServer(hook_app, host="127.0.0.1", port=0)
    await hook_server.start_server()
    client, token = await bot.services.storage.api_clients.create(
        "key-rotation", now=datetime.now(UTC)
    )
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()

    async with aiohttp.ClientSession() as http:
        yield Hooked(
            bot=bot,
            base=f"http://127.0.0.1:{api.port}",
            http=http,
            token=token,
            secret=client.webhook_secret,
            receiver=receiver,
            hook=f"http://127.0.0.1:{hook_server.port}/hook",
            rescheduled=rescheduled,
            outcomes=outcomes,
        )
    await api.close()
    await hook_server.close()


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """A stream to log to; the root logger's handlers are put back afterwards."""
    stream = io.StringIO()
    root = logging.getLogger()
    kept = root.handlers[:], root.level
    yield stream
    root.handlers = kept[0]
    root.setLevel(kept[1])  # which also forgets the levels loggers had found in effect


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose listener's backlog is full: a new connection waits, never refused."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        yield port
        for filler in fillers:
            filler.close()
