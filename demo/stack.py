"""The whole demo in one process: embedded Redis, the sandbox workspace and the bot.

The bot runs in HTTP mode exactly as it would against Slack; only its Web API base URL,
token, signing secret and request URL point at the sandbox. Everything lives under one
data directory: Redis's append-only file, the sandbox's messages, the agents' scratch
files. So a restart shows what was left pending, and it can still be decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from aiohttp import web

from bot.process.loops import Loops
from bot.process.settings import Settings
from bot.process.slack_client import close_client, make_client
from bot.process.web import PathAccessLogger, web_app
from bot.process.wiring import make_services
from bot.services import Services
from bot.services.callbacks import CallbackPolicy
from bot.slack.app import build_app
from bot.slack.events import EVENTS_PATH
from sandbox import Sandbox, demo_workspace
from storage import Storage, connect
from storage.api_clients import ApiClient
from storage.embedded import EmbeddedRedis
from storage.file_lock import FileLock

from .agents import check_workspace, demo_agents
from .errors import DemoError
from .places import API_PORT_FILE, GATE_TOKEN_FILE, last_port, remember_port

log = logging.getLogger(__name__)

WELCOME_CHANNEL = "C0GENERAL"
GATE_CLIENT = "demo-job"
DEMO_SETTINGS = ("SIGNOFF_API_TOKEN", "SIGNOFF_WEBHOOK_ALLOW")
"""The environment settings the demo reads: the runs and AG-UI APIs, local webhooks."""
GATE_CHANNEL = "C0OPS"
GATE_APPROVERS = ("U0ALICE", "U0BOB")
WELCOME = (
    "*Welcome to the Signoff demo.* Type a command below, then approve or deny as one of "
    "the people in *Acting as*:\n"
    "• `/signoff run file-cleanup` deletes old files once someone approves\n"
    "• `/signoff run oncall-cleanup` needs two on-call approvals (see #ops)\n"
    "• `/signoff run email` lets you edit the email before it is sent\n"
    "• `/signoff` lists what is waiting for you"
)


class DemoStack:
    """``async with DemoStack(data_dir=...) as stack:`` serves the demo at ``stack.url``."""

    def __init__(self, *, data_dir: Path, port: int = 0, host: str = "127.0.0.1") -> None:
        self.data_dir = data_dir
        self._host = host
        seed = demo_workspace()  # with Signoff's one command, as its manifest installs it
        seed = dataclasses.replace(seed, app=dataclasses.replace(seed.app, commands=("/signoff",)))
        self._specs = demo_agents(data_dir)
        check_workspace(self._specs, seed)
        self.sandbox = Sandbox(
            seed=seed, host=host, port=port, state_file=data_dir / "workspace.json"
        )
        self._redis = EmbeddedRedis(data_dir / "redis")
        self._storage: Storage | None = None
        self._services: Services | None = None
        self._runner: web.AppRunner | None = None
        self._loops: Loops | None = None
        self._lock = FileLock(data_dir / "demo.lock")
        self._api_url = ""
        self._gate_token = ""
        self.webhook_secret = ""
        """The secret the demo job's webhooks are signed with (``signoff.webhooks.verify``)."""
        self.redis_url = ""
        """Where its Redis answers, for other ``signoff`` commands (``audit``, ``token``)."""

    @property
    def url(self) -> str:
        """The workspace page: the one address a person needs."""
        return self.sandbox.base_url + "/"

    @property
    def port(self) -> int:
        """The page's port, once started."""
        return int(self.sandbox.base_url.rsplit(":", 1)[1])

    @property
    def signoff(self) -> str:
        """The ``signoff`` command of the demo's environment, quoted for a shell."""
        return shlex.quote(str(Path(sys.executable).parent / "signoff"))

    @property
    def gate_command(self) -> str:
        """A ready-to-paste ``signoff gate`` gating a harmless command, with a token of the
        demo's own API client (kept in the demo's data directory, like its Redis)."""
        gate = [
            "gate",
            *("--channel", GATE_CHANNEL, "--approvers", ",".join(GATE_APPROVERS)),
            *("--title", "Clear the demo scratch files", "--editable", "days=30"),
            "--",
            *(
                "sh",
                "-c",
                'echo "approved by $SIGNOFF_DECIDED_BY: a real job would now clear files '
                'older than $SIGNOFF_PARAM_DAYS days"',
            ),
        ]
        env = f"SIGNOFF_URL={self._api_url} SIGNOFF_TOKEN={self._gate_token}"
        return f"{env} {self.signoff} {shlex.join(gate)}"

    async def _gate_client(self, storage: Storage) -> tuple[str, ApiClient]:
        """The token of the demo job's API client, and the client: the one of the last
        start while it still authenticates, so a gate that was waiting then still gets its
        answer."""
        kept = self.data_dir / GATE_TOKEN_FILE
        with contextlib.suppress(OSError):
            token = kept.read_text().strip()
            client = await storage.api_clients.authenticate(token)
            if client is not None:
                return token, client
        await storage.api_clients.revoke(GATE_CLIENT)
        client, token = await storage.api_clients.create(
            GATE_CLIENT, channels=(GATE_CHANNEL,), now=datetime.now(UTC)
        )
        kept.touch(mode=0o600)
        kept.write_text(token + "\n")
        return token, client

    async def start(self) -> None:
        """Start Redis and the sandbox side by side, then the bot, then point Slack at it."""
        self._take_lock()
        # Valkey boots in its own process; wait for it in a thread while the sandbox starts.
        redis_url = asyncio.ensure_future(asyncio.to_thread(self._redis.start))
        try:
            await self.sandbox.start()
        finally:
            self.redis_url = await redis_url
        self._storage = await connect(self.redis_url)
        # The sandbox is the workspace; of the rest, what a local trial can use.
        settings = Settings.from_env(
            {
                **{name: os.environ[name] for name in DEMO_SETTINGS if os.environ.get(name)},
                "SLACK_BOT_TOKEN": self.sandbox.bot_token,
                "SLACK_SIGNING_SECRET": self.sandbox.signing_secret,
                "SIGNOFF_SLACK_API_URL": self.sandbox.api_url,
            }
        )
        self._services = make_services(
            client=make_client(settings),
            storage=self._storage,
            specs=self._specs,
            callbacks=CallbackPolicy(allow=settings.webhook_hosts),
        )
        secret = self.sandbox.signing_secret
        app = build_app(self._services, signing_secret=secret)
        server = web_app(app, self._services, signing_secret=secret, api_token=settings.api_token)
        self._runner = web.AppRunner(server, access_log_class=PathAccessLogger)
        await self._runner.setup()
        api_port = last_port(self.data_dir, self._host, name=API_PORT_FILE)
        await web.TCPSite(self._runner, self._host, api_port).start()
        host, port = self._runner.addresses[0][:2]
        remember_port(self.data_dir, port, name=API_PORT_FILE)
        self._api_url = f"http://{host}:{port}"
        self.sandbox.request_url = f"{self._api_url}{EVENTS_PATH}"
        self._gate_token, gate_client = await self._gate_client(self._storage)
        self.webhook_secret = gate_client.webhook_secret
        self._loops = Loops(self._services, workers=2)
        self._loops.start()
        await self._welcome()
        log.info("demo ready at %s (bot at %s)", self.url, self.sandbox.request_url)

    def _take_lock(self) -> None:
        """One demo per data directory: two would share (and corrupt) its files."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self._lock.acquire():
            raise DemoError(
                f"another demo is running on {self.data_dir}; stop it, or pass --data-dir"
            )

    async def _welcome(self) -> None:
        """Greet a new workspace once, from the bot, with what to try."""
        assert self._services is not None
        if self.sandbox.workspace.all_messages():
            return
        await self._services.client.chat_postMessage(
            channel=WELCOME_CHANNEL, text=WELCOME, unfurl_links=False
        )

    async def stop(self) -> None:
        """Stop in dependency order: the bot's loops and server, the sandbox, then Redis."""
        if self._loops is not None:
            await self._loops.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.sandbox.stop()
        if self._services is not None:
            await close_client(self._services.client)
        if self._storage is not None:
            await self._storage.close()
        self._redis.stop()
        self._lock.release()

    async def __aenter__(self) -> DemoStack:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
