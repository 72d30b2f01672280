"""``signoff serve | socket | worker | run | audit | token``: the bot's command line.

``serve`` answers Slack over HTTP, ``socket`` over Socket Mode; both serve ``/healthz``,
``/readyz``, ``/metrics`` and the HTTP APIs on ``SIGNOFF_PORT`` (``socket`` no events
route) and run the click deciders, the resume workers and the scheduler in-process; with
``--no-workers`` only the scheduler: clicks are acknowledged and queued in Redis for a
``worker``, which runs only the loops, to scale out, at a lower CPU priority
(``SIGNOFF_WORKER_NICE``), serving the operator endpoints only with ``--port``. ``run``
starts one agent run and returns once it has finished or stopped for approval; ``audit``
prints the audit trail; ``token`` manages the named clients of the requests API
(``signoff gate`` is ``signoff.gate``). A bad setting stops startup with one line
naming it, as an agent whose build fails stops ``run``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Sequence

from aiohttp import web

from bot.errors import BotError
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.runs.unposted import unposted, why_unposted
from bot.services import Services
from bot.slack.app import build_app
from bot.slack.socket_mode import TimedSocketModeHandler, connection_check, watch_connection
from storage.errors import StorageError

from .admin_commands import audit_command, token_command
from .builds import build_agent, build_agents
from .cli_args import moment, port_number
from .heap import freeze_startup_heap
from .logs import configure_logging
from .loops import Loops, lower_priority
from .settings import Settings
from .web import PathAccessLogger, add_operator_routes, operator_app, web_app
from .wiring import open_services

log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``signoff`` console script."""
    args = _parser().parse_args(argv)
    try:
        configure_logging(os.environ)
        settings = Settings.from_env(os.environ)
        return asyncio.run(_main(settings, args))
    except (BotError, StorageError) as exc:
        print(f"signoff: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (`signoff audit | head`); silence the flush at exit too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


_REDIS = "REDIS_URL (unset: an embedded Redis, its data in SIGNOFF_DATA_DIR)"
_SETTINGS = {
    "serve": f"SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, {_REDIS}, SIGNOFF_HOST and SIGNOFF_PORT "
    "(default 0.0.0.0:3000), SIGNOFF_AGENTS",
    "socket": f"SLACK_BOT_TOKEN, SLACK_APP_TOKEN, {_REDIS}, SIGNOFF_HOST and SIGNOFF_PORT "
    "(default 0.0.0.0:3000, for /healthz, /readyz, /metrics and the HTTP APIs), SIGNOFF_AGENTS",
    "worker": f"SLACK_BOT_TOKEN, {_REDIS}, SIGNOFF_AGENTS",
    "run": f"SLACK_BOT_TOKEN, {_REDIS}, SIGNOFF_AGENTS",
    "audit": _REDIS,
    "token": f"{_REDIS}, SIGNOFF_WEBHOOK_ALLOW",
}
"""What each command reads from the environment, for its ``--help``."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="signoff", description="Slack approvals for agents")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("serve", "answer Slack over HTTP at /slack/events"),
        ("socket", "answer Slack over Socket Mode"),
        ("worker", "run only the click deciders, the resume workers and the scheduler"),
    ):
        command = _command(sub, name, help_text)
        command.add_argument("--agents", help="module declaring agents (default SIGNOFF_AGENTS)")
        if name != "worker":
            command.add_argument(
                "--no-workers",
                action="store_true",
                help="acknowledge clicks only: no in-process click deciders or resume workers",
            )
        else:
            command.add_argument(
                "--port",
                type=port_number,
                help="serve /healthz, /readyz and /metrics on this port of SIGNOFF_HOST "
                "(default: no HTTP)",
            )
    run = _command(sub, "run", "start one run of an agent")
    run.add_argument("agent", help="the agent's name, as the agents module declares it")
    run.add_argument("--channel", required=True, help="channel id for the run's messages")
    run.add_argument("--input", required=True, help="the prompt the agent starts from")
    run.add_argument(
        "--user",
        default="cli",
        help="who asked: a Slack user id, who may not approve their own request unless the "
        "policy allows it (default: cli, nobody in Slack)",
    )
    run.add_argument("--agents", help="module declaring agents (default SIGNOFF_AGENTS)")
    audit = _command(sub, "audit", "print the audit trail, oldest first, as JSON lines")
    audit.add_argument("--run", help="only the entries of this run id")
    audit.add_argument("--user", help="only what this user id did")
    audit.add_argument(
        "--since",
        type=moment,
        help="only entries from this time on: an ISO date or time (2026-11-24T09:00Z), "
        "or how long ago (30m, 12h, 7d)",
    )
    sub.add_parser("gate", help="ask for approval and run a command if approved (see --help)")
    token = _command(sub, "token", "create, revoke or list the API's named clients")
    token_sub = token.add_subparsers(dest="action", required=True)
    create = token_sub.add_parser("create", help="create a client; prints its token once")
    create.add_argument("name", help="shown on its requests as who asked")
    create.add_argument(
        "--channels", help="comma-separated channel ids it may use (left out: any channel)"
    )
    create.add_argument("--callback-url", help="webhook for its requests that name none")
    revoke = token_sub.add_parser("revoke", help="revoke a client's token")
    revoke.add_argument("name", help="the client's name, as token create made it")
    token_sub.add_parser(
        "list",
        help="the clients, their channels, when they were made, their requests pending "
        "against SIGNOFF_API_PENDING_REQUESTS and their webhook URL",
    )
    return parser


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    """Command ``name``, its ``--help`` saying what it does and the settings it reads."""
    reads = f"It reads its settings from the environment: {_SETTINGS[name]}"
    described = f"{help_text[0].upper()}{help_text[1:]}. {reads}; the README lists the rest."
    return sub.add_parser(name, help=help_text, description=described)


async def _main(settings: Settings, args: argparse.Namespace) -> int:
    """Run the command; SIGINT or SIGTERM, even during start-up, stops it cleanly."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    return await _COMMANDS[args.command](settings, args, stopping)


async def _serve(settings: Settings, args: argparse.Namespace, stopping: asyncio.Event) -> int:
    settings.require_http()
    secret = settings.signing_secret.get_secret_value() if settings.signing_secret else ""
    async with open_services(settings, agents=args.agents) as services:
        build_agents(services)
        app = build_app(services, signing_secret=secret)
        server = web_app(
            app,
            services,
            signing_secret=secret,
            api_token=settings.api_token,
        )
        runner = web.AppRunner(server, access_log_class=PathAccessLogger)
        await runner.setup()
        port = await _listen(runner, settings.host, settings.port)
        loops = _loops(services, settings, no_workers=args.no_workers)
        loops.start()
        freeze_startup_heap()
        log.info("serving Slack at http://%s:%d/slack/events", settings.host, port)
        log.info("%s are running", loops)
        try:
            await stopping.wait()
        finally:
            await runner.cleanup()  # first: the work a request in hand hands on is still done
            await loops.stop()
    return 0


async def _socket(settings: Settings, args: argparse.Namespace, stopping: asyncio.Event) -> int:
    settings.require_socket()
    assert settings.app_token is not None
    async with open_services(settings, agents=args.agents, socket_mode=True) as services:
        build_agents(services)
        app = build_app(services, signing_secret=None)
        handler = TimedSocketModeHandler(
            app,
            settings.app_token.get_secret_value(),
            web_client=services.client,
            acks=services.metrics.ack,
            deliveries=services.storage.deliveries,
        )
        # Probes reach /readyz from the start: not ready until the connection is up.
        checks = (connection_check(handler),)
        operator = operator_app(
            services,
            checks=checks,
            api_token=settings.api_token,
        )
        runner = web.AppRunner(operator, access_log_class=PathAccessLogger)
        await runner.setup()
        loops: Loops | None = None
        try:
            port = await _listen(runner, settings.host, settings.port)
            connecting = handler.connect_async()  # type: ignore[no-untyped-call]
            if not await _unless_stopped(connecting, stopping):
                await handler.close_async()  # type: ignore[no-untyped-call]
                return 0  # stopped while Slack was out of reach
            loops = _loops(services, settings, no_workers=args.no_workers)
            loops.start()
            freeze_startup_heap()
            watchdog = asyncio.create_task(watch_connection(handler))
            log.info(
                "connected to Slack over Socket Mode; /healthz, /readyz, /metrics and the "
                "HTTP APIs on http://%s:%d",
                settings.host,
                port,
            )
            log.info("%s are running", loops)
            try:
                await stopping.wait()
            finally:
                watchdog.cancel()
                await handler.close_after_acks()
        finally:
            # What Slack and the APIs handed over is answered before the loops stop: the
            # work it hands on (a run a command starts, an Undo) is then still done.
            await runner.cleanup()
            if loops is not None:
                await loops.stop()
    return 0


async def _unless_stopped(connecting: Awaitable[None], stopping: asyncio.Event) -> bool:
    """True once ``connecting`` is done; False when ``stopping`` came first (slack-sdk
    retries a Socket Mode connection for ever while Slack is out of reach)."""
    connected = asyncio.ensure_future(connecting)
    stopped = asyncio.ensure_future(stopping.wait())
    await asyncio.wait({connected, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if connected.done():
        connected.result()
        return True
    connected.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await connected
    return False


async def _listen(runner: web.AppRunner, host: str, port: int) -> int:
    """Serve ``runner`` on ``host:port`` and return the port (the one the system chose for
    0); a BotError naming the settings when it cannot (no such host, a port in use)."""
    try:
        await web.TCPSite(runner, host, port).start()
        return int(runner.addresses[0][1])
    except OSError as exc:
        await runner.cleanup()
        raise BotError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); check SIGNOFF_HOST "
            "and SIGNOFF_PORT (a worker's --port)"
        ) from exc


async def _worker(settings: Settings, args: argparse.Namespace, stopping: asyncio.Event) -> int:
    async with open_services(settings, agents=args.agents) as services:
        build_agents(services)
        runner = None
        if args.port is not None:
            operator = web.Application()
            add_operator_routes(operator, services)
            runner = web.AppRunner(operator, access_log_class=PathAccessLogger)
            await runner.setup()
            port = await _listen(runner, settings.host, args.port)
            log.info("/healthz, /readyz and /metrics on http://%s:%d", settings.host, port)
        loops = Loops(services, workers=max(settings.workers, 1))
        priority = lower_priority(settings.worker_nice)
        loops.start()
        freeze_startup_heap()
        log.info("%s are running %s", loops, priority)
        try:
            await stopping.wait()
        finally:
            await loops.stop()
            if runner is not None:
                await runner.cleanup()
    return 0


async def _run(settings: Settings, args: argparse.Namespace, stopping: asyncio.Event) -> int:
    """Start one run and say how it stopped: 1 when it failed (``error``), else 0."""
    async with open_services(settings, agents=args.agents) as services:
        _build(services, args.agent)
        place = Place(channel=args.channel, thread_ts=None, requested_by=args.user)
        result = await start_run(services, args.agent, args.input, place=place)
        await services.background.close()
        print(f"{result.stop_reason}: {result.message}".rstrip(": "))
        refused = await unposted(services, result.run_id, result.interrupts)
        for interrupt in result.interrupts:
            unseen = why_unposted(refused[interrupt.id]) if interrupt.id in refused else ""
            print(f"  waiting for approval: {interrupt.id} ({interrupt.name}){unseen}")
    return 1 if result.stop_reason == "error" else 0


def _build(services: Services, name: str) -> None:
    """Build agent ``name`` before its run starts: a build that fails (a bad
    ``interrupt_on``, a missing API key) stops ``run`` with one line naming the agent and
    the cause, not a traceback."""
    if services.registry.spec(name) is not None:  # else start_run says which agents there are
        build_agent(services, name)


def _loops(services: Services, settings: Settings, *, no_workers: bool) -> Loops:
    """``serve``'s and ``socket``'s loops: none but the scheduler with ``--no-workers``."""
    if no_workers:
        return Loops(services, workers=0, deciders=0)
    return Loops(services, workers=settings.workers)


_COMMANDS = {
    "serve": _serve,
    "socket": _socket,
    "worker": _worker,
    "run": _run,
    "audit": audit_command,
    "token": token_command,
}
