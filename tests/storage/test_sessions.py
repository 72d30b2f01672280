"""An agent's interrupt→resume cycle through RedisSessionStore on a real server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import pytest

from agent_runtime import (
    Agent,
    AgentResult,
    BeforeTools,
    Decision,
    ResumeError,
    ScriptedModel,
    StaleSessionError,
    ToolCall,
    tool,
)
from storage import Storage

CALL = ToolCall(id="call_1", name="delete_files", args={"paths": ["/tmp/a.log"]})


def guarded_agent(
    storage: Storage,
    turns: list,
    deleted: list[str],
    hooks: Sequence[Callable[[BeforeTools], Awaitable[None]]] = (),
) -> Agent:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        deleted.extend(paths)
        return f"deleted {len(paths)}"

    return Agent(
        model=ScriptedModel(turns),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
        session_store=storage.sessions,
        hooks=hooks,
    )


async def server_calls(storage: Storage, command: str) -> int:
    """How many times the server (every primary, on a cluster) ran ``command``."""
    raw = storage.client.raw
    if storage.client.cluster is None:
        nodes = [await raw.info("commandstats")]
    else:
        nodes = list((await raw.info("commandstats", target_nodes="primaries")).values())
    return sum(stats.get(f"cmdstat_{command}", {}).get("calls", 0) for stats in nodes)


async def cycle(storage: Storage, thread: str, deleted: list[str]) -> AgentResult:
    agent = guarded_agent(storage, [[CALL], "done"], deleted)
    asked = await agent.invoke("clean up", thread_id=thread)
    return await agent.invoke({asked.interrupts[0].id: Decision.approve()}, thread_id=thread)


async def test_a_cycle_reads_the_session_twice_and_writes_four_checkpoints(
    storage: Storage,
) -> None:
    deleted: list[str] = []
    await cycle(storage, "thread_warm", deleted)  # the server learns the script
    loads, saves = await server_calls(storage, "hmget"), await server_calls(storage, "evalsha")
    done = await cycle(storage, "thread_counted", deleted)
    assert done.stop_reason == "end_turn" and deleted == ["/tmp/a.log"] * 2
    assert await server_calls(storage, "hmget") - loads == 2
    assert await server_calls(storage, "evalsha") - saves == 4
    stored = await storage.sessions.load("thread_counted")
    assert stored is not None and stored.version == 4 and stored.snapshot["status"] == "idle"


async def test_two_resumes_of_one_thread_run_its_tool_once(storage: Storage) -> None:
    deleted: list[str] = []
    asked = await guarded_agent(storage, [[CALL]], deleted).invoke("clean up", thread_id="t2")
    answer = {asked.interrupts[0].id: Decision.approve()}
    both_loaded = asyncio.Barrier(2)

    async def wait_for_the_other(event: BeforeTools) -> None:
        await both_loaded.wait()

    resumers = [guarded_agent(storage, ["done"], deleted, [wait_for_the_other]) for _ in "ab"]
    outcomes = await asyncio.gather(
        *(agent.invoke(answer, thread_id="t2") for agent in resumers), return_exceptions=True
    )
    # Both read the interrupted run; the save before the tool lets only one through.
    [won] = [o for o in outcomes if isinstance(o, AgentResult)]
    [lost] = [o for o in outcomes if isinstance(o, Exception)]
    assert won.stop_reason == "end_turn" and isinstance(lost, StaleSessionError)
    assert deleted == ["/tmp/a.log"]
    with pytest.raises(ResumeError):
        await guarded_agent(storage, ["done"], deleted).invoke(answer, thread_id="t2")
