"""The HTTP server of a process: the operator endpoints ``/healthz``, ``/readyz`` and
``/metrics``, the requests API, the runs API when its token is set, and in HTTP mode
Slack's events route.

HTTP mode serves them beside ``/slack/events``; Socket Mode serves them alone, so a
process in either mode can be probed and scraped. ``/readyz`` checks Redis plus any
mode-specific ``Check`` (in Socket Mode, the connection to Slack).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from pydantic import SecretStr
from slack_bolt.async_app import AsyncApp

from bot.api.agui import AGUI_PATH, add_agui_routes
from bot.api.auth import Authenticator
from bot.api.bodies import MAX_BODY
from bot.api.json_errors import json_errors
from bot.api.open_calls import OPEN_CALLS, OpenCalls
from bot.api.openapi import add_openapi_route
from bot.api.requests import add_requests_routes
from bot.api.runs import RUNS_PATH, add_runs_routes
from bot.services import Services
from bot.slack.events import add_events_route
from storage.errors import StorageError

Check = Callable[[], Awaitable[str | None]]
"""A readiness check: None when healthy, else what is wrong."""

log = logging.getLogger(__name__)


class PathAccessLogger(AbstractAccessLogger):
    """The access log without query strings: a token sent as ``?token=...`` by mistake
    must not reach the log (aiohttp's default logs the whole request line)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %d %.1f ms',
            request.remote,
            request.method,
            request.path,
            response.status,
            time * 1000,
        )


def web_app(
    app: AsyncApp,
    services: Services,
    *,
    signing_secret: str,
    checks: tuple[Check, ...] = (),
    api_token: SecretStr | None = None,
) -> web.Application:
    """HTTP mode's application: Slack's events for ``app`` and the operator endpoints."""
    web_app = operator_app(services, checks=checks, api_token=api_token)
    add_events_route(web_app, app, services, signing_secret=signing_secret)
    return web_app


def operator_app(
    services: Services,
    *,
    checks: tuple[Check, ...] = (),
    api_token: SecretStr | None = None,
) -> web.Application:
    """An aiohttp application serving the operator endpoints and the APIs (Socket Mode)."""
    app = web.Application(client_max_size=MAX_BODY, middlewares=[json_errors])
    add_operator_routes(app, services, checks=checks)
    auth = Authenticator(services.storage, admin_token=api_token)
    open_calls = app[OPEN_CALLS] = OpenCalls(services.limits.open_calls)
    add_requests_routes(app, services, auth=auth, open_calls=open_calls)
    add_openapi_route(app)
    if api_token is not None:
        add_runs_routes(app, services, token=api_token, open_calls=open_calls)
        add_agui_routes(app, services, token=api_token, open_calls=open_calls)
    else:
        for path in (RUNS_PATH, RUNS_PATH + "/{agent}/{thread_id}", AGUI_PATH + "/{agent}"):
            app.router.add_route("*", path, _api_off)
    return app


async def _api_off(_: web.Request) -> web.Response:
    """The runs and AG-UI APIs start agents, so they are served only with a token."""
    error = "this API is off: it is served when SIGNOFF_API_TOKEN is set"
    return web.json_response({"error": error}, status=404)


def add_operator_routes(
    app: web.Application,
    services: Services,
    *,
    checks: tuple[Check, ...] = (),
) -> None:
    """Add ``/healthz``, ``/readyz`` (Redis, then each of ``checks``) and ``/metrics``."""

    async def healthz(_: web.Request) -> web.Response:
        if services.stopped_loops:
            stopped = ", ".join(sorted(services.stopped_loops))
            return web.Response(status=503, text=f"background loops stopped: {stopped}\n")
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        problems = [p for p in [await _redis(services), *[await c() for c in checks]] if p]
        if problems:
            return web.Response(status=503, text="\n".join(problems) + "\n")
        return web.Response(text="ready\n")

    async def metrics_page(_: web.Request) -> web.Response:
        storage = services.storage
        try:
            pending: int | None = await storage.queries.pending_count()
            lag: int | None = await storage.resume.lag()
            clicks: int | None = await storage.clicks.lag()
        except StorageError:
            pending = lag = clicks = None
        text = services.metrics.render(
            pending=pending,
            queue_lag=lag,
            click_backlog=clicks,
            damaged_read=storage.queries.damaged_seen,
            loops_failing=len(services.outage.failing),
        )
        return web.Response(text=text, headers={"Content-Type": EXPOSITION})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_page)


EXPOSITION = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus' text exposition format, named by the content type its scrapers expect."""


async def _redis(services: Services) -> str | None:
    """Why Redis is not ready, for anyone who asks: no address or driver error, which the
    log keeps."""
    try:
        await services.storage.client.ping()
    except StorageError as exc:
        log.warning("/readyz: %s", exc)
        return "redis: not reachable (this Signoff process's log says why)"
    return None
