"""Agents of other frameworks for the process tests (SIGNOFF_AGENTS=adapter_agents): a
Strands agent and a LangGraph graph (its checkpoints in the SQLite file named by
SIGNOFF_TEST_GRAPH), each gating a tool that appends its pid and paths to the file named
by SIGNOFF_TEST_MARKS every time it runs."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypedDict

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from strands import Agent, tool
from strands.models.model import Model

from agent_runtime import SessionStore
from signoff import AgentSpec, Policy
from signoff.langgraph import LangGraphAgent
from signoff.strands import SignoffApprovals, StrandsAgent

ALICE, BOB = "U0ALICE", "U0BOB"
PATHS = ["/tmp/a", "/tmp/b"]


def _mark(paths: list[str]) -> str:
    with Path(os.environ["SIGNOFF_TEST_MARKS"]).open("a") as marks:
        marks.write(f"{os.getpid()} {' '.join(paths)}\n")
    return f"deleted {len(paths)} file(s)"


class CleanupModel(Model):
    """Calls delete_files once, then reports its result: any process continues alike."""

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError
        yield

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = [c["toolResult"] for m in messages for c in m["content"] if "toolResult" in c]
        yield {"messageStart": {"role": "assistant"}}
        if not results:
            use = {"toolUseId": "use_1", "name": "delete_files"}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            delta = {"toolUse": {"input": json.dumps({"paths": PATHS})}}
            yield {"contentBlockDelta": {"delta": delta}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        text = results[-1]["content"][0].get("text", "")
        yield {"contentBlockDelta": {"delta": {"text": f"done: {text}"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


@tool
def delete_files(paths: list[str]) -> str:
    """Delete the given files (here: record that it ran)."""
    return _mark(paths)


def strands_agent() -> Agent:
    return Agent(
        model=CleanupModel(),
        tools=[delete_files],
        hooks=[SignoffApprovals(interrupt_on={"delete_files": True})],
        callback_handler=None,
    )


class Cleanup(TypedDict, total=False):
    request: str
    result: str


def delete(state: Cleanup) -> Cleanup:
    decision = interrupt(
        {
            "type": "tool_approval",
            "tool_call_id": "call_1",
            "name": "delete_files",
            "args": {"paths": PATHS},
        }
    )
    if decision["type"] != "approve":
        return {"result": "not deleted"}
    return {"result": f"done: {_mark(PATHS)}"}


def graph_agent(sessions: SessionStore) -> LangGraphAgent:
    """Built as the bot starts, inside its event loop, where an async saver can open."""
    builder = StateGraph(Cleanup)
    builder.add_node("delete", delete)
    builder.add_edge(START, "delete")
    builder.add_edge("delete", END)
    saver = AsyncSqliteSaver(aiosqlite.connect(os.environ["SIGNOFF_TEST_GRAPH"]))
    graph = builder.compile(checkpointer=saver)
    return LangGraphAgent(
        graph,
        input=lambda text: {"request": text},
        session_store=sessions,
        close=saver.conn.close,
    )


policy = Policy(users=(ALICE, BOB))
agents = [
    AgentSpec(
        name="strands-cleanup",
        build=lambda sessions: StrandsAgent(strands_agent, session_store=sessions),
        policy=policy,
    ),
    AgentSpec(name="graph-cleanup", build=graph_agent, policy=policy),
]
