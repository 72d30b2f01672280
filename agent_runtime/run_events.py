"""What ``Agent.stream`` and ``Workflow.stream`` yield as a run happens."""

from __future__ import annotations

from dataclasses import dataclass

from .messages import ToolCall
from .results import AgentResult, ToolResult


@dataclass(frozen=True, kw_only=True)
class RunStarted:
    thread_id: str
    run_id: str


@dataclass(frozen=True, kw_only=True)
class TextMessage:
    """Text the assistant (or a workflow node) produced."""

    message_id: str
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCallStarted:
    tool_call: ToolCall


@dataclass(frozen=True, kw_only=True)
class ToolCallFinished:
    tool_call: ToolCall
    result: ToolResult
    thread_id: str
    """The thread of the agent that made the call (a workflow's agent node has its own)."""
    ran: bool = True
    """False when nothing was tried: a person denied or answered the call, or a hook
    cancelled it (``result`` then says so to the model). A call of an unknown tool, or
    whose arguments the tool refused, was tried and failed: ``result.is_error``."""


@dataclass(frozen=True, kw_only=True)
class RunFinished:
    """The last event of every run: ``result.stop_reason`` says why it ended."""

    result: AgentResult


RunEvent = RunStarted | TextMessage | ToolCallStarted | ToolCallFinished | RunFinished
