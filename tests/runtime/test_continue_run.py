"""A run whose process died between checkpoints continues from the last one."""

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
    ToolResult,
    Workflow,
    tool,
)
from agent_runtime.workflow import NodeContext


class ProcessDied(Exception):
    """Stands for the process being killed at a save."""


class DyingStore(InMemorySessionStore):
    """Saves normally, then 'dies' at save number ``die_at`` (that save is lost)."""

    def __init__(self, die_at: int) -> None:
        super().__init__()
        self.saves = 0
        self.die_at = die_at

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        self.saves += 1
        if self.saves == self.die_at:
            raise ProcessDied
        return await super().save(thread_id, snapshot, expected_version=expected_version)


def stepping_agent(runs: list[int], store: InMemorySessionStore, turns) -> Agent:
    @tool
    def step(n: int) -> str:
        """Do one step."""
        runs.append(n)
        return f"step {n} done"

    return Agent(model=ScriptedModel(turns), tools=[step], session_store=store)


async def test_a_run_cut_off_mid_way_continues_from_its_last_checkpoint():
    runs: list[int] = []
    store = DyingStore(die_at=3)  # saves: turn 1 with step 1 starting, batch 1, [step 2 starting]
    first_turns = [[ToolCall(name="step", args={"n": 1})], [ToolCall(name="step", args={"n": 2})]]
    with pytest.raises(ProcessDied):
        await stepping_agent(runs, store, first_turns).invoke("go", thread_id="t")
    status = await stepping_agent(runs, store, []).thread_status("t")
    assert status is not None and status.status == "running"
    [(call, result)] = status.tool_results  # what step 1 did, saved before the end
    assert call.args == {"n": 1} and result == ToolResult(content="step 1 done")

    later_turns = [[ToolCall(name="step", args={"n": 2})], "all done"]
    survivor = stepping_agent(runs, store, later_turns)
    result = await survivor.invoke(ContinueRun(), thread_id="t")
    assert result.stop_reason == "end_turn" and result.message == "all done"
    assert runs == [1, 2]  # step 1 ran once; the continued run picked up after it
    final = await survivor.thread_status("t")
    assert final is not None and final.status == "idle" and final.last_result == result


async def test_a_tool_cut_off_mid_way_runs_again_knowing_an_attempt_may_have_happened():
    seen: list[tuple[str, int]] = []

    @tool
    def delete(path: str, context: ToolContext) -> str:
        """Delete a file."""
        seen.append((context.idempotency_key, context.attempt))
        return f"deleted {path}"

    store = DyingStore(die_at=2)  # saves: turn 1 with delete starting, [its result is lost]
    turns = [[ToolCall(name="delete", args={"path": "/tmp/x"})], "done"]
    with pytest.raises(ProcessDied):
        await Agent(model=ScriptedModel(turns), tools=[delete], session_store=store).invoke(
            "go", thread_id="t"
        )
    survivor = Agent(model=ScriptedModel(["done"]), tools=[delete], session_store=store)
    result = await survivor.invoke(ContinueRun(), thread_id="t")
    assert result.message == "done"
    [(key, first), (same_key, second)] = seen
    assert key and key == same_key and (first, second) == (1, 2)


async def test_a_workflow_node_cut_off_mid_way_runs_again_as_a_second_attempt():
    seen: list[tuple[str, int]] = []

    async def cleanup(context: NodeContext) -> str:
        seen.append((context.idempotency_key, context.attempt))
        return "cleaned"

    store = DyingStore(die_at=2)  # saves: start of cleanup, [its completion is lost]
    with pytest.raises(ProcessDied):
        await Workflow(nodes={"cleanup": cleanup}, session_store=store).invoke("go", thread_id="w")
    survivor = Workflow(nodes={"cleanup": cleanup}, session_store=store)
    result = await survivor.invoke(ContinueRun(), thread_id="w")
    assert result.stop_reason == "end_turn" and result.message == "cleaned"
    [(key, first), (same_key, second)] = seen
    assert key == same_key and (first, second) == (1, 2)


async def test_continue_is_refused_when_no_run_is_in_progress():
    agent = stepping_agent([], InMemorySessionStore(), ["hello"])
    await agent.invoke("hi", thread_id="t")
    with pytest.raises(ResumeError, match="no run in progress"):
        await agent.invoke(ContinueRun(), thread_id="t")


async def test_continue_on_a_thread_waiting_for_answers_says_to_answer_them():
    @tool
    def step(n: int) -> str:
        """Do one step."""
        return f"step {n} done"

    turns = [[ToolCall(name="step", args={"n": 1})]]
    agent = Agent(model=ScriptedModel(turns), tools=[step], interrupt_on={"step": True})
    stopped = await agent.invoke("go", thread_id="t")
    [waiting] = stopped.interrupts
    with pytest.raises(ResumeError) as refused:
        await agent.invoke(ContinueRun(), thread_id="t")
    assert str(refused.value) == (
        f"thread t has no run in progress to continue: it waits on interrupts "
        f"[{waiting.id!r}]; answer them to resume it"
    )
    assert (await agent.thread_status("t")).status == "interrupted"  # nothing changed


