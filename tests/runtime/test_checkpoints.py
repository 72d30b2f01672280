"""Which checkpoints an approval cycle saves, and why each one is needed."""

import pytest

import agent_runtime.runnable
from agent_runtime import (
    Agent,
    Decision,
    InMemorySessionStore,
    ScriptedModel,
    Snapshot,
    StaleSessionError,
    StoredSession,
    ToolCall,
    tool,
)

from .workflows import cleanup


class RecordingStore(InMemorySessionStore):
    """Keeps every snapshot saved and counts the loads."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[Snapshot] = []
        self.loads = 0

    async def load(self, thread_id: str) -> StoredSession | None:
        self.loads += 1
        return await super().load(thread_id)

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        self.saved.append(snapshot)
        return await super().save(thread_id, snapshot, expected_version=expected_version)


@tool
def delete_files(paths: list[str]) -> str:
    """Delete the given files."""
    return f"deleted {len(paths)}"


async def test_an_approval_cycle_saves_one_checkpoint_per_step_that_must_survive_a_crash():
    store = RecordingStore()
    call = ToolCall(id="call_1", name="delete_files", args={"paths": ["/tmp/a"]})
    agent = Agent(
        model=ScriptedModel([[call], "done"]),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
        session_store=store,
    )
    asked = await agent.invoke("clean up", thread_id="t")
    await agent.invoke({asked.interrupts[0].id: Decision.approve()}, thread_id="t")

    assert store.loads == 2  # once per invocation
    waiting, starting, finished, ended = store.saved
    # The model's turn is saved with the interrupt it led to, not on its own.
    assert waiting["status"] == "interrupted" and waiting["batch"] is not None
    # Before the tool runs: the answer and the attempt, so a second resume is refused and
    # a crash mid-tool is known.
    assert starting["attempts"] == {"call_1": 1} and starting["batch_results"] == {}
    # The tool's result before the model is asked again: a crash then never reruns it.
    assert finished["batch"] is None and finished["messages"][-1]["role"] == "tool"
    assert ended["status"] == "idle" and ended["last_result"]["stop_reason"] == "end_turn"


def guarded_agent(store: InMemorySessionStore) -> Agent:
    call = ToolCall(id="call_1", name="delete_files", args={"paths": ["/tmp/a"]})
    return Agent(
        model=ScriptedModel([[call], "done"]),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
        session_store=store,
    )


async def test_a_run_on_a_thread_the_runtime_names_reads_nothing_until_it_is_resumed():
    store = RecordingStore()
    agent = guarded_agent(store)
    asked = await agent.invoke("clean up")
    assert store.loads == 0 and asked.stop_reason == "interrupt"
    done = await agent.invoke(
        {asked.interrupts[0].id: Decision.approve()}, thread_id=asked.thread_id
    )
    assert store.loads == 1 and done.stop_reason == "end_turn"
    workflow = cleanup([], store)
    assert (await workflow.invoke("/var/log")).stop_reason == "interrupt"
    assert store.loads == 1


@pytest.mark.parametrize("runnable", ["agent", "workflow"])
async def test_a_named_thread_that_is_stored_already_is_refused_not_overwritten(
    monkeypatch, runnable
):
    store = RecordingStore()
    make = (lambda: guarded_agent(store)) if runnable == "agent" else (lambda: cleanup([], store))
    first = await make().invoke("clean up", thread_id="thread_taken")
    kept = await store.load("thread_taken")
    monkeypatch.setattr(agent_runtime.runnable, "new_id", lambda prefix: "thread_taken")
    with pytest.raises(StaleSessionError):
        await make().invoke("clean up again")
    assert await store.load("thread_taken") == kept and first.stop_reason == "interrupt"
