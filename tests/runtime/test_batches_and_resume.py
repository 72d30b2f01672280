"""Tool batches, partial answers, bad resumes and resuming in another process."""

import json

import pytest

from agent_runtime import (
    Agent,
    Decision,
    InMemorySessionStore,
    InterruptResponse,
    ResumeError,
    ScriptedModel,
    StaleSessionError,
    ToolCall,
    ToolContext,
    tool,
)


def batch_tools(runs: list[str]):
    @tool
    async def fetch(name: str) -> str:
        """Fetch a record."""
        runs.append(f"fetch:{name}")
        return f"record {name}"

    @tool
    async def purge(name: str, context: ToolContext) -> str:
        """Purge a record after confirmation."""
        answer = context.interrupt(f"purge-{name}")
        runs.append(f"purge:{name}:{answer}")
        return f"purged {name}"

    return [fetch, purge]


async def snapshot_of(store: InMemorySessionStore, thread_id: str) -> str:
    stored = await store.load(thread_id)
    assert stored is not None
    return json.dumps({"version": stored.version, "snapshot": stored.snapshot}, sort_keys=True)


async def test_batch_with_one_interrupt_completes_the_others_once_and_resumes_only_it():
    runs: list[str] = []
    turn = [
        ToolCall(id="c1", name="fetch", args={"name": "a"}),
        ToolCall(id="c2", name="purge", args={"name": "b"}),
        ToolCall(id="c3", name="fetch", args={"name": "c"}),
    ]
    model = ScriptedModel([turn, "all done"])
    agent = Agent(model=model, tools=batch_tools(runs))

    first = await agent.invoke("clean", thread_id="t")
    assert first.stop_reason == "interrupt"
    assert sorted(runs) == ["fetch:a", "fetch:c"]
    assert len(model.requests) == 1

    final = await agent.invoke({first.interrupts[0].id: "yes"}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert sorted(runs) == ["fetch:a", "fetch:c", "purge:b:yes"]
    assert len(model.requests) == 2  # the model is not asked again to redo the batch

    history = model.requests[1].messages
    asked = {c.id for m in history for c in m.tool_calls}
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    assert asked == answered == {"c1", "c2", "c3"}
    assert [m.tool_call_id for m in history if m.role == "tool"] == ["c1", "c2", "c3"]


async def test_answering_one_of_two_interrupts_leaves_the_other_pending_with_its_id():
    runs: list[str] = []
    turn = [
        ToolCall(id="c1", name="purge", args={"name": "a"}),
        ToolCall(id="c2", name="purge", args={"name": "b"}),
    ]
    agent = Agent(model=ScriptedModel([turn, "done"]), tools=batch_tools(runs))
    first = await agent.invoke("clean", thread_id="t")
    by_name = {i.name: i for i in first.interrupts}
    assert set(by_name) == {"purge-a", "purge-b"}

    second = await agent.invoke({by_name["purge-a"].id: "ok"}, thread_id="t")
    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [by_name["purge-b"].id]
    assert runs == ["purge:a:ok"]

    third = await agent.invoke({by_name["purge-b"].id: "ok"}, thread_id="t")
    assert third.stop_reason == "end_turn"
    assert runs == ["purge:a:ok", "purge:b:ok"]


@pytest.mark.parametrize(
    "bad_input",
    [
        pytest.param({"int_unknown": "yes"}, id="unknown-id"),
        pytest.param("a new prompt", id="prompt-while-interrupted"),
        pytest.param([], id="no-answers"),
        pytest.param(["not a response"], id="malformed"),
    ],
)
async def test_bad_resume_is_a_clear_error_that_changes_nothing(bad_input):
    store = InMemorySessionStore()
    runs: list[str] = []
    turn = [ToolCall(id="c1", name="purge", args={"name": "a"})]
    agent = Agent(model=ScriptedModel([turn, "done"]), tools=batch_tools(runs), session_store=store)
    await agent.invoke("clean", thread_id="t")
    before = await snapshot_of(store, "t")
    with pytest.raises(ResumeError):
        await agent.invoke(bad_input, thread_id="t")
    assert await snapshot_of(store, "t") == before
    assert runs == []


async def test_a_resume_on_a_thread_with_nothing_pending_is_refused():
    agent = Agent(model=ScriptedModel(["hi"]))
    await agent.invoke("hello", thread_id="t")
    with pytest.raises(ResumeError, match="no open interrupts"):
        await agent.invoke({"int_x": "yes"}, thread_id="t")


async def test_a_prompt_to_a_waiting_thread_is_told_both_ways_to_answer():
    """The README's ``{interrupt_id: Decision}`` as well as ``InterruptResponse``."""
    agent = Agent(
        model=ScriptedModel([[ToolCall(id="c1", name="purge", args={"name": "a"})], "done"]),
        tools=batch_tools([]),
    )
    await agent.invoke("clean", thread_id="t")
    with pytest.raises(ResumeError, match=r"\{interrupt_id: Decision\} or InterruptResponse"):
        await agent.invoke("clean again", thread_id="t")


async def test_a_new_agent_with_a_new_store_object_resumes_from_the_snapshot():
    runs: list[str] = []
    first_store = InMemorySessionStore()
    turn = [ToolCall(id="c1", name="purge", args={"name": "a"})]
    first_agent = Agent(
        model=ScriptedModel([turn]), tools=batch_tools(runs), session_store=first_store
    )
    result = await first_agent.invoke("clean", thread_id="t")

    stored = await first_store.load("t")
    assert stored is not None
    second_store = InMemorySessionStore()
    await second_store.save("t", json.loads(json.dumps(stored.snapshot)), expected_version=0)
    second_model = ScriptedModel(["finished"])
    second_agent = Agent(model=second_model, tools=batch_tools(runs), session_store=second_store)
    final = await second_agent.invoke({result.interrupts[0].id: "go"}, thread_id="t")

    assert final.stop_reason == "end_turn" and final.message == "finished"
    assert final.run_id == result.run_id
    assert runs == ["purge:a:go"]
    assert [m.role for m in second_model.requests[0].messages] == ["user", "assistant", "tool"]


async def test_replaying_the_same_resume_never_runs_a_completed_tool_twice():
    runs: list[str] = []
    turn = [ToolCall(id="c1", name="purge", args={"name": "a"})]
    agent = Agent(model=ScriptedModel([turn, "done"]), tools=batch_tools(runs))
    result = await agent.invoke("clean", thread_id="t")
    answer = [InterruptResponse(interrupt_id=result.interrupts[0].id, response="yes")]
    await agent.invoke(answer, thread_id="t")
    with pytest.raises(ResumeError):
        await agent.invoke(answer, thread_id="t")
    assert runs == ["purge:a:yes"]


async def test_a_stale_save_is_refused():
    store = InMemorySessionStore()
    version = await store.save("t", {"v": 1}, expected_version=0)
    await store.save("t", {"v": 2}, expected_version=version)
    with pytest.raises(StaleSessionError):
        await store.save("t", {"v": 3}, expected_version=version)
    stored = await store.load("t")
    assert stored is not None and stored.snapshot == {"v": 2}


def test_decisions_and_responses_round_trip_through_json():
    decision = Decision.edit({"to": "a@b.c"})
    response = InterruptResponse(interrupt_id="int_1", decision=decision, metadata={"u": "U1"})
    restored = InterruptResponse.from_dict(json.loads(json.dumps(response.to_dict())))
    assert restored == response
    plain = InterruptResponse(interrupt_id="int_2", response={"seat": "1A"})
    assert InterruptResponse.from_dict(json.loads(json.dumps(plain.to_dict()))) == plain


def test_an_interrupt_response_needs_exactly_one_answer():
    with pytest.raises(ResumeError):
        InterruptResponse(interrupt_id="int_1")
    with pytest.raises(ResumeError):
        InterruptResponse(interrupt_id="int_1", response="x", decision=Decision.approve())


async def test_open_interrupts_lists_what_the_thread_waits_on():
    turn = [ToolCall(id="c1", name="purge", args={"name": "a"})]
    agent = Agent(model=ScriptedModel([turn, "done"]), tools=batch_tools([]))
    assert await agent.open_interrupts("t") == []
    result = await agent.invoke("clean", thread_id="t")
    assert await agent.open_interrupts("t") == list(result.interrupts)
    await agent.invoke({result.interrupts[0].id: "yes"}, thread_id="t")
    assert await agent.open_interrupts("t") == []


async def test_cancel_ends_a_waiting_run_and_the_thread_takes_a_new_prompt():
    ran: list[str] = []

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        ran.extend(paths)
        return "deleted"

    model = ScriptedModel(
        [[ToolCall(id="c1", name="delete_files", args={"paths": ["/tmp/a"]})], "next turn"]
    )
    agent = Agent(model=model, tools=[delete_files], interrupt_on={"delete_files": True})
    first = await agent.invoke("clean", thread_id="t")
    assert first.stop_reason == "interrupt"

    cancelled = await agent.cancel("t", "withdrawn by U0CAROL")
    assert cancelled is not None and cancelled.stop_reason == "cancelled"
    status = await agent.thread_status("t")
    assert status is not None and status.status == "idle" and status.interrupts == ()
    assert await agent.cancel("t", "again") is None  # nothing waits any more
    with pytest.raises(ResumeError):
        await agent.invoke({first.interrupts[0].id: Decision.approve()}, thread_id="t")

    second = await agent.invoke("something else", thread_id="t")
    assert second.message == "next turn" and ran == []
    # The cancelled call has its result, so the history the model sees is well formed.
    [result] = [m for m in model.requests[-1].messages if m.role == "tool"]
    assert result.tool_call_id == "c1" and result.is_error
    assert result.content == "withdrawn by U0CAROL"
