"""`Sandbox`: the whole stand-in workspace behind one aiohttp server on a free port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from aiohttp import web

from .admin import Admin
from .browser_guard import OwnOrigins, browser_guard
from .config import Timing, WorkspaceSeed, demo_workspace
from .delivery import Ack, Delivery, Outbound
from .faults import Faults
from .ids import Ids
from .interactions import Interactions
from .pageapi import PageApi
from .persistence import StateFile
from .response_urls import ResponseUrls
from .socket_mode import SocketModeHub
from .triggers import Triggers
from .webapi import WebApi
from .webapi.context import ApiContext
from .workspace import Workspace

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
# The page loads only its own files: no inline script or style, no plugins, no <base>, and
# no other site may frame it (a framed page could be clicked through).
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_T = TypeVar("_T")


class Sandbox:
    """A local Slack workspace: Web API, signed deliveries, Socket Mode and a web page.

    `async with Sandbox() as sb:` listens on a free port; point the app's client at
    `sb.api_url` with `sb.bot_token`, and set `sb.request_url` to where the app listens.
    With `state_file` the workspace's messages are kept there and restored on the next start.
    """

    def __init__(
        self,
        *,
        seed: WorkspaceSeed | None = None,
        timing: Timing | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        request_url: str | None = None,
        state_file: Path | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._own_origins = OwnOrigins(host)
        self.timing = timing or Timing()
        self.workspace = Workspace(seed or demo_workspace(), ids=Ids())
        self.faults = Faults()
        self._hub = SocketModeHub(app_id=self.workspace.app.app_id)
        self._triggers = Triggers(ttl=self.timing.trigger_ttl)
        self._delivery = Delivery(
            signing_secret=self.workspace.app.signing_secret,
            faults=self.faults,
            hub=self._hub,
            ack_timeout=self.timing.ack_timeout,
            event_retry_delays=self.timing.event_retry_delays,
        )
        self._delivery.request_url = request_url
        self._response_urls = ResponseUrls(
            self.workspace, ttl=self.timing.response_url_ttl, max_uses=self.timing.response_url_uses
        )
        self.interactions = Interactions(
            self.workspace,
            delivery=self._delivery,
            triggers=self._triggers,
            response_urls=self._response_urls,
        )
        self._state = StateFile(state_file) if state_file else None
        self._saver: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # -- what an app needs -------------------------------------------------------

    @property
    def api_url(self) -> str:
        """The `base_url` for slack-sdk's clients (ends with `/api/`)."""
        return f"{self.base_url}/api/"

    @property
    def bot_token(self) -> str:
        return self.workspace.app.bot_token

    @property
    def app_token(self) -> str:
        return self.workspace.app.app_token

    @property
    def signing_secret(self) -> str:
        return self.workspace.app.signing_secret

    @property
    def request_url(self) -> str | None:
        """Where HTTP deliveries go (the app's `/slack/events`); Socket Mode wins when connected."""
        return self._delivery.request_url

    @request_url.setter
    def request_url(self, url: str | None) -> None:
        self._delivery.request_url = url

    @property
    def socket_connections(self) -> int:
        """How many Socket Mode connections the app has open."""
        return self._hub.connected

    @property
    def deliveries(self) -> list[tuple[Outbound, Ack]]:
        """Every delivery so far with the app's answer, oldest first."""
        return list(self._delivery.log)

    async def redeliver(self, index: int = -1) -> Ack:
        """Replay delivery `index` of `deliveries` (default: the last) to test deduplication."""
        return await self._delivery.redeliver(index)

    async def wait_for(self, probe: Callable[[], _T | None], *, within: float = 5.0) -> _T:
        """Wait until `probe()` returns something truthy (tests: no sleeping, no polling loops)."""
        return await self.workspace.wait_for(probe, within=within)

    # -- lifecycle -----------------------------------------------------------------

    def _api_context(self, request: web.Request) -> ApiContext:
        return ApiContext(
            workspace=self.workspace,
            triggers=self._triggers,
            hub=self._hub,
            origin=str(request.url.origin()),
        )

    def build_app(self) -> web.Application:
        """The aiohttp application; `start()` serves it."""
        app = web.Application(middlewares=[browser_guard(self._own_origins)])
        webapi = WebApi(context=self._api_context, faults=self.faults)
        app.router.add_route("*", "/api/{method}", webapi.handle)
        app.router.add_get("/socket-mode/{ticket}", self._hub.handle)
        app.router.add_post("/response/{key}", self._response_urls.handle)
        app.add_routes(PageApi(self.workspace, self.interactions).routes())
        app.add_routes(Admin(faults=self.faults, delivery=self._delivery).routes())
        app.router.add_get("/", self._index)
        app.router.add_get("/archives/{channel}/{message}", self._index)
        app.router.add_static("/static/", STATIC)
        app.on_shutdown.append(self._on_shutdown)
        return app

    async def _index(self, _: web.Request) -> web.FileResponse:
        return web.FileResponse(
            STATIC / "index.html", headers={"Content-Security-Policy": PAGE_POLICY}
        )

    async def _on_shutdown(self, _: web.Application) -> None:
        await self._hub.close()
        # Answer the pages' long polls now, so stopping never waits out shutdown_timeout.
        self.workspace.touch()

    async def start(self) -> None:
        """Listen (on a free port unless one was given) and start delivering."""
        if self._state is not None:
            self._state.load(self.workspace)
            self._saver = asyncio.create_task(self._state.run(self.workspace), name="sandbox state")
        await self._delivery.start()
        self._runner = web.AppRunner(self.build_app(), shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"
        self._own_origins.port = port
        self._response_urls.origin = self.base_url
        log.info("sandbox listening on %s", self.base_url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._delivery.stop()
        if self._state is not None and self._saver is not None:
            self._saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._saver
            self._saver = None
            self._state.save(self.workspace)  # only a workspace that was loaded, never over it

    async def __aenter__(self) -> Sandbox:
        try:
            await self.start()
        except BaseException:
            await self.stop()  # what started (the delivery's HTTP session) is closed
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
