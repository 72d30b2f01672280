"""The servers the click benchmark (``bench.clicks``) runs, each in its own process.

A local stand-in for the Slack Web API (at the lowest CPU priority: in production Slack's
work is not done on this host), Signoff's HTTP server acknowledging clicks only (as
``signoff serve --no-workers``: each click queued in Redis, then answered), Signoff's
click decider and resume workers (as ``signoff worker`` runs them, at its default nice
value) and the floor: a Bolt app whose action listener only calls ``ack()``.
``start(role)`` spawns one and returns its port. The agent they run records in Redis when
its guarded tool ran, for the click-to-resume figure.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agent_runtime import Agent, ModelResponse, ToolCall, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.process.heap import freeze_startup_heap
from bot.process.loops import Loops, lower_priority
from bot.process.settings import Settings
from bot.process.web import web_app
from bot.process.wiring import make_services
from bot.slack.app import build_app
from bot.slack.events import EVENTS_PATH
from bot.ui import ids
from storage import connect

SECRET = "bench-signing-secret"
TOKEN = "xoxb-bench"
CHANNEL = "C0BENCH"
APPROVERS = tuple(f"U0APP{i:03d}" for i in range(50))
WORKERS = 8

RESUMED = "bench:resumed"
SETTLED = "bench:settled"
_redis: Any = None


class TargetModel:
    """Calls the guarded tool with the run's prompt as its target, then finishes."""

    async def generate(self, request: Any) -> ModelResponse:
        if any(m.role == "tool" for m in request.messages):
            return ModelResponse(text="done")
        prompt = next(m.content for m in request.messages if m.role == "user")
        call = ToolCall(id="call_1", name="restart", args={"target": prompt})
        return ModelResponse(tool_calls=(call,))


@tool
async def restart(target: str) -> str:
    """Restart a service (records in Redis when it ran, for the click-to-resume figure)."""
    global _redis
    if _redis is None:
        _redis = aioredis.from_url(os.environ["BENCH_REDIS_URL"])
    await _redis.hsetnx(RESUMED, target, repr(time.time()))
    return "restarted"


def build(store: SessionStore) -> Agent:
    return Agent(
        model=TargetModel(),
        tools=[restart],
        interrupt_on={"restart": True},
        session_store=store,
        name="ops",
    )


# -- a stand-in for the Slack Web API ----------------------------------------------------


async def fake_slack(redis_url: str) -> web.AppRunner:
    """Answers like Slack; pushes to ``SETTLED`` each message update and each run's end, the
    last visible consequences of a click, so the benchmark can wait for them without polling."""
    counter = iter(range(1, 10**9))
    redis = aioredis.from_url(redis_url)

    async def handle(request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await request.read()
        if method == "auth.test":
            return web.json_response({"ok": True, "user_id": "U0BOT", "team_id": "T0"})
        if method == "chat.update":
            await redis.rpush(SETTLED, "updated")
        if method == "chat.postMessage":
            if json.loads(body).get("text", "").startswith("Finished"):
                await redis.rpush(SETTLED, "finished")
            ts = f"1700000000.{next(counter):06d}"
            return web.json_response({"ok": True, "channel": CHANNEL, "ts": ts})
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/api/{method}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


def port_of(runner: web.AppRunner) -> int:
    return int(runner.addresses[0][1])


async def serve(app: web.Application) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


# -- the floor, Signoff's agent, and the processes ----------------------------------------


def floor_app(api_url: str) -> web.Application:
    app = AsyncApp(
        client=AsyncWebClient(token=TOKEN, base_url=api_url, session=aiohttp.ClientSession()),
        signing_secret=SECRET,
        process_before_response=True,
    )

    @app.action(ids.APPROVE)
    async def only_ack(ack: Any) -> None:
        await ack()

    return app.web_app(path=EVENTS_PATH)


def spec() -> AgentSpec:
    policy = Policy(channel=CHANNEL, users=APPROVERS, reminders=None)
    return AgentSpec(name="ops", build=build, policy=policy)


def child(role: str, ports: Any, api_url: str, redis_url: str) -> None:
    """Run one server (``role``) until the benchmark terminates this process."""
    os.environ["BENCH_REDIS_URL"] = redis_url
    asyncio.run(_child(role, ports, api_url, redis_url))


async def _child(role: str, ports: Any, api_url: str, redis_url: str) -> None:
    if role == "slack":
        # Slack's own work is done on Slack's servers, not on the host it shares here.
        lower_priority(19)
        runner = await fake_slack(redis_url)
        ports.put(port_of(runner))
    elif role == "floor":
        runner = await serve(floor_app(api_url))
        ports.put(port_of(runner))
    else:
        storage = await connect(redis_url, prefix="bench")
        client = AsyncWebClient(token=TOKEN, base_url=api_url, session=aiohttp.ClientSession())
        services = make_services(client=client, storage=storage, specs=[spec()])
        if role == "signoff":  # signoff serve --no-workers: no loops, clicks only queued
            bolt = build_app(services, signing_secret=SECRET)
            runner = await serve(web_app(bolt, services, signing_secret=SECRET))
            freeze_startup_heap()
            ports.put(port_of(runner))
        else:  # signoff worker, at the priority it takes by default
            lower_priority(Settings().worker_nice)
            Loops(services, workers=WORKERS, scheduler=False).start()
            freeze_startup_heap()
            ports.put(0)
    await asyncio.Event().wait()


def start(role: str, api_url: str = "", redis_url: str = "") -> tuple[Any, int]:
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    process = context.Process(target=child, args=(role, ports, api_url, redis_url), daemon=True)
    process.start()
    return process, int(ports.get(timeout=60))
