"""What the runs API refuses, and how it says so: a missing token, a bad request, a run
with nowhere to ask, an unknown run, damaged stored state, an agent whose build fails."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from harness import ALICE, BOB, CHANNEL, Harness, ToolLog, cleanup_spec
from pydantic import SecretStr
from runs_api import AUTH, TOKEN, Api, served_runs_api

from agent_runtime import Agent
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.api.agui import AGUI_PATH
from bot.api.auth import NOT_OPERATOR
from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app
from bot.ui import ids


@pytest.fixture(params=["socket", "http"])
async def api(make_bot: Any, request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    """A bot, and the URL of its runs API: served beside /metrics as in Socket Mode, or
    beside /slack/events as in HTTP mode."""
    async with served_runs_api(await make_bot(), request.param) as served:
        yield served


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}]
)
async def test_without_the_token_nothing_starts(api: Api, headers: dict[str, str]) -> None:
    bot, url, http = api.bot, api.url, api.http
    async with http.post(url, json={"agent": "cleanup", "input": "x"}, headers=headers) as r:
        assert r.status == 401 and (await r.json())["error"] == NOT_OPERATOR
    async with http.get(f"{url}/cleanup/thread_1", headers=headers) as r:
        assert r.status == 401
    assert bot.slack.called("chat.postMessage") == []


async def test_without_an_api_token_set_the_api_says_it_is_off(make_bot: Any) -> None:
    bot = await make_bot()
    server = TestServer(operator_app(bot.services, api_token=None), host="127.0.0.1", port=0)
    await server.start_server()
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with aiohttp.ClientSession() as http:
            for method, path in [
                ("POST", "/api/runs"),
                ("GET", "/api/runs/cleanup/thread_1"),
                ("POST", "/agui/cleanup"),
                ("GET", "/agui/cleanup"),
            ]:
                async with http.request(method, base + path, json={}) as answer:
                    assert answer.status == 404
                    assert "SIGNOFF_API_TOKEN" in (await answer.json())["error"]
    finally:
        await server.close()
    assert bot.slack.called("chat.postMessage") == []


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"{not json", 400, "json"),
        (b'{"agent": "cleanup"}', 400, "input"),
        (b'{"agent": "cleanup", "input": "x", "channel": "#ops"}', 400, "channel"),
        (b'{"agent": "cleanup", "input": "x", "force": true}', 400, "force"),
        (b'{"agent": "nope", "input": "x"}', 404, "no agent named 'nope' (known: cleanup)"),
    ],
)
async def test_a_bad_request_says_why_and_starts_nothing(
    api: Api, body: bytes, status: int, says: str
) -> None:
    bot, url, http = api.bot, api.url, api.http
    async with http.post(url, data=body, headers=AUTH) as r:
        assert r.status == status
        assert says in (await r.json())["error"].lower()
    assert bot.slack.called("chat.postMessage") == []


async def test_a_run_whose_cards_would_go_to_a_direct_message_is_refused_as_the_callers(
    make_bot: Any,
) -> None:
    """A policy naming no channel asks where the run starts: a direct message only the
    app sees is the caller's mistake (422 saying so), not an unknown agent (404)."""
    bot: Harness = await make_bot(Policy(users=(ALICE, BOB)))
    server = TestServer(operator_app(bot.services, api_token=SecretStr(TOKEN)), port=0)
    await server.start_server()
    body = {"agent": "cleanup", "input": "clean up", "channel": "D0ABC"}
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{server.port}{RUNS_PATH}"
            async with http.post(url, json=body, headers=AUTH) as r:
                assert r.status == 422 and r.content_type == "application/json"
                said = (await r.json())["error"]
    finally:
        await server.close()
    assert said.startswith("Run cleanup in a channel its approvers are in"), said
    assert bot.slack.called("chat.postMessage") == [] and bot.tool_log.calls == []
    storage = bot.services.storage
    assert await storage.client.raw.keys(f"{storage.keys.prefix}:thread:*") == []  # no session


