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
