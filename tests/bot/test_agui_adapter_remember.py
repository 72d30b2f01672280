"""Trust and the app, for adapted agents (Strands, LangChain, Genkit; real packages,
scripted models) no card asks about: each framework asks again at every call of a gated
tool, whatever a decision remembers, so their interrupts offer the app no ``remember``,
and an answer with one is refused before anything runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from agui_endpoint import Endpoint, answer_one, run_client
from harness import ALICE
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from twice_agents import FRAMEWORKS, PATHS, twice_spec

from agent_runtime import InMemorySessionStore
from agent_runtime.agui import run_agui
from bot.agents.policy import Policy

NAMES = {"strands": "st-twice", "langchain": "lc-twice", "genkit": "gk-twice"}
APPROVE = {"status": "resolved", "payload": {"type": "approve"}}


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_an_adapted_agents_interrupt_no_card_asks_offers_no_remember(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
    saver: AsyncSqliteSaver,
    framework: str,
) -> None:
    deleted: list[list[str]] = []
    spec = twice_spec(framework, deleted, Policy(users=(ALICE,)), saver)
    endpoint = await endpoint_for(spec=spec)
    app = Endpoint(endpoint.bot, endpoint.url.replace("/cleanup", f"/{NAMES[framework]}"))
    [first] = await run_client(app.url, "thread-app", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    assert "remember" not in interrupt["responseSchema"]["properties"]

    trusted = {"type": "approve", "remember": {"scope": "thread"}}
    seen = await answer_one(app, "thread-app", interrupt["id"], status="resolved", payload=trusted)
    assert seen["finished"] is None
    assert "does not offer remember" in seen["error"]["message"], seen
    assert deleted == []  # refused before anything ran

    seen = await answer_one(app, "thread-app", interrupt["id"], **APPROVE)
    [again] = seen["finished"]["outcome"]["interrupts"]  # the next call asks, as it would
    assert "remember" not in again["responseSchema"]["properties"]
    seen = await answer_one(app, "thread-app", again["id"], **APPROVE)
    assert seen["finished"]["outcome"] == {"type": "success"}, seen
    assert deleted == list(PATHS)
    assert endpoint.bot.slack.called("chat.postMessage") == []  # no channel: no card


async def test_run_agui_offers_an_adapted_agent_no_remember_by_default(
    saver: AsyncSqliteSaver,
) -> None:
    """``run_agui`` serving a Strands agent itself, outside the bot, with no policy of its
    own: no ``remember`` offered, and one given is refused before anything runs."""
    deleted: list[list[str]] = []
    agent = twice_spec("strands", deleted, Policy(users=(ALICE,)), saver).build(
        InMemorySessionStore()
    )
    start = {"threadId": "t1", "runId": "r1", "messages": [_said("clean up")]}
    events = [dict(e) async for e in run_agui(agent, start)]
    [interrupt] = events[-1]["outcome"]["interrupts"]
    assert "remember" not in interrupt["responseSchema"]["properties"]
    trusted = {"type": "approve", "remember": {"scope": "run"}}
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": trusted}
    resume = {"threadId": "t1", "runId": "r2", "messages": [], "resume": [answer]}
    events = [dict(e) async for e in run_agui(agent, resume)]
    assert events[-1]["type"] == "RUN_ERROR", events
    assert "does not offer remember" in events[-1]["message"] and deleted == []


def _said(text: str) -> dict[str, str]:
    return {"id": "m1", "role": "user", "content": text}
