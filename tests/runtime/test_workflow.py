"""Workflows: node approvals, their decisions, and resuming elsewhere."""

import json
from datetime import UTC, datetime

import pytest

from agent_runtime import (
    Decision,
    InMemorySessionStore,
    NodeContext,
    Remember,
    ResumeError,
    Workflow,
)

from .workflows import cleanup


async def snapshot_of(store: InMemorySessionStore, thread_id: str) -> str:
    stored = await store.load(thread_id)
    assert stored is not None
    return json.dumps({"version": stored.version, "snapshot": stored.snapshot}, sort_keys=True)


async def test_interrupt_before_delete_asks_with_the_node_and_its_input():
    runs: list[str] = []
    result = await cleanup(runs).invoke("/var/log", thread_id="t")
    assert result.stop_reason == "interrupt"
    assert runs == ["inspect"]
    [approval] = result.interrupts
    assert approval.name == "approval"
    assert approval.description == "Delete old log files"
    assert approval.allowed_decisions == ("approve", "edit", "reject")
    assert approval.tool_call is not None
    assert approval.tool_call.name == "delete"
    assert approval.tool_call.args == {"path": "/var/log", "files": ["a.log", "b.log"]}


async def test_denied_delete_never_runs_and_the_workflow_ends_cancelled_with_the_reason():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    answer = {first.interrupts[0].id: Decision.reject("not during the incident")}
    final = await workflow.invoke(answer, thread_id="t")
    assert final.stop_reason == "cancelled"
    assert final.message == "not during the incident"
    assert final.interrupts == ()
    assert runs == ["inspect"]


async def test_approved_delete_runs_exactly_once_and_report_sees_its_output():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    final = await workflow.invoke({first.interrupts[0].id: Decision.approve()}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert final.message == "deleted a.log, b.log"
    assert final.run_id == first.run_id
    assert runs == ["inspect", "delete", "report"]


async def test_an_approval_sent_as_plain_json_is_accepted():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    final = await workflow.invoke({first.interrupts[0].id: {"type": "approve"}}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert runs == ["inspect", "delete", "report"]


async def test_an_edit_decision_replaces_the_node_input():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    edited = {"path": "/var/log", "files": ["a.log"]}
    final = await workflow.invoke({first.interrupts[0].id: Decision.edit(edited)}, thread_id="t")
    assert final.message == "deleted a.log"
    assert runs == ["inspect", "delete", "report"]


async def test_delete_sees_the_original_input_when_a_human_edited_it():
    seen: list[object] = []

    async def delete(ctx: NodeContext) -> str:
        seen.append((ctx.input, ctx.original_input, ctx.is_resumed))
        return "done"

    workflow = Workflow(nodes={"delete": delete}, interrupt_before={"delete": True})
    first = await workflow.invoke("/tmp/old", thread_id="t")
    edit = Decision.edit({"input": "/tmp/older"})
    await workflow.invoke({first.interrupts[0].id: edit}, thread_id="t")
    assert seen == [("/tmp/older", "/tmp/old", True)]


async def test_remembered_node_approval_is_not_asked_again_on_the_thread():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    trust = Decision.approve(remember=Remember(scope="thread"))
    await workflow.invoke({first.interrupts[0].id: trust}, thread_id="t")
    again = await workflow.invoke("/var/log", thread_id="t")
    assert again.stop_reason == "end_turn"
    assert runs == ["inspect", "delete", "report"] * 2


async def test_a_fresh_workflow_and_store_resume_from_the_stored_snapshot():
    runs: list[str] = []
    store = InMemorySessionStore()
    first = await cleanup(runs, store).invoke("/var/log", thread_id="t")

    stored = await store.load("t")
    assert stored is not None
    other_store = InMemorySessionStore()
    await other_store.save("t", stored.snapshot, expected_version=0)
    other_runs: list[str] = []
    final = await cleanup(other_runs, other_store).invoke(
        {first.interrupts[0].id: Decision.approve()}, thread_id="t"
    )
    assert final.stop_reason == "end_turn"
    assert final.message == "deleted a.log, b.log"
    assert runs == ["inspect"]
    assert other_runs == ["delete", "report"]


async def test_replaying_a_resume_is_refused_and_runs_no_node_again():
    runs: list[str] = []
    store = InMemorySessionStore()
    workflow = cleanup(runs, store)
    first = await workflow.invoke("/var/log", thread_id="t")
    answer = {first.interrupts[0].id: Decision.approve()}
    await workflow.invoke(answer, thread_id="t")
    before = await snapshot_of(store, "t")

    with pytest.raises(ResumeError, match="no open interrupts"):
        await cleanup(runs, store).invoke(answer, thread_id="t")
    assert runs == ["inspect", "delete", "report"]
    assert await snapshot_of(store, "t") == before


@pytest.mark.parametrize(
    "bad_input",
    [
        pytest.param({"int_unknown": Decision.approve()}, id="unknown id"),
        pytest.param("yes", id="malformed answer"),
        pytest.param("clean again", id="prompt while interrupted"),
        pytest.param("reject-not-allowed", id="decision not allowed"),
    ],
)
async def test_a_bad_resume_is_refused_and_changes_nothing(bad_input):
    runs: list[str] = []
    store = InMemorySessionStore()
    workflow = cleanup(runs, store, interrupt_before={"delete": {"allowed_decisions": ["approve"]}})
    first = await workflow.invoke("/var/log", thread_id="t")
    iid = first.interrupts[0].id
    if bad_input == "yes":
        bad_input = {iid: "yes"}
    elif bad_input == "reject-not-allowed":
        bad_input = {iid: Decision.reject("no")}
    before = await snapshot_of(store, "t")

    with pytest.raises(ResumeError):
        await workflow.invoke(bad_input, thread_id="t")
    assert await snapshot_of(store, "t") == before
    assert runs == ["inspect"]


async def test_a_node_output_json_cannot_hold_is_kept_as_json_the_next_node_gets_anywhere():
    """A node returning a datetime or a tuple: its output is kept as JSON (the datetime as
    its text), so the run stops at the next node's approval instead of failing its save,
    and the next node gets the same input in this process as in another that resumes."""
    seen: list[object] = []

    async def inspect(ctx: NodeContext) -> dict:
        return {"since": datetime(2026, 1, 2, 3, 4, tzinfo=UTC), "files": ("a.log", "b.log")}

    async def delete(ctx: NodeContext) -> str:
        seen.append(ctx.input)
        return "deleted"

    def workflow(store: InMemorySessionStore, *, guarded: bool = True) -> Workflow:
        return Workflow(
            nodes={"inspect": inspect, "delete": delete},
            interrupt_before={"delete": True} if guarded else {},
            session_store=store,
        )

    kept = {"since": "2026-01-02 03:04:00+00:00", "files": ["a.log", "b.log"]}
    store = InMemorySessionStore()
    [asked] = (await workflow(store).invoke("go", thread_id="t")).interrupts
    assert asked.tool_call is not None and asked.tool_call.args == kept
    final = await workflow(store).invoke({asked.id: Decision.approve()}, thread_id="t")
    assert final.message == "deleted"
    await workflow(InMemorySessionStore(), guarded=False).invoke("go", thread_id="t")
    assert seen == [kept, kept]
