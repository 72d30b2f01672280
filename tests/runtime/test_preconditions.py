"""Stale approvals are asked again, not executed: a guarded call's precondition is read
when the approver is asked and again before it runs."""

from __future__ import annotations

from typing import Any

from agent_runtime import Agent, Decision, ScriptedModel, ToolCall, tool
from agent_runtime.preconditions import changes

CALL = ToolCall(id="c1", name="delete_volumes", args={"older_than_days": 90})


def cleanup(volumes: list[dict[str, Any]], deleted: list[list[str]]) -> Agent:
    """Deletes the volumes older than N days; the precondition lists them, with sizes."""

    def stale(call: ToolCall) -> list[dict[str, Any]]:
        return [dict(v) for v in volumes]

    @tool
    def delete_volumes(older_than_days: int) -> str:
        """Delete old volumes."""
        deleted.append([v["id"] for v in volumes])
        return f"deleted {len(volumes)}"

    return Agent(
        model=ScriptedModel([[CALL], "done"]),
        tools=[delete_volumes],
        interrupt_on={"delete_volumes": {"precondition": stale}},
    )


VOL_A = {"id": "vol-a", "gb": 10}
VOL_B = {"id": "vol-b", "gb": 20}
VOL_C = {"id": "vol-c", "gb": 5}


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


def test_changes_name_added_and_removed_items() -> None:
    assert changes([1, 2], [2, 3]) == {"added": [3], "removed": [1]}
    assert changes({"a": 1, "b": 2}, {"a": 1, "b": 3}) == {
        "added": [{"b": 3}],
        "removed": [{"b": 2}],
    }
    assert changes("x", "y") == {"before": "x", "now": "y"}
