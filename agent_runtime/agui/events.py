"""AG-UI 1.0 events as plain camelCase dicts, and how a run's events become them.

The shapes follow ag-ui-protocol 1.0 exactly (optional fields are left out, never
null), so a client can ``json.dumps`` them straight onto an SSE stream. An interrupt's
``reason`` is its name; what the run asks about (the runtime's ``reason`` value) travels
as ``metadata.payload``, because the 1.0 ``Interrupt`` has no ``payload`` field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal, NotRequired, TypedDict

from ..interrupts import DecisionType, Interrupt
from ..messages import JSONValue, ToolCall
from ..results import AgentResult, ToolResult
from ..run_events import TextMessage

PROTOCOL_VERSION = "1.0"


class RunStartedEvent(TypedDict):
    type: Literal["RUN_STARTED"]
    threadId: str
    runId: str
    protocolVersion: str


class AguiInterrupt(TypedDict):
    """One thing the run waits for; a resume entry answers it by ``id``."""

    id: str
    reason: str
    message: NotRequired[str]
    toolCallId: NotRequired[str]
    responseSchema: NotRequired[dict[str, JSONValue]]
    expiresAt: NotRequired[str]
    metadata: NotRequired[dict[str, JSONValue]]


class SuccessOutcome(TypedDict):
    type: Literal["success"]


class InterruptOutcome(TypedDict):
    type: Literal["interrupt"]
    interrupts: list[AguiInterrupt]


class CancelledOutcome(TypedDict):
    type: Literal["cancelled"]


class RunFinishedEvent(TypedDict):
    type: Literal["RUN_FINISHED"]
    threadId: str
    runId: str
    outcome: SuccessOutcome | InterruptOutcome | CancelledOutcome
    result: NotRequired[JSONValue]
    metadata: NotRequired[dict[str, JSONValue]]


class RunErrorEvent(TypedDict):
    type: Literal["RUN_ERROR"]
    message: str
    code: str


class TextMessageStartEvent(TypedDict):
    type: Literal["TEXT_MESSAGE_START"]
    messageId: str
    role: Literal["assistant"]


class TextMessageContentEvent(TypedDict):
    type: Literal["TEXT_MESSAGE_CONTENT"]
    messageId: str
    delta: str


class TextMessageEndEvent(TypedDict):
    type: Literal["TEXT_MESSAGE_END"]
    messageId: str


class ToolCallStartEvent(TypedDict):
    type: Literal["TOOL_CALL_START"]
    toolCallId: str
    toolCallName: str
    parentMessageId: NotRequired[str]


class ToolCallArgsEvent(TypedDict):
    type: Literal["TOOL_CALL_ARGS"]
    toolCallId: str
    delta: str


class ToolCallEndEvent(TypedDict):
    type: Literal["TOOL_CALL_END"]
    toolCallId: str


class ToolCallResultEvent(TypedDict):
    """A tool's output; ``metadata.isError`` marks failures and refused calls."""

    type: Literal["TOOL_CALL_RESULT"]
    messageId: str
    toolCallId: str
    content: str
    role: Literal["tool"]
    metadata: NotRequired[dict[str, JSONValue]]


AguiEvent = (
    RunStartedEvent
    | RunFinishedEvent
    | RunErrorEvent
    | TextMessageStartEvent
    | TextMessageContentEvent
    | TextMessageEndEvent
    | ToolCallStartEvent
    | ToolCallArgsEvent
    | ToolCallEndEvent
    | ToolCallResultEvent
)


def run_started(*, thread_id: str, run_id: str) -> RunStartedEvent:
    return {
        "type": "RUN_STARTED",
        "threadId": thread_id,
        "runId": run_id,
        "protocolVersion": PROTOCOL_VERSION,
    }


def run_error(message: str, *, code: str) -> RunErrorEvent:
    return {"type": "RUN_ERROR", "message": message, "code": code}


Expiry = Callable[[Interrupt], datetime | None]
"""When an interrupt stops accepting answers (the serving app's policy), if ever."""
Offered = Callable[[Interrupt], tuple[DecisionType, ...]]
"""The decisions an approval takes (the serving app's policy may offer fewer than the
interrupt allows)."""
Remembers = Callable[[Interrupt], bool]
"""Whether an approval's answer may ``remember`` (trust later calls): the serving app may
give trust on another surface alone."""
ArgsSchema = Callable[[str], dict[str, JSONValue] | None]
"""The JSON Schema of the arguments of the tool (or workflow node) a name names, if known:
what an edit must fit (``Runnable.tool_schema``)."""