async def test_a_new_prompt_is_refused_while_a_cut_off_run_is_in_progress():
    store = DyingStore(die_at=2)
    agent = stepping_agent([], store, [[ToolCall(name="step", args={"n": 1})]])
    with pytest.raises(ProcessDied):
        await agent.invoke("go", thread_id="t")
    with pytest.raises(ResumeError, match="in progress"):
        await agent.invoke("another prompt", thread_id="t")


async def test_a_workflow_cut_off_between_nodes_continues_at_the_next_node():
    ran: list[str] = []

    def node(name: str):
        async def run(context: NodeContext) -> str:
            ran.append(name)
            return f"{name} done"

        return run

    def workflow(store: InMemorySessionStore) -> Workflow:
        return Workflow(
            nodes={"inspect": node("inspect"), "delete": node("delete"), "report": node("report")},
            session_store=store,
        )

    store = DyingStore(die_at=4)  # saves: start and end of "inspect", start of "delete", [its end]
    with pytest.raises(ProcessDied):
        await workflow(store).invoke("go", thread_id="t")
    result = await workflow(store).invoke(ContinueRun(), thread_id="t")
    assert result.stop_reason == "end_turn" and result.message == "report done"
    # "delete" ran again: its completion was never saved. "inspect" did not.
    assert ran == ["inspect", "delete", "delete", "report"]


async def test_a_turn_cut_off_before_its_tools_start_leaves_nothing_to_redo():
    # The model's turn is saved with the start of its tools: a process that dies at that
    # save ran no tool and stored nothing of the run, so the prompt is simply sent again.
    runs: list[int] = []
    store = DyingStore(die_at=1)
    with pytest.raises(ProcessDied):
        await stepping_agent(runs, store, [[ToolCall(name="step", args={"n": 1})]]).invoke(
            "go", thread_id="t"
        )
    assert runs == [] and await store.load("t") is None
    again = stepping_agent(runs, store, [[ToolCall(name="step", args={"n": 1})], "done"])
    result = await again.invoke("go", thread_id="t")
    assert result.message == "done" and runs == [1]


class DiesAfterTheTool(InMemorySessionStore):
    """'Dies' at its ``nth`` save after ``ran`` has an entry (the tool ran)."""

    def __init__(self, ran: list, nth: int) -> None:
        super().__init__()
        self.ran, self.left = ran, nth

    async def save(self, thread_id: str, snapshot: Snapshot, *, expected_version: int) -> int:
        if self.ran:
            self.left -= 1
            if self.left == 0:
                raise ProcessDied
        return await super().save(thread_id, snapshot, expected_version=expected_version)


@pytest.mark.parametrize(
    ("nth", "done"),
    [(1, "its tool started, its result not saved"), (2, "its tool ran")],
)
async def test_answers_sent_again_to_a_resume_cut_off_after_its_tool_say_what_ran(
    nth: int, done: str
):
    """An app whose resume was cut off after the approved tool ran, sending a denial
    instead, is told what the earlier try applied and that the tool ran; nothing changes,
    and the run continues with what was applied."""
    deleted: list[list[str]] = []

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    store = DiesAfterTheTool(deleted, nth)
    call = ToolCall(id="d1", name="delete_files", args={"paths": ["/tmp/a"]})
    kept = ToolCall(id="d2", name="delete_files", args={"paths": ["/var/keep"]})

    def agent(turns) -> Agent:
        return Agent(
            model=ScriptedModel(turns),
            tools=[delete_files],
            session_store=store,
            interrupt_on={"delete_files": True},
        )

    asked, spared = (await agent([[call, kept]]).invoke("go", thread_id="t")).interrupts
    answers = {asked.id: Decision.approve(), spared.id: Decision.reject("keep it")}
    with pytest.raises(ProcessDied):
        await agent(["done"]).invoke(answers, thread_id="t")
    before = await store.load("t")
    with pytest.raises(ResumeError) as refused:
        await agent(["done"]).invoke({asked.id: Decision.reject("no")}, thread_id="t")
    assert f"applied {asked.id} delete_files: approve, {done}" in str(refused.value)
    assert "ContinueRun()" in str(refused.value)
    with pytest.raises(ResumeError) as refused:
        await agent(["done"]).invoke(answers, thread_id="t")
    assert f"{spared.id} delete_files: reject, its tool did not run" in str(refused.value)
    assert await store.load("t") == before
    result = await agent(["done"]).invoke(ContinueRun(), thread_id="t")
    assert result.message == "done"
