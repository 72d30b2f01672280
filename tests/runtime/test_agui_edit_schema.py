"""An AG-UI approval that takes an edit says what the edit's ``args`` must fit: the tool's
(or workflow node's) input schema, its definitions at the schema's root, where its
references point; one that takes no edit, or whose tool has no schema, says only that
``args`` is an object."""

from typing import Any

import jsonschema
from pydantic import BaseModel

from agent_runtime import NodeContext, Workflow
from agent_runtime.agui import run_agui

from .test_agui import cleanup_agent, start


async def _interrupt(agent: Any, **options: Any) -> dict[str, Any]:
    events = [dict(e) async for e in run_agui(agent, start(), **options)]
    [interrupt] = events[-1]["outcome"]["interrupts"]
    return dict(interrupt)


async def test_an_approval_that_takes_an_edit_gives_the_tools_input_schema():
    schema = (await _interrupt(cleanup_agent([])))["responseSchema"]
    assert schema["properties"]["args"]["properties"]["paths"]["type"] == "array"
    jsonschema.validate({"type": "edit", "args": {"paths": ["/tmp/a"]}}, schema)
    bad = {"type": "edit", "args": {"paths": "/tmp/a"}}
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)


async def test_an_approval_that_takes_no_edit_says_only_that_args_is_an_object():
    offered = {"offered": lambda _: ("approve", "reject")}
    schema = (await _interrupt(cleanup_agent([]), **offered))["responseSchema"]
    assert schema["properties"]["args"] == {
        "type": "object",
        "description": "new arguments, for edit",
    }


class Volume(BaseModel):
    id: str
    size_gb: int


class Deletion(BaseModel):
    volumes: list[Volume]


async def test_a_nested_input_models_definitions_sit_at_the_schemas_root():
    async def plan(ctx: NodeContext) -> dict[str, Any]:
        return {"volumes": [{"id": "vol-1", "size_gb": 10}]}

    async def delete(ctx: NodeContext) -> str:
        return "deleted"

    workflow = Workflow(
        nodes={"plan": plan, "delete": delete},
        interrupt_before={"delete": True},
        input_models={"delete": Deletion},
    )
    schema = (await _interrupt(workflow))["responseSchema"]
    assert "Volume" in schema["$defs"] and "$defs" not in schema["properties"]["args"]
    edit = {"type": "edit", "args": {"volumes": [{"id": "vol-1", "size_gb": 5}]}}
    jsonschema.validate(edit, schema)
    wrong = {"type": "edit", "args": {"volumes": [{"id": "vol-1", "size_gb": "five"}]}}
    assert not jsonschema.Draft202012Validator(schema).is_valid(wrong)