def run_finished(
    result: AgentResult,
    *,
    thread_id: str,
    run_id: str,
    expiry: Expiry | None = None,
    offered: Offered | None = None,
    remembers: Remembers | None = None,
    args_schema: ArgsSchema | None = None,
) -> RunFinishedEvent | RunErrorEvent:
    """The event that ends the run: finished (success, interrupt, cancelled) or an error.

    A run stopped by an error or by its step limit did not do its job: RUN_ERROR, with
    the stop reason as ``code``.
    """
    event: RunFinishedEvent = {
        "type": "RUN_FINISHED",
        "threadId": thread_id,
        "runId": run_id,
        "outcome": {"type": "success"},
    }
    if result.stop_reason == "end_turn":
        event["result"] = result.message
        return event
    if result.stop_reason == "interrupt" and result.interrupts:
        interrupts = [
            agui_interrupt(
                i,
                expires_at=expiry(i) if expiry else None,
                decisions=offered(i) if offered else None,
                remember=remembers(i) if remembers else True,
                args_schema=args_schema(i.tool_call.name) if args_schema and i.tool_call else None,
            )
            for i in result.interrupts
        ]
        event["outcome"] = {"type": "interrupt", "interrupts": interrupts}
        return event
    if result.stop_reason == "cancelled":
        event["outcome"] = {"type": "cancelled"}
        event["metadata"] = {"reason": result.message}
        return event
    return run_error(result.message, code=result.stop_reason)


def agui_interrupt(
    interrupt: Interrupt,
    *,
    expires_at: datetime | None = None,
    decisions: tuple[DecisionType, ...] | None = None,
    remember: bool = True,
    args_schema: dict[str, JSONValue] | None = None,
) -> AguiInterrupt:
    """An open interrupt as AG-UI shows it; approvals carry the schema of a decision (one
    of ``decisions``, by default those it allows, with a ``remember`` when ``remember``,
    and an edit's ``args`` as ``args_schema`` says when it takes one), and a question with
    options the schema of one of them."""
    wire: AguiInterrupt = {"id": interrupt.id, "reason": interrupt.name}
    if expires_at is not None:
        wire["expiresAt"] = expires_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    message = interrupt.description or (
        interrupt.reason if isinstance(interrupt.reason, str) else None
    )
    if message:
        wire["message"] = message
    if interrupt.tool_call is not None:
        wire["toolCallId"] = interrupt.tool_call.id
    if interrupt.is_approval:
        allowed = interrupt.allowed_decisions if decisions is None else decisions
        edits = args_schema if "edit" in allowed else None
        wire["responseSchema"] = _decision_schema(allowed, remember=remember, args=edits)
    elif interrupt.options:
        wire["responseSchema"] = {"type": "string", "enum": list(interrupt.options)}
    if interrupt.reason is not None:
        wire["metadata"] = {"payload": interrupt.reason}
    return wire


def _decision_schema(
    allowed: tuple[DecisionType, ...], *, remember: bool, args: dict[str, JSONValue] | None
) -> dict[str, JSONValue]:
    """The JSON schema of an approval's answer, e.g. ``{"type": "approve"}``; ``args``:
    what an edit's arguments must fit, when known (its ``$defs`` moved to the root, where
    its references point)."""
    edit = dict(args or {"type": "object"})
    defs = edit.pop("$defs", None)
    properties: dict[str, JSONValue] = {
        "type": {"enum": list(allowed)},
        "args": {**edit, "description": "new arguments, for edit"},
        "message": {"type": "string", "description": "the reason, for reject or respond"},
    }
    if remember:
        properties["remember"] = {
            "type": "object",
            "properties": {
                "scope": {"enum": ["run", "thread", "minutes"]},
                "minutes": {"type": "integer", "minimum": 1},
                "same_args": {"type": "boolean"},
            },
            "required": ["scope"],
        }
    schema: dict[str, JSONValue] = {
        "type": "object",
        "properties": properties,
        "required": ["type"],
    }
    if defs is not None:
        schema["$defs"] = defs
    return schema


def text_message(event: TextMessage) -> list[AguiEvent]:
    """The assistant's text as one START, CONTENT, END sequence."""
    mid = event.message_id
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": event.text},
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
    ]


def tool_call(call: ToolCall, *, parent_message_id: str | None = None) -> list[AguiEvent]:
    """A tool call with its complete arguments as one START, ARGS, END sequence; the calls
    of one model turn name the same ``parent_message_id`` (one assistant message)."""
    start: ToolCallStartEvent = {
        "type": "TOOL_CALL_START",
        "toolCallId": call.id,
        "toolCallName": call.name,
    }
    if parent_message_id is not None:
        start["parentMessageId"] = parent_message_id
    return [
        start,
        {"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": json.dumps(call.args)},
        {"type": "TOOL_CALL_END", "toolCallId": call.id},
    ]


def tool_call_result(call: ToolCall, result: ToolResult) -> ToolCallResultEvent:
    event: ToolCallResultEvent = {
        "type": "TOOL_CALL_RESULT",
        "messageId": f"{call.id}_result",
        "toolCallId": call.id,
        "content": result.as_text(),
        "role": "tool",
    }
    if result.is_error:
        event["metadata"] = {"isError": True}
    return event
