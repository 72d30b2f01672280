"""Which checkpoints an approval cycle saves, and why each one is needed."""

from agent_runtime import (
    Agent,
    Decision,
    InMemorySessionStore,
    ScriptedModel,
    Snapshot,
    StoredSession,
    ToolCall,
    tool,
)


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