async def test_a_run_with_nowhere_to_ask_is_refused_before_it_starts(make_bot: Any) -> None:
    """Its policy names no channel and there is no SIGNOFF_CHANNEL: its cards would go where
    it runs, and a job names no such place unless it gives a channel."""
    bot: Harness = await make_bot(Policy(users=(ALICE, BOB)))
    app = operator_app(bot.services, api_token=SecretStr(TOKEN))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        url = f"http://127.0.0.1:{server.port}{RUNS_PATH}"
        async with aiohttp.ClientSession() as http:
            start = {"agent": "cleanup", "input": "clean up"}
            async with http.post(url, json=start, headers=AUTH) as r:
                assert r.status == 400
                assert (await r.json())["error"] == (
                    "channel: cleanup asks for approval in the channel it runs in (its policy "
                    "names none, and SIGNOFF_CHANNEL is unset): give one"
                )
            assert await bot.services.storage.queries.pending_count() == 0  # nothing asked
            assert bot.slack.called("conversations.open") == []
            async with http.post(url, json={**start, "channel": CHANNEL}, headers=AUTH) as r:
                assert r.status == 201, await r.text()
        [post] = bot.slack.called("chat.postMessage")
        assert post["channel"] == CHANNEL
    finally:
        await server.close()


async def test_an_unknown_run_is_not_found(api: Api) -> None:
    url, http = api.url, api.http
    async with http.get(f"{url}/cleanup/thread_unknown", headers=AUTH) as r:
        assert r.status == 404 and "thread_unknown" in (await r.json())["error"]
    async with http.get(f"{url}/cleanup/not%20an%20id", headers=AUTH) as r:
        assert r.status == 404
    async with http.get(f"{url}/nope/thread_unknown", headers=AUTH) as r:
        assert r.status == 404 and "no agent named 'nope'" in (await r.json())["error"]
    long = "x" * 40 + "y" * 5000  # a URL's path may be 8 KB: the error quotes its start
    async with http.get(f"{url}/cleanup/{long}", headers=AUTH) as r:
        said = (await r.json())["error"]
        assert r.status == 404 and said == f"no run of cleanup in thread '{'x' * 40}'", said
    async with http.get(f"{url}/{long}/thread_unknown", headers=AUTH) as r:
        said = (await r.json())["error"]
        assert r.status == 404 and said.startswith(f"no agent named '{'x' * 40}' (known"), said


