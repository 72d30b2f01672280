"""The Agent: a model, its tools and hooks, and the store that keeps its threads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .agent_loop import Invocation
from .errors import UsageError
from .hooks import HookCallback, HookProvider, HookRegistry
from .interrupts import DecisionType
from .messages import JSONValue, ToolCall
from .models.base import Model
from .policy import ApprovalOptions, ApprovalPolicy, ApprovalRule, parse_interrupt_on
from .runnable import Runnable
from .session import InMemorySessionStore, SessionStore
from .tools import Tool, check_edit


class Agent(Runnable):
    """An LLM tool loop whose tools and hooks can stop for a human and resume later.

    Each thread's state is saved to ``session_store`` after every step, so any process
    holding an ``Agent`` with the same tools and store can resume it.
    """

    def __init__(
        self,
        *,
        model: Model,
        tools: Iterable[Tool] = (),
        hooks: Iterable[HookCallback[Any] | HookProvider] = (),
        interrupt_on: Mapping[str, bool | ApprovalOptions | ApprovalRule] | None = None,
        session_store: SessionStore | None = None,
        system_prompt: str | None = None,
        name: str = "agent",
        max_steps: int = 25,
    ) -> None:
        self.model = model
        self.name = name
        self.system_prompt = system_prompt
        self.max_steps = max_steps
        self.session_store: SessionStore = session_store or InMemorySessionStore()
        self.tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise UsageError(f"{item!r} is not a Tool; decorate it with @tool")
            if item.name in self.tools:
                raise UsageError(f"two tools are named {item.name!r}")
            self.tools[item.name] = item
        self.approval_rules = parse_interrupt_on(interrupt_on or {})
        unknown = set(self.approval_rules) - set(self.tools)
        if unknown:
            raise UsageError(
                f"interrupt_on names tools this agent lacks: {sorted(unknown)}; "
                f"its tools are {sorted(self.tools)}"
            )
        self.hooks = HookRegistry()
        if self.approval_rules:
            self.hooks.add(ApprovalPolicy(self.approval_rules))
        for hook in hooks:
            self.hooks.add(hook)

    def invocation(self, thread_id: str) -> Invocation:
        return Invocation(self, thread_id)

    def first_invocation(self, thread_id: str) -> Invocation:
        return Invocation(self, thread_id, new_thread=True)

    def declared_decisions(self) -> dict[str, tuple[DecisionType, ...]]:
        """The decisions ``interrupt_on`` allows for each tool it guards."""
        return {tool: rule.allowed_decisions for tool, rule in self.approval_rules.items()}

    def tool_names(self) -> frozenset[str]:
        return frozenset(self.tools)

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited arguments that do not fit the tool's input schema."""
        check_edit(self.tools, call, args)

    def tool_schema(self, name: str) -> dict[str, JSONValue] | None:
        tool = self.tools.get(name)
        return tool.input_schema if tool is not None else None
