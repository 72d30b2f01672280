"""Lifecycle events that hooks receive, named Before|After + noun.

Fields are read-only by convention except those documented as writable: a hook changes
the run only through them (``retry``, ``result``, ``resume``) or through methods
(``interrupt``, ``cancel``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .asking import InterruptPoint
from .interrupts import DecisionType, InterruptResponse
from .messages import JSONValue, Message, ToolCall
from .models.base import ModelRequest, ModelResponse
from .results import AgentResult, ToolResult
from .state import RunInfo

if TYPE_CHECKING:
    from .tools import Tool


@dataclass(kw_only=True)
class HookEvent:
    """Base of every event: ``source`` is the Agent or Workflow that emitted it."""

    reverse_order: ClassVar[bool] = False
    source: Any
    run: RunInfo


@dataclass(kw_only=True)
class InterruptibleEvent(HookEvent):
    """An event whose hooks may stop the run for a human, or cancel what comes next."""

    point: InterruptPoint = field(repr=False)
    cancel_message: str | None = None

    def interrupt(
        self,
        name: str,
        reason: JSONValue = None,
        *,
        allowed_decisions: Sequence[DecisionType] = (),
        description: str | None = None,
        tool_call: ToolCall | None = None,
    ) -> JSONValue:
        """Ask a human; returns the answer on resume. Names must be unique per event.
        ``tool_call`` is the call proposed, when not the event's own (an edit asked again)."""
        return self.point.ask(
            name,
            reason,
            allowed_decisions=allowed_decisions,
            description=description,
            tool_call=tool_call,
        )

    def cancel(self, message: str) -> None:
        """Skip what this event precedes; ``message`` becomes its result."""
        self.cancel_message = message


@dataclass(kw_only=True)
class BeforeInvocation(HookEvent):
    prompt: str | None
    responses: tuple[InterruptResponse, ...]


@dataclass(kw_only=True)
class AfterInvocation(HookEvent):
    """Writable: ``resume``, new input (a prompt or interrupt responses) to invoke again."""

    reverse_order: ClassVar[bool] = True
    result: AgentResult
    resume: str | Sequence[InterruptResponse] | None = None


@dataclass(kw_only=True)
class BeforeModelCall(HookEvent):
    request: ModelRequest


@dataclass(kw_only=True)
class AfterModelCall(HookEvent):
    """Writable: ``retry``, call the model again instead of using this outcome."""

    reverse_order: ClassVar[bool] = True
    request: ModelRequest
    response: ModelResponse | None
    exception: Exception | None = None
    retry: bool = False


@dataclass(kw_only=True)
class BeforeTools(InterruptibleEvent):
    """Before a model turn's tool calls run; cancel gives every call the message."""

    tool_calls: tuple[ToolCall, ...]


@dataclass(kw_only=True)
class AfterTools(HookEvent):
    reverse_order: ClassVar[bool] = True
    tool_calls: tuple[ToolCall, ...]
    results: dict[str, ToolResult]


@dataclass(kw_only=True)
class BeforeToolCall(InterruptibleEvent):
    """Writable: ``tool_call.args`` (edit the arguments) and ``selected_tool``."""

    tool_call: ToolCall
    selected_tool: Tool | None


@dataclass(kw_only=True)
class AfterToolCall(HookEvent):
    """Writable: ``result`` (replace what the model sees) and ``retry`` (run the tool again)."""

    reverse_order: ClassVar[bool] = True
    tool_call: ToolCall
    selected_tool: Tool | None
    result: ToolResult
    exception: Exception | None = None
    retry: bool = False


@dataclass(kw_only=True)
class MessageAdded(HookEvent):
    message: Message


@dataclass(kw_only=True)
class Interrupted(HookEvent):
    """The run stopped to wait for humans; ``result.interrupts`` lists what they must answer."""

    result: AgentResult


@dataclass(kw_only=True)
class BeforeNodeCall(InterruptibleEvent):
    """Before a workflow node runs. Writable: ``input``; cancel ends the run with the message."""

    node: str
    input: JSONValue


@dataclass(kw_only=True)
class AfterNodeCall(HookEvent):
    reverse_order: ClassVar[bool] = True
    node: str
    output: JSONValue