async def test_a_run_is_not_told_under_another_agents_name(make_bot: Any) -> None:
    """One token covers every agent: asked under another agent's name, a thread is as
    unknown as one never run, while it waits and once it has finished."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB))
    other = dataclasses.replace(cleanup_spec(ToolLog(), policy), name="other")
    bot: Harness = await make_bot(also=(other,))
    server = TestServer(operator_app(bot.services, api_token=SecretStr(TOKEN)), port=0)
    await server.start_server()
    url = f"http://127.0.0.1:{server.port}{RUNS_PATH}"
    try:
        async with aiohttp.ClientSession() as http:
            start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
            async with http.post(url, json=start, headers=AUTH) as r:
                thread_id = (await r.json())["thread_id"]

            async def told(agent: str) -> tuple[int, dict[str, Any]]:
                async with http.get(f"{url}/{agent}/{thread_id}", headers=AUTH) as r:
                    return r.status, await r.json()

            assert (await told("cleanup"))[1]["status"] == "interrupted"
            status, answer = await told("other")
            assert status == 404 and thread_id in answer["error"]

            [post] = bot.slack.called("chat.postMessage")
            await bot.click(ids.APPROVE, post["blocks"][-1]["elements"][0]["value"], user=ALICE)
            await bot.finished()
            assert (await told("cleanup"))[1]["status"] == "idle"
            assert (await told("other"))[0] == 404
    finally:
        await server.close()


async def test_a_run_whose_stored_state_is_damaged_is_said_so_in_json(api: Api) -> None:
    """Damaged for good: a 500 naming the damage (asking again will not help), not a
    plain-text error page."""
    bot, url, http = api.bot, api.url, api.http
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    async with http.post(url, json=start, headers=AUTH) as r:
        started = await r.json()
    key = bot.services.storage.keys.session(started["thread_id"])
    await bot.services.storage.client.raw.hset(key, "snapshot", "{not json")
    status_url = url.removesuffix(RUNS_PATH) + started["status_url"]
    async with http.get(status_url, headers=AUTH) as r:
        assert r.status == 500 and r.content_type == "application/json"
        assert "damaged" in (await r.json())["error"]


async def test_an_agui_resume_of_a_run_whose_stored_state_is_damaged_is_not_a_503(
    api: Api,
) -> None:
    """Asking again will not mend it: a 500 naming the damage, as the runs API answers,
    not 'storage is unavailable; try again' for the app to retry without end."""
    bot, url, http = api.bot, api.url, api.http
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    async with http.post(url, json=start, headers=AUTH) as r:
        started = await r.json()
    [interrupt] = started["interrupts"]
    key = bot.services.storage.keys.session(started["thread_id"])
    await bot.services.storage.client.raw.hset(key, "snapshot", "{not json")
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    body = {"threadId": started["thread_id"], "runId": "run_2", "resume": [answer]}
    agui = url.removesuffix(RUNS_PATH) + f"{AGUI_PATH}/cleanup"
    async with http.post(agui, json=body, headers=AUTH) as r:
        assert r.status == 500 and r.content_type == "application/json"
        assert "damaged" in (await r.json())["error"]


def _no_api_key(store: SessionStore) -> Agent:
    raise ValueError("no API key")


def _no_agent(store: SessionStore) -> Any:
    return object()


NO_KEY = "agent 'cleanup': build() raised ValueError; see the bot's log"
NO_AGENT = "agent 'cleanup': build() returned object, not an Agent or a Workflow; see the bot's log"
BAD_INTERRUPT_ON = "agent 'cleanup': interrupt_on['delete_files']"


@pytest.mark.parametrize("cause", ["no API key", "no agent built", "a bad interrupt_on"])
async def test_an_agent_whose_build_fails_is_named_in_a_json_500(
    make_bot: Any, caplog: pytest.LogCaptureFixture, cause: str
) -> None:
    """Starting it, reading a run's status, an AG-UI run and the agent's capabilities each
    answer a 500 in JSON naming the agent, not a 404 (it exists) nor a plain-text error
    page; the build's own error message is in the log, not the answer."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB))
    if cause == "no API key":
        spec = AgentSpec(name="cleanup", build=_no_api_key, policy=policy)
        said = {"start": NO_KEY, "status": NO_KEY, "agui": NO_KEY, "capabilities": NO_KEY}
    elif cause == "no agent built":  # not an unknown agent: its build returned no agent
        spec = AgentSpec(name="cleanup", build=_no_agent, policy=policy)
        said = {"start": NO_AGENT, "status": NO_AGENT, "agui": NO_AGENT, "capabilities": NO_AGENT}
    else:
        spec = cleanup_spec(ToolLog(), policy, decisions=())  # allowed_decisions=[]
        said = dict.fromkeys(("start", "status", "agui", "capabilities"), BAD_INTERRUPT_ON)
    bot: Harness = await make_bot(spec=spec)
    server = TestServer(operator_app(bot.services, api_token=SecretStr(TOKEN)), port=0)
    await server.start_server()
    base = f"http://127.0.0.1:{server.port}"
    calls = {
        "start": ("POST", RUNS_PATH, {"agent": "cleanup", "input": "x", "channel": CHANNEL}),
        "status": ("GET", f"{RUNS_PATH}/cleanup/thread_1", None),
        "agui": ("POST", f"{AGUI_PATH}/cleanup", {"threadId": "thread_1", "runId": "run_1"}),
        "capabilities": ("GET", f"{AGUI_PATH}/cleanup", None),
    }
    try:
        async with aiohttp.ClientSession() as http:
            for name, (method, path, body) in calls.items():
                async with http.request(method, base + path, json=body, headers=AUTH) as r:
                    assert r.status == 500 and r.content_type == "application/json", name
                    assert (await r.json())["error"].startswith(said[name]), name
    finally:
        await server.close()
    assert bot.slack.called("chat.postMessage") == []
    logged = [logging.Formatter().formatException(r.exc_info) for r in caplog.records if r.exc_info]
    assert len(logged) == 4 and all("agent 'cleanup'" in e for e in logged)
    if cause == "no API key":
        assert all("ValueError: no API key" in e for e in logged)
