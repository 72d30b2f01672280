"""Stale approvals are asked again, not executed: a guarded call's precondition is read
when the approver is asked and again before it runs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_runtime import (
    Agent,
    Decision,
    NodeContext,
    Remember,
    ScriptedModel,
    ToolCall,
    Workflow,
    tool,
)
from agent_runtime.preconditions import changes

CALL = ToolCall(id="c1", name="delete_volumes", args={"older_than_days": 90})


def cleanup(volumes: list[dict[str, Any]], deleted: list[list[str]]) -> Agent:
    """Deletes the volumes older than N days; the precondition lists them, with sizes."""

    def older(days: int) -> list[dict[str, Any]]:
        return [dict(v) for v in volumes if v["days"] >= days]

    def stale(call: ToolCall) -> list[dict[str, Any]]:
        return older(int(call.args["older_than_days"]))

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete old volumes."""
        deleted.append([v["id"] for v in older(older_than_days)])
        return f"deleted {len(deleted[-1])} older than {older_than_days} days"

    return Agent(
        model=ScriptedModel([[CALL], "done"]),
        tools=[delete_volumes],
        interrupt_on={"delete_volumes": {"precondition": stale}},
    )


VOL_A = {"id": "vol-a", "gb": 10, "days": 400}
VOL_B = {"id": "vol-b", "gb": 20, "days": 200}
VOL_C = {"id": "vol-c", "gb": 5, "days": 100}
VOL_NEW = {"id": "vol-new", "gb": 1, "days": 3}


async def test_unchanged_runs_once() -> None:
    volumes, deleted = [VOL_A, VOL_B], []
    agent = cleanup(volumes, deleted)
    asked = await agent.invoke("clean", thread_id="t1")
    [interrupt] = asked.interrupts
    assert interrupt.reason["snapshot"] == [VOL_A, VOL_B]  # type: ignore[index]
    done = await agent.invoke({interrupt.id: Decision.approve()}, thread_id="t1")
    assert done.stop_reason == "end_turn" and deleted == [["vol-a", "vol-b"]]


async def test_changed_is_not_run_and_asked_again_with_the_difference() -> None:
    volumes, deleted = [VOL_A, VOL_B], []
    agent = cleanup(volumes, deleted)
    [first] = (await agent.invoke("clean", thread_id="t2")).interrupts
    volumes[:] = [VOL_A, VOL_C]  # the world moved on while the card waited
    again = await agent.invoke({first.id: Decision.approve()}, thread_id="t2")
    assert deleted == []  # the approval was for vol-a and vol-b
    [second] = again.interrupts
    assert second.id != first.id and second.reason["supersedes"] == first.id  # type: ignore[index]
    assert second.reason["snapshot"] == [VOL_A, VOL_C]  # type: ignore[index]
    assert second.reason["changed"] == {"added": [VOL_C], "removed": [VOL_B]}  # type: ignore[index]

    done = await agent.invoke({second.id: Decision.approve()}, thread_id="t2")
    assert done.stop_reason == "end_turn" and deleted == [["vol-a", "vol-c"]]


async def test_a_denial_stands_whatever_changed() -> None:
    volumes, deleted = [VOL_A], []
    agent = cleanup(volumes, deleted)
    [first] = (await agent.invoke("clean", thread_id="t3")).interrupts
    volumes.append(VOL_B)
    done = await agent.invoke({first.id: Decision.reject("not today")}, thread_id="t3")
    assert done.stop_reason == "end_turn" and done.interrupts == () and deleted == []


async def test_an_edit_that_widens_the_scope_is_not_run_but_asked_again_with_the_edit() -> None:
    volumes, deleted = [VOL_A, VOL_B, VOL_NEW], []
    agent = cleanup(volumes, deleted)
    [first] = (await agent.invoke("clean", thread_id="t4")).interrupts
    assert first.reason["snapshot"] == [VOL_A, VOL_B]  # type: ignore[index]
    edit = Decision.edit({"older_than_days": 1})
    again = await agent.invoke({first.id: edit}, thread_id="t4")
    assert deleted == []  # the card showed vol-a and vol-b; the edit would delete vol-new too
    [second] = again.interrupts
    assert second.name == "approval.2"
    assert second.reason["supersedes"] == first.id  # type: ignore[index]
    assert second.tool_call is not None and second.tool_call.args == {"older_than_days": 1}
    assert second.reason["args"] == {"older_than_days": 1}  # type: ignore[index]
    assert second.reason["snapshot"] == [VOL_A, VOL_B, VOL_NEW]  # type: ignore[index]
    assert second.reason["changed"] == {"added": [VOL_NEW], "removed": []}  # type: ignore[index]

    done = await agent.invoke({second.id: Decision.approve()}, thread_id="t4")
    assert done.stop_reason == "end_turn" and done.interrupts == ()
    assert deleted == [["vol-a", "vol-b", "vol-new"]]


