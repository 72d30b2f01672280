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


def agent_resumed(thread_id: str, snapshot: Snapshot) -> bool:
    """The agent node's first save after it was given the answers (its tool's start)."""
    return "/" in thread_id and snapshot["status"] == "running"


def node_done(thread_id: str, snapshot: Snapshot) -> bool:
    """The workflow's save of the finished agent node (it moves on to "report")."""
    return thread_id == "w" and snapshot["workflow"]["node"] == "report"


def build(
    store: InMemorySessionStore,
    purged: list[tuple[str, str, int]],
    turns: list[object] | None = None,
    *,
    guarded: bool = True,
) -> Workflow:
    """prepare -> an agent that purges (asking first when ``guarded``) -> report."""

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
    asks = {"purge": True} if guarded else None
    agent = Agent(model=model, tools=[purge], interrupt_on=asks, session_store=store)
    return Workflow(
        nodes={"prepare": prepare, "clean": agent, "report": report}, session_store=store
    )


@pytest.mark.parametrize(
    ("dies_at", "attempts"),
    [(tool_result, [1, 2]), (node_done, [1])],
    ids=["at-the-tools-result", "at-the-nodes-end"],
)
async def test_a_resume_cut_off_inside_an_agent_node_is_continued_where_it_stopped(
    dies_at: Moment, attempts: list[int]
) -> None:
    """Cut off before the tool's result was saved, the tool runs again as its second
    attempt under the same key (as for a plain agent); after, it is not run again."""
    store = DyingStore()
    purged: list[tuple[str, str, int]] = []
    first = await build(store, purged).invoke("/var/log", thread_id="w")
    [approval] = first.interrupts
    store.arm(dies_at)
    with pytest.raises(ProcessDied):
        await build(store, purged, ["purged"]).invoke(
            {approval.id: Decision.approve()}, thread_id="w"
        )
    assert len(purged) == 1
    result = await build(store, purged, ["purged"]).invoke(ContinueRun(), thread_id="w")
    assert result.stop_reason == "end_turn", result
    assert [attempt for _, _, attempt in purged] == attempts
    assert len({key for _, key, _ in purged}) == 1


async def test_continue_run_does_not_start_a_finished_agent_node_over_with_new_keys():
    purged: list[tuple[str, str, int]] = []
    store = DyingStore()
    # saves: prepare starts, prepare done, purge starts, purge's result, the agent's end,
    # [the workflow's checkpoint of the finished agent node]: the process dies there.
    store.arm(node_done)
    turns = [[ToolCall(name="purge", args={"path": "/var/log"})], "purged"]
    with pytest.raises(ProcessDied):
        await build(store, purged, turns, guarded=False).invoke("/var/log", thread_id="w")
    assert len(purged) == 1
    # A later process continues; the model would ask for the purge again if asked anew.
    again = [[ToolCall(name="purge", args={"path": "/var/log"})], "purged"]
    survivor = build(store, purged, again, guarded=False)
    result = await survivor.invoke(ContinueRun(), thread_id="w")
    assert result.stop_reason == "end_turn"
    # The agent node had finished: its result is stored in its thread. Running it again
    # as a brand-new run repeats the purge under a new idempotency key, as a first attempt.
    assert len(purged) == 1, purged


async def test_answers_the_agent_node_never_saw_are_given_to_it_when_the_run_is_continued():
    """Cut off after the workflow saved the answers but before the agent node applied
    them, the continued run gives them to the agent: the approved tool runs, and the
    humans are not left waiting on the question they already answered."""
    store = DyingStore()
    purged: list[tuple[str, str, int]] = []
    first = await build(store, purged).invoke("/var/log", thread_id="w")
    [approval] = first.interrupts
    store.arm(agent_resumed)
    with pytest.raises(ProcessDied):
        await build(store, purged, ["purged"]).invoke(
            {approval.id: Decision.approve()}, thread_id="w"
        )
    assert purged == []
    result = await build(store, purged, ["purged"]).invoke(ContinueRun(), thread_id="w")
    assert result.stop_reason == "end_turn", result
    assert [path for path, _, _ in purged] == ["/var/log"]
