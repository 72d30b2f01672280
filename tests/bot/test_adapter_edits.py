"""An edit an adapted agent's tool would refuse is refused before it is recorded, as our own
agents' are: the Slack Edit modal says what does not fit and records nothing, and the
AG-UI app's edit is ``invalid_edit`` (the real SDKs, offline, scripted models)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agui_endpoint import Endpoint, answer_one, run_client, still_pending
from genkit_agents import genkit_spec
from harness import ALICE, CAROL, CHANNEL, Harness
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel, gated_chat_agent
from strands_agents import gated_spec

from bot.agents.policy import AgentSpec, Policy
from bot.ui.ids import EDIT_VIEW

NOT_A_LIST = '{"paths": "/tmp/a"}'


def langchain_spec(saver: AsyncSqliteSaver, deleted: list[list[str]]) -> AgentSpec:
    call = {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}}
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="done")])
    )
    return AgentSpec(
        name="lc-cleanup",
        build=lambda sessions: gated_chat_agent(model, "per_call", saver, sessions, deleted),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


def _spec(framework: str, saver: AsyncSqliteSaver, deleted: list[list[str]]) -> AgentSpec:
    if framework == "strands":
        return gated_spec(deleted)
    if framework == "langchain":
        return langchain_spec(saver, deleted)
    return genkit_spec(deleted)


@pytest.mark.parametrize("framework", ["strands", "langchain", "genkit"])
async def test_the_edit_modal_refuses_arguments_the_adapted_tool_would_refuse(
    make_bot: Any, saver: AsyncSqliteSaver, framework: str
) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=_spec(framework, saver, deleted))
    value = await bot.start(requested_by=CAROL)
    status, body = await bot.submit(EDIT_VIEW, value, user=ALICE, text=NOT_A_LIST)
    assert status == 200
    [said] = json.loads(body)["errors"].values()
    assert said.startswith("These arguments do not fit delete_files: ") and "paths" in said, said
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.decided_by is None
    await bot.decide("edit", value, user=ALICE)  # one that fits is taken, and runs
    await bot.finished()
    assert deleted == [["/tmp/a"]]


@pytest.mark.parametrize("framework", ["strands", "langchain", "genkit"])
async def test_the_apps_edit_that_the_adapted_tool_would_refuse_is_invalid_edit(
    endpoint_for: Callable[..., Awaitable[Endpoint]], saver: AsyncSqliteSaver, framework: str
) -> None:
    deleted: list[list[str]] = []
    spec = _spec(framework, saver, deleted)
    endpoint = await endpoint_for(spec=spec)
    endpoint = Endpoint(endpoint.bot, endpoint.url.replace("/cleanup", f"/{spec.name}"))
    [first] = await run_client(endpoint.url, "thread-edit", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    value = endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    iid = interrupt["id"]
    bad = {"type": "edit", "args": {"paths": "/tmp/a"}}
    seen = await answer_one(endpoint, "thread-edit", iid, status="resolved", payload=bad)
    assert seen["finished"] is None and seen["error"]["code"] == "invalid_edit", seen
    assert "delete_files" in seen["error"]["message"] and "paths" in seen["error"]["message"]
    assert await still_pending(endpoint, endpoint.bot.record_id(value))
    assert endpoint.bot.slack.called("chat.update") == []  # the card was never changed
    good = {"type": "edit", "args": {"paths": ["/tmp/a"]}}
    seen = await answer_one(endpoint, "thread-edit", iid, status="resolved", payload=good)
    assert seen["finished"]["outcome"] == {"type": "success"}, seen
    assert deleted == [["/tmp/a"]]
