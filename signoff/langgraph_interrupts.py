"""Reading a LangGraph graph's pending interrupts as Signoff interrupts: LangChain's tool
approval shape is an approval, a ``HumanInTheLoopMiddleware`` batch an approval per
action (under its model call's id), any other value a question (shown as JSON, what has
no JSON form as its text); and checking that middleware's ``interrupt_on``, and an
approver's edit, against the agent's tools."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeGuard

import pydantic
from langchain_core.messages import AIMessage

from agent_runtime.edit_checks import check_model
from agent_runtime.errors import UsageError
from agent_runtime.interrupts import DECISION_TYPES, DecisionType, Interrupt
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import json_safe

from .edits import check_schema

APPROVAL_SHAPE = "tool_approval"
PREFIX = "lg_"
"""Starts the Signoff id of each of a graph's interrupts."""
ACTION = "_action_"
"""Separates a batch's interrupt id from the position of one of its actions."""


def check_interrupt_on(graph: Any) -> None:
    """UsageError when a LangChain agent's ``HumanInTheLoopMiddleware`` names in its
    ``interrupt_on`` a tool the agent lacks: LangChain accepts it, and the tool meant
    (misspelt) would run unasked. A graph with no tools node or no such middleware passes."""
    tools = langchain_tools(graph)
    if tools is None:
        return
    nodes = getattr(graph, "nodes", None) or {}
    for node in nodes.values():
        middleware = getattr(getattr(getattr(node, "bound", None), "func", None), "__self__", None)
        interrupt_on = getattr(middleware, "interrupt_on", None)
        if not isinstance(interrupt_on, Mapping):
            continue
        unknown = sorted(set(interrupt_on) - set(tools))
        if unknown:
            raise UsageError(
                f"{type(middleware).__name__}: interrupt_on names tools this agent lacks: "
                f"{unknown}; its tools are {sorted(tools)}"
            )


def langchain_tools(graph: Any) -> Mapping[str, Any] | None:
    """A LangChain agent's tools by name (its ``tools`` node's); None for another graph,
    whose interrupts name what they like."""
    nodes = getattr(graph, "nodes", None) or {}
    tools = getattr(getattr(nodes.get("tools"), "bound", None), "tools_by_name", None)
    return tools if isinstance(tools, Mapping) else None


def tool_node_tools(graph: Any) -> frozenset[str]:
    """The tools of each ``ToolNode`` among the graph's nodes, by name."""
    nodes = getattr(graph, "nodes", None) or {}
    return frozenset(
        name
        for node in nodes.values()
        for name in getattr(getattr(node, "bound", None), "tools_by_name", None) or ()
    )


