"""A workflow whose agent node is cut off (the process dies at a save) goes on from where
it stopped: never stuck, and a tool that ran is not run again under a new key."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_runtime import (
    Agent,
    ContinueRun,
    Decision,
    InMemorySessionStore,
    ResumeError,
    ScriptedModel,
    Snapshot,
    ToolCall,
    ToolContext,
    Workflow,
    tool,
)
from agent_runtime.workflow import NodeContext


class ProcessDied(Exception):
    """What a save raises in place of the process dying there."""


Moment = Callable[[str, Snapshot], bool]


class DyingStore(InMemorySessionStore):
    """Saves normally; the first save ``arm(when)`` matches is lost, as if the process died."""

    def __init__(self) -> None:
        super().__init__()
        self.when: Moment | None = None

    def arm(self, when: Moment) -> None:
        self.when = when

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        if self.when is not None and self.when(thread_id, snapshot):
            self.when = None
            raise ProcessDied
        return await super().save(thread_id, snapshot, expected_version=expected_version)


def tool_result(thread_id: str, snapshot: Snapshot) -> bool:
    """The agent node's save of its tool's result."""
    return "/" in thread_id and any(m["role"] == "tool" for m in snapshot["messages"])


def node_done(thread_id: str, snapshot: Snapshot) -> bool:
    """The workflow's save of the finished agent node (it moves on to "report")."""
    return thread_id == "w" and snapshot["workflow"]["node"] == "report"


def build(
    store: InMemorySessionStore,
    purged: list[tuple[str, str, int]],
    turns: list[object] | None = None,
) -> Workflow:
    @tool
    async def purge(path: str, context: ToolContext) -> str:
        """Purge a directory."""
        purged.append((path, context.idempotency_key, context.attempt))
        return f"purged {path}"

    async def prepare(ctx: NodeContext) -> str:
        return f"clean {ctx.input}"

    async def report(ctx: NodeContext) -> str:
        return f"report: {ctx.input}"

    # A process that resumes sees only the model's later turns.
    model = ScriptedModel(turns or [[ToolCall(name="purge", args={"path": "/var/log"})], "purged"])
    agent = Agent(model=model, tools=[purge], interrupt_on={"purge": True}, session_store=store)
    return Workflow(
        nodes={"prepare": prepare, "clean": agent, "report": report}, session_store=store
    )


async def test_an_agent_node_cut_off_mid_tool_on_resume_can_be_continued():
    store = DyingStore()
    purged: list[tuple[str, str, int]] = []
    first = await build(store, purged).invoke("/var/log", thread_id="w")
    [approval] = first.interrupts
    # Resume; the process dies at the save of the tool's result (saves: the tool's start,
    # [its result]).
    store.arm(tool_result)
    with pytest.raises(ProcessDied):
        await build(store, purged, ["purged"]).invoke(
            {approval.id: Decision.approve()}, thread_id="w"
        )
    assert len(purged) == 1
    # Neither a replay of the same answer (what a retried resume job sends) nor a
    # ContinueRun gets the run going again: the workflow is stuck for good.
    survivor = build(store, purged, ["purged"])
    try:
        result = await survivor.invoke(ContinueRun(), thread_id="w")
    except ResumeError:
        result = await survivor.invoke({approval.id: Decision.approve()}, thread_id="w")
    assert result.stop_reason == "end_turn"


async def test_an_agent_node_that_finished_is_not_run_again_by_continue_run():
    store = DyingStore()
    purged: list[tuple[str, str, int]] = []
    first = await build(store, purged).invoke("/var/log", thread_id="w")
    [approval] = first.interrupts
    # The agent finishes (saves: tool start, tool result, end of the agent's run); the
    # process dies at the workflow's checkpoint of the finished node.
    store.arm(node_done)
    with pytest.raises(ProcessDied):
        await build(store, purged, ["purged"]).invoke(
            {approval.id: Decision.approve()}, thread_id="w"
        )
    assert len(purged) == 1
    survivor = build(store, purged, ["purged"])
    try:
        result = await survivor.invoke(ContinueRun(), thread_id="w")
    except ResumeError:
        result = await survivor.invoke({approval.id: Decision.approve()}, thread_id="w")
    assert result.stop_reason == "end_turn", result
    assert len(purged) == 1, purged


async def test_continue_run_does_not_start_a_finished_agent_node_over_with_new_keys():
    purged: list[tuple[str, str, int]] = []

    @tool
    async def purge(path: str, context: ToolContext) -> str:
        """Purge a directory."""
        purged.append((path, context.idempotency_key, context.attempt))
        return f"purged {path}"

    async def prepare(ctx: NodeContext) -> str:
        return f"clean {ctx.input}"

    async def report(ctx: NodeContext) -> str:
        return f"report: {ctx.input}"

    def build2(store: InMemorySessionStore, turns: list[object]) -> Workflow:
        agent = Agent(model=ScriptedModel(turns), tools=[purge], session_store=store)
        return Workflow(
            nodes={"prepare": prepare, "clean": agent, "report": report}, session_store=store
        )

    store = DyingStore()
    # saves: prepare starts, prepare done, purge starts, purge's result, the agent's end,
    # [the workflow's checkpoint of the finished agent node]: the process dies there.
    store.arm(node_done)
    turns = [[ToolCall(name="purge", args={"path": "/var/log"})], "purged"]
    with pytest.raises(ProcessDied):
        await build2(store, turns).invoke("/var/log", thread_id="w")
    assert len(purged) == 1
    # A later process continues; the model would ask for the purge again if asked anew.
    survivor = build2(store, [[ToolCall(name="purge", args={"path": "/var/log"})], "purged"])
    result = await survivor.invoke(ContinueRun(), thread_id="w")
    assert result.stop_reason == "end_turn"
    # The agent node had finished: its result is stored in its thread. Running it again
    # as a brand-new run repeats the purge under a new idempotency key, as a first attempt.
    assert len(purged) == 1, purged
