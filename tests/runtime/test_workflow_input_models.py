"""A guarded workflow node's input model: its schema is the node's edit schema, an edit
that does not fit it is refused before anything runs, and a model naming a node the
workflow does not guard, or not a pydantic model, stops the workflow's build."""

from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent_runtime import Decision, NodeContext, Workflow
from agent_runtime.errors import EditRefusedError, UsageError


class Scale(BaseModel):
    service: str
    replicas: int = Field(ge=1)


def _workflow(ran: list[Any], **options: Any) -> Workflow:
    async def plan(ctx: NodeContext) -> dict[str, Any]:
        return {"service": "api", "replicas": 2}

    async def scale(ctx: NodeContext) -> str:
        ran.append(ctx.input)
        return "scaled"

    return Workflow(
        nodes={"plan": plan, "scale": scale}, interrupt_before={"scale": True}, **options
    )


async def test_an_edit_the_nodes_input_model_refuses_runs_nothing_and_a_fitting_one_runs():
    ran: list[Any] = []
    workflow = _workflow(ran, input_models={"scale": Scale})
    assert workflow.tool_schema("scale") == Scale.model_json_schema()
    asked = await workflow.invoke("go", thread_id="t")
    [approval] = asked.interrupts
    with pytest.raises(EditRefusedError) as refused:
        await workflow.invoke(
            {approval.id: Decision.edit({"service": "web", "replicas": 0})}, thread_id="t"
        )
    assert refused.value.argument == "replicas"
    assert ran == []
    done = await workflow.invoke(
        {approval.id: Decision.edit({"service": "web", "replicas": 3})}, thread_id="t"
    )
    assert done.stop_reason == "end_turn"
    assert ran == [{"service": "web", "replicas": 3}]


def test_a_node_without_an_input_model_has_no_schema() -> None:
    assert _workflow([]).tool_schema("scale") is None


def test_an_input_model_for_an_unguarded_node_or_not_a_model_stops_the_build() -> None:
    with pytest.raises(UsageError, match=r"does not guard: \['plan'\]"):
        _workflow([], input_models={"plan": Scale})
    with pytest.raises(UsageError, match="must be a pydantic model class"):
        _workflow([], input_models={"scale": dict})