def check_edit(tools: Mapping[str, Any], call: ToolCall, args: dict[str, JSONValue]) -> None:
    """ResumeError when edited ``args`` do not fit the arguments of the LangChain tool
    ``call`` names (its ``tool_call_schema``: a pydantic model or a JSON Schema)."""
    schema = getattr(tools.get(call.name), "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        check_model(call.name, pydantic.TypeAdapter(schema), args)
    elif isinstance(schema, Mapping):
        check_schema(call.name, schema, args)


def tool_schema(tools: Mapping[str, Any], name: str) -> dict[str, JSONValue] | None:
    """The JSON Schema of the arguments of the LangChain tool ``name`` (its
    ``tool_call_schema``, as ``check_edit`` checks them), or None."""
    schema = getattr(tools.get(name), "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return schema.model_json_schema()
    return dict(schema) if isinstance(schema, Mapping) else None


def pending_interrupts(state: Any) -> list[Interrupt]:
    """The graph's pending interrupts, as Signoff interrupts (a batch: one per action),
    dated by the checkpoint they are pending on unless a marker dates them more closely."""
    found: list[Interrupt] = []
    for task in state.tasks or ():
        for pending in task.interrupts or ():
            value = json_safe(pending.value)
            if _is_batch(value):
                found += _batch(pending.id, value, _last_calls(state.values))
            else:
                schema = getattr(pending, "response_schema", None)
                found.append(_interrupt(pending.id, value, schema))
    if state.created_at is None:
        return found
    checkpoint_at = datetime.fromisoformat(state.created_at)
    return [dataclasses.replace(i, created_at=checkpoint_at) for i in found]


def _is_batch(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """A ``HumanInTheLoopMiddleware`` batch: a list of actions, each an object whose
    ``args`` (if any) are an object."""
    actions = value.get("action_requests") if isinstance(value, Mapping) else None
    return isinstance(actions, list) and all(_is_action(a) for a in actions)


def _is_action(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """An object naming a tool call whose ``args``, if any, are an object (what an edit
    replaces); another shape is asked about as a question."""
    return isinstance(value, Mapping) and isinstance(value.get("args") or {}, Mapping)


def _last_calls(values: Any) -> list[Mapping[str, Any]]:
    """The tool calls of a LangChain agent's last model turn (what a batch asks about)."""
    messages = values.get("messages") if isinstance(values, Mapping) else None
    turns = [m for m in messages or () if isinstance(m, AIMessage)]
    return list(turns[-1].tool_calls) if turns else []


def _action_call_ids(
    actions: Sequence[Any], calls: Sequence[Mapping[str, Any]]
) -> list[str | None]:
    """The model's call id of each action of a batch: the middleware lists the turn's gated
    calls in order, so each action is the next call of its name and arguments. None where
    that is not sure: no call matches, the turn has more calls like it than the batch
    asks about (a ``when`` predicate let one through), or two actions would share an id
    (a model giving no ids)."""

    def shape(item: Mapping[str, Any]) -> tuple[Any, Any]:
        return item.get("name"), item.get("args")

    remaining = iter(calls)
    found = [
        next((str(c.get("id") or "") for c in remaining if shape(c) == shape(action)), "")
        for action in actions
    ]
    asked = [shape(a) for a in actions]
    made = [shape(c) for c in calls]
    return [
        i if i and found.count(i) == 1 and made.count(s) == asked.count(s) else None
        for i, s in zip(found, asked, strict=True)
    ]


def _batch(
    graph_id: str, value: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]
) -> list[Interrupt]:
    """A ``HumanInTheLoopMiddleware`` request: one approval per action, in order, each
    under its model call's id (what its tool's result is told under)."""
    configs = value.get("review_configs") or []
    call_ids = _action_call_ids(value["action_requests"], calls)
    found = []
    for n, action in enumerate(value["action_requests"]):
        config = configs[n] if n < len(configs) and isinstance(configs[n], Mapping) else {}
        allowed = tuple(d for d in DECISION_TYPES if d in (config.get("allowed_decisions") or ()))
        call = ToolCall(
            id=call_ids[n] or f"{graph_id}_{n}",
            name=str(action.get("name")),
            args=dict(action.get("args") or {}),
        )
        found.append(
            Interrupt(
                id=f"{PREFIX}{graph_id}{ACTION}{n}",
                name="approval",
                reason=dict(action),
                tool_call=call,
                allowed_decisions=allowed or DECISION_TYPES,
                description=str(action.get("description") or f"{call.name} needs approval"),
            )
        )
    return found


def _interrupt(graph_id: str, value: Any, schema: Any) -> Interrupt:
    iid = PREFIX + graph_id
    if _is_action(value) and value.get("type") == APPROVAL_SHAPE:
        call = ToolCall(
            id=str(value.get("tool_call_id") or graph_id),
            name=str(value.get("name") or "tool"),
            args=dict(value.get("args") or {}),
        )
        return Interrupt(
            id=iid,
            name="approval",
            reason=dict(value),
            tool_call=call,
            allowed_decisions=allowed_decisions(schema or value.get("response_schema")),
            description=str(value.get("description") or f"{call.name} needs approval"),
        )
    return Interrupt(id=iid, name="question", reason=value, question=True)


def allowed_decisions(schema: Any) -> tuple[DecisionType, ...]:
    """The decisions a ``response_schema`` allows: a ``type`` enum or const, or, as
    pydantic writes a tagged union, its discriminator's mapping or each variant's tag."""
    names = _decision_tags(schema)
    allowed = tuple(d for d in DECISION_TYPES if d in names)
    return allowed or DECISION_TYPES


def _decision_tags(schema: Any) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    mapping = (schema.get("discriminator") or {}).get("mapping")
    if isinstance(mapping, Mapping):
        return {str(k) for k in mapping}
    tag = (schema.get("properties") or {}).get("type") or {}
    if isinstance(tag.get("enum"), list):
        return {str(v) for v in tag["enum"]}
    if "const" in tag:
        return {str(tag["const"])}
    variants = schema.get("oneOf") or schema.get("anyOf") or []
    defs = schema.get("$defs") or {}
    found: set[str] = set()
    for variant in variants if isinstance(variants, list) else []:
        ref = str(variant.get("$ref", "")) if isinstance(variant, Mapping) else ""
        found |= _decision_tags(defs.get(ref.rsplit("/", 1)[-1]) if ref else variant)
    return found
