"""Which form the Edit modal shows: the fields of the tool's input schema (as its agent
tells it, an adapted framework's too), of a workflow node's input model, or of a job's
editable params; None means the arguments are edited as JSON (a workflow node without an
input model, a tool of unknown schema)."""

from __future__ import annotations

from typing import Any

import pydantic

from agent_runtime import Agent, Workflow
from agent_runtime.errors import AgentRuntimeError, EditRefusedError
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.runnable import Runnable
from bot.services import Services
from bot.ui.arg_form import Field, field_errors, fields_of
from storage.records import InterruptRecord
from storage.requests import is_request_run


async def edit_fields(services: Services, record: InterruptRecord) -> list[Field] | None:
    """The form's fields for ``record``'s arguments, or None for JSON."""
    schema = await _schema(services, record)
    return fields_of(schema) if schema is not None else None


async def check_form_args(
    services: Services, record: InterruptRecord, fields: list[Field], args: dict[str, JSONValue]
) -> tuple[dict[str, JSONValue], dict[str, str]]:
    """The full arguments the form's ``args`` stand for, and a sentence per field (by
    block id) whose value does not fit the tool."""
    call = record.runtime_interrupt.tool_call
    assert call is not None
    if is_request_run(record.run_id):
        locked = {k: v for k, v in call.args.items() if k not in args}
        return {**locked, **args}, {}  # a job's own rules check types and locks
    tool = _tool(services, record)
    if tool is None:  # an adapted framework's tool: checked as its JSON edit is
        return args, _refused(_runnable(services, record), call, fields, args)
    try:
        tool.model_validate(args)
    except pydantic.ValidationError as exc:
        errors = field_errors(exc.errors(), fields)
        if not errors and fields:
            first = exc.errors()[0]["msg"]
            errors = {fields[0].block_id: f"These arguments do not fit {call.name}: {first}."}
        return args, errors
    return args, {}


def _refused(
    runnable: Runnable | None, call: ToolCall, fields: list[Field], args: dict[str, JSONValue]
) -> dict[str, str]:
    """What the runnable's own check of the tool says of ``args`` (as of a JSON edit): a
    sentence under the field it names, else under the form's first field."""
    if runnable is None or not fields:
        return {}
    try:
        runnable.check_edit(call, args)
    except AgentRuntimeError as exc:
        whole = {fields[0].block_id: f"These arguments do not fit {call.name}: {exc}"}
        if not isinstance(exc, EditRefusedError) or exc.argument is None:
            return whole
        return field_errors([{"loc": (exc.argument,), "msg": exc.problem}], fields) or whole
    return {}


async def _schema(services: Services, record: InterruptRecord) -> dict[str, Any] | None:
    call = record.runtime_interrupt.tool_call
    if call is None:
        return None
    if is_request_run(record.run_id):
        meta = await services.storage.requests.meta(record.run_id)
        if meta is None:
            return None
        editable = [p for p in meta.params if p.editable]
        return {
            "type": "object",
            "properties": {p.name: {"type": p.type} for p in editable},
            "required": [p.name for p in editable],
        }
    runnable = _runnable(services, record)
    return runnable.tool_schema(call.name) if runnable is not None else None


def _runnable(services: Services, record: InterruptRecord) -> Runnable | None:
    """The agent ``record``'s run is of, when this process has it."""
    if services.registry.spec(record.agent) is None:
        return None
    return services.registry.agent(record.agent)


def _tool(services: Services, record: InterruptRecord) -> type[pydantic.BaseModel] | None:
    """The input model of the tool ``record`` asks about, when its agent is an ``Agent`` (or
    a ``Workflow`` with an agent node that has it), or of the workflow node it asks about."""
    call = record.runtime_interrupt.tool_call
    agent = _runnable(services, record)
    if call is None or not isinstance(agent, Agent | Workflow):
        return None
    if isinstance(agent, Workflow) and call.name in agent.input_models:
        return agent.input_models[call.name]
    tool = agent.tools.get(call.name)
    return tool.input_model if tool is not None else None
