"""Agents of each adapted framework (Strands, LangChain, Genkit; real packages, scripted
models, offline) whose run calls the gated ``delete_files`` twice, ``/tmp/a`` then
``/tmp/c``, each call asking first; shared by the trust tests of adapted agents."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from genkit import Genkit, Message, ModelRequest, ModelResponse, Part
from genkit_agents import define_delete_files
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel, gated_chat_agent
from strands import Agent, tool
from strands_agents import ScriptedModel

from bot.agents.policy import AgentSpec, Policy
from signoff.genkit import GenkitAgent
from signoff.strands import SignoffApprovals, StrandsAgent

FRAMEWORKS = ("strands", "langchain", "genkit")
PATHS = (["/tmp/a"], ["/tmp/c"])
"""What the run's two calls delete, in order."""


class _DeletesTwice(ScriptedModel):
    """Calls ``delete_files`` on each of ``PATHS`` in turn, one call a turn, then reports."""

    def __init__(self) -> None:
        super().__init__("delete_files", {})

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = [c["toolResult"] for m in messages for c in m["content"] if "toolResult" in c]
        if len(results) >= len(PATHS):
            async for event in super().stream(messages, *args, **kwargs):
                yield event
            return
        use = {"toolUseId": f"use_{len(results) + 1}", "name": "delete_files"}
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {"toolUse": use}}}
        args = json.dumps({"paths": PATHS[len(results)]})
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": args}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def _strands(deleted: list[list[str]], policy: Policy) -> AgentSpec:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    def make_agent() -> Agent:
        return Agent(
            model=_DeletesTwice(),
            tools=[delete_files],
            hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
            callback_handler=None,
        )

    return AgentSpec(
        name="st-twice",
        build=lambda sessions: StrandsAgent(make_agent, session_store=sessions),
        policy=policy,
    )


def _langchain(deleted: list[list[str]], policy: Policy, saver: AsyncSqliteSaver) -> AgentSpec:
    turns = [
        AIMessage(
            content="",
            tool_calls=[{"id": f"c{n}", "name": "delete_files", "args": {"paths": paths}}],
        )
        for n, paths in enumerate(PATHS, start=1)
    ]
    model = ScriptedChatModel(messages=iter([*turns, AIMessage(content="done")]))
    return AgentSpec(
        name="lc-twice",
        build=lambda sessions: gated_chat_agent(model, "per_call", saver, sessions, deleted),
        policy=policy,
    )


def _genkit(deleted: list[list[str]], policy: Policy) -> AgentSpec:
    ai = Genkit()

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if len(results) >= len(PATHS):
            text = f"done: {results[-1].output}"
            return ModelResponse(message=Message(role="model", content=[Part(text=text)]))
        call = Part.from_tool_request(
            name="delete_files",
            input={"paths": PATHS[len(results)]},
            ref=f"call_{len(results) + 1}",
        )
        return ModelResponse(message=Message(role="model", content=[call]))

    ai.define_model(name="scripted", fn=scripted)
    define_delete_files(ai, deleted)
    return AgentSpec(
        name="gk-twice",
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["delete_files"], session_store=sessions
        ),
        policy=policy,
    )


def twice_spec(
    framework: str, deleted: list[list[str]], policy: Policy, saver: AsyncSqliteSaver
) -> AgentSpec:
    """The ``framework``'s agent calling ``delete_files`` twice in one run, under ``policy``
    (each call it runs noted in ``deleted``)."""
    if framework == "strands":
        return _strands(deleted, policy)
    if framework == "langchain":
        return _langchain(deleted, policy, saver)
    return _genkit(deleted, policy)
