"""Signoff's agent runtime: agents and workflows that stop for a human and resume later."""

from .agent import Agent
from .errors import (
    AgentRuntimeError,
    ModelError,
    ResumeError,
    StaleSessionError,
    ToolInputError,
    UnresumableError,
    UsageError,
)
from .events import (
    AfterInvocation,
    AfterModelCall,
    AfterNodeCall,
    AfterToolCall,
    AfterTools,
    BeforeInvocation,
    BeforeModelCall,
    BeforeNodeCall,
    BeforeToolCall,
    BeforeTools,
    HookEvent,
    Interrupted,
    MessageAdded,
)
from .hooks import HookProvider, HookRegistry
from .interrupts import (
    Decision,
    DecisionType,
    Interrupt,
    InterruptResponse,
    Remember,
    interrupt_id,
)
from .messages import Message, ToolCall, args_digest
from .models import Model, ModelRequest, ModelResponse, OpenAIChatModel, ScriptedModel, ToolSpec
from .policy import ApprovalRule
from .results import AgentResult, StopReason, ToolResult
from .resume import ContinueRun, RunInput
from .run_events import (
    RunEvent,
    RunFinished,
    RunStarted,
    TextMessage,
    ToolCallFinished,
    ToolCallStarted,
)
from .runnable import Runnable, ThreadStatus
from .session import InMemorySessionStore, SessionStore, Snapshot, StoredSession
from .state import RunInfo, RunStatus
from .tools import Tool, ToolContext, interrupt_tool, tool
from .workflow import NodeContext, Workflow

__all__ = [
    "AfterInvocation",
    "AfterModelCall",
    "AfterNodeCall",
    "AfterToolCall",
    "AfterTools",
    "Agent",
    "AgentResult",
    "AgentRuntimeError",
    "ApprovalRule",
    "BeforeInvocation",
    "BeforeModelCall",
    "BeforeNodeCall",
    "BeforeToolCall",
    "BeforeTools",
    "ContinueRun",
    "Decision",
    "DecisionType",
    "HookEvent",
    "HookProvider",
    "HookRegistry",
    "InMemorySessionStore",
    "Interrupt",
    "InterruptResponse",
    "Interrupted",
    "Message",
    "MessageAdded",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "NodeContext",
    "OpenAIChatModel",
    "Remember",
    "ResumeError",
    "RunEvent",
    "RunFinished",
    "RunInfo",
    "RunInput",
    "RunStarted",
    "RunStatus",
    "Runnable",
    "ScriptedModel",
    "SessionStore",
    "Snapshot",
    "StaleSessionError",
    "StopReason",
    "StoredSession",
    "TextMessage",
    "ThreadStatus",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolInputError",
    "ToolResult",
    "ToolSpec",
    "UnresumableError",
    "UsageError",
    "Workflow",
    "args_digest",
    "interrupt_id",
    "interrupt_tool",
    "tool",
]