async def test_an_edit_that_acts_on_what_was_shown_runs_at_once() -> None:
    volumes, deleted = [VOL_A, VOL_B, VOL_NEW], []
    agent = cleanup(volumes, deleted)
    [first] = (await agent.invoke("clean", thread_id="t5")).interrupts
    done = await agent.invoke({first.id: Decision.edit({"older_than_days": 60})}, thread_id="t5")
    assert done.stop_reason == "end_turn" and done.interrupts == ()
    assert deleted == [["vol-a", "vol-b"]]  # what the card showed, with the edited arguments
    assert isinstance(agent.model, ScriptedModel)
    assert agent.model.requests[-1].messages[-1].content == "deleted 2 older than 60 days"


def test_changes_name_added_and_removed_items() -> None:
    assert changes([1, 2], [2, 3]) == {"added": [3], "removed": [1]}
    assert changes({"a": 1, "b": 2}, {"a": 1, "b": 3}) == {
        "added": [{"b": 3}],
        "removed": [{"b": 2}],
    }
    assert changes("x", "y") == {"before": "x", "now": "y"}


async def test_a_trusted_approval_voided_by_a_change_does_not_approve_the_call_asked_again() -> (
    None
):
    volumes, deleted = [VOL_A, VOL_B], []
    agent = cleanup(volumes, deleted)
    [first] = (await agent.invoke("clean", thread_id="t")).interrupts
    volumes[:] = [VOL_A, VOL_C]  # the world moved on while the card waited
    trusted = Decision.approve(remember=Remember(scope="run"))
    again = await agent.invoke({first.id: trusted}, thread_id="t")
    # The approver saw vol-a and vol-b; nobody was shown vol-c.
    assert deleted == []
    assert again.stop_reason == "interrupt"


async def test_a_workflow_nodes_precondition_binds_its_approval_to_what_was_shown() -> None:
    """``interrupt_before`` takes a precondition as ``interrupt_on`` does: the node runs
    only on what the approver was shown, and a change asks again."""
    volumes, deleted = [VOL_A, VOL_B], []

    async def inspect(ctx: NodeContext) -> dict[str, Any]:
        return {"older_than_days": 90}

    async def delete(ctx: NodeContext) -> str:
        deleted.append([v["id"] for v in volumes])
        return "deleted"

    workflow = Workflow(
        nodes={"inspect": inspect, "delete": delete},
        interrupt_before={"delete": {"precondition": lambda call: [dict(v) for v in volumes]}},
    )
    [first] = (await workflow.invoke("clean", thread_id="w")).interrupts
    assert first.reason["snapshot"] == [VOL_A, VOL_B]  # type: ignore[index]
    volumes.append(VOL_C)  # the world moved on while the card waited
    again = await workflow.invoke({first.id: Decision.approve()}, thread_id="w")
    assert deleted == []  # the approval was for vol-a and vol-b
    [second] = again.interrupts
    assert second.reason["supersedes"] == first.id  # type: ignore[index]
    assert second.reason["changed"] == {"added": [VOL_C], "removed": []}  # type: ignore[index]
    done = await workflow.invoke({second.id: Decision.approve()}, thread_id="w")
    assert done.stop_reason == "end_turn" and deleted == [["vol-a", "vol-b", "vol-c"]]


async def test_trusting_these_arguments_for_the_run_covers_them_acting_on_what_was_shown() -> None:
    """ "Trust these arguments" binds to what the card showed them acting on, as a grant
    for minutes does: the same arguments acting on more later in the run are asked about."""
    volumes, deleted = [VOL_A], []
    again = ToolCall(id="c2", name="delete_volumes", args={"older_than_days": 90})

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete old volumes."""
        deleted.append([v["id"] for v in volumes])
        volumes[:] = [VOL_B]  # a volume went stale meanwhile
        return "deleted"

    agent = Agent(
        model=ScriptedModel([[CALL], [again], "done"]),
        tools=[delete_volumes],
        interrupt_on={"delete_volumes": {"precondition": lambda call: [dict(v) for v in volumes]}},
    )
    [first] = (await agent.invoke("clean", thread_id="t")).interrupts
    trust = Decision.approve(remember=Remember(scope="run", same_args=True))
    result = await agent.invoke({first.id: trust}, thread_id="t")
    assert deleted == [["vol-a"]]  # nobody was shown vol-b
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].reason["snapshot"] == [VOL_B]  # type: ignore[index]


async def test_an_answer_json_keeps_otherwise_is_compared_as_it_was_stored() -> None:
    """A precondition answering with a tuple, or a datetime, is compared as its stored JSON:
    an unchanged answer runs the approved call, instead of asking again every time."""
    deleted: list[int] = []
    seen = datetime(2026, 1, 5, tzinfo=UTC)

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete old volumes."""
        deleted.append(older_than_days)
        return "deleted"

    agent = Agent(
        model=ScriptedModel([[CALL], "done"]),
        tools=[delete_volumes],
        interrupt_on={
            "delete_volumes": {"precondition": lambda call: ("vol-a", {"last_seen": seen})}
        },
    )
    [first] = (await agent.invoke("clean", thread_id="t")).interrupts
    done = await agent.invoke({first.id: Decision.approve()}, thread_id="t")
    assert done.stop_reason == "end_turn", done.interrupts
    assert deleted == [90]
