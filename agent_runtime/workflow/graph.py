"""The Workflow: named nodes joined by edges, for deterministic jobs that stop for a human."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import pydantic

from ..agent import Agent
from ..edit_checks import check_model
from ..errors import UsageError
from ..hooks import HookCallback, HookProvider, HookRegistry
from ..interrupts import DecisionType
from ..messages import JSONValue, ToolCall
from ..runnable import Runnable, ThreadStatus, status_of
from ..session import InMemorySessionStore, SessionStore
from ..tools import Tool, check_edit
from .approvals import InterruptBefore, NodeApprovalPolicy, parse_interrupt_before
from .context import Node
from .run import WorkflowRun
from .state import WorkflowState

Router = Callable[[JSONValue], str | None]
"""Chooses the next node by name from a node's output; None ends the workflow. One that
raises, or names no node, ends the run as an error (its node ran and is not run again)."""
Edge = str | Router


class Workflow(Runnable):
    """A graph of nodes (async functions or Agents); each receives the previous node's output.

    ``edges`` maps a node to the next node's name or to a ``Router``; a node without an
    edge ends the run. Without ``edges`` the nodes run in the order given. A
    ``BeforeNodeCall`` hook may interrupt, cancel (the run ends ``cancelled``) or replace
    ``event.input``. The state is saved to ``session_store`` after every node, so any
    process holding the same workflow and store can resume it. ``input_models`` gives a
    guarded node's input as its approvers edit it (a dict input's keys, ``input`` for any
    other) a pydantic model: its Edit form is built from the model, and an edit that
    does not fit it is refused; a node without one is edited as JSON.
    """

    def __init__(
        self,
        *,
        nodes: Mapping[str, Node],
        edges: Mapping[str, Edge] | None = None,
        start: str | None = None,
        hooks: Iterable[HookCallback[Any] | HookProvider] = (),
        interrupt_before: InterruptBefore | None = None,
        input_models: Mapping[str, type[pydantic.BaseModel]] | None = None,
        session_store: SessionStore | None = None,
        name: str = "workflow",
        max_steps: int = 50,
    ) -> None:
        if not nodes:
            raise UsageError("a workflow needs at least one node")
        for node_name, node in nodes.items():
            if not (isinstance(node, Agent) or inspect.iscoroutinefunction(node)):
                raise UsageError(f"node {node_name!r} must be an async function or an Agent")
        self.nodes: dict[str, Node] = dict(nodes)
        names = list(self.nodes)
        self.edges: dict[str, Edge] = (
            dict(edges) if edges is not None else dict(itertools.pairwise(names))
        )
        self.start = start if start is not None else names[0]
        targets = [t for t in self.edges.values() if isinstance(t, str)]
        unknown = {self.start, *self.edges, *targets} - set(self.nodes)
        if unknown:
            raise UsageError(f"edges or start name nodes this workflow lacks: {sorted(unknown)}")
        self.name = name
        self.max_steps = max_steps
        self.session_store: SessionStore = session_store or InMemorySessionStore()
        self.approval_rules = rules = parse_interrupt_before(interrupt_before or {})
        unguarded = set(rules) - set(self.nodes)
        if unguarded:
            raise UsageError(
                f"interrupt_before names nodes this workflow lacks: {sorted(unguarded)}; "
                f"its nodes are {names}"
            )
        self.input_models = dict(input_models or {})
        modelled = set(self.input_models) - set(rules)
        if modelled:
            raise UsageError(
                f"input_models names nodes interrupt_before does not guard: {sorted(modelled)}"
            )
        for node_name, model in self.input_models.items():
            if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
                raise UsageError(f"input_models[{node_name!r}] must be a pydantic model class")
        self.hooks = HookRegistry()
        if rules:
            self.hooks.add(NodeApprovalPolicy(rules))
        for hook in hooks:
            self.hooks.add(hook)

    def next_node(self, node: str, output: JSONValue) -> str | None:
        """The node to run after ``node`` produced ``output``; None when the run is over."""
        edge = self.edges.get(node)
        if edge is None or isinstance(edge, str):
            return edge
        chosen = edge(output)
        if chosen is not None and chosen not in self.nodes:
            raise UsageError(f"the router after {node!r} chose {chosen!r}, which is not a node")
        return chosen

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools of its agent nodes, by name (the first node's, when two share one)."""
        tools: dict[str, Tool] = {}
        for node in self.nodes.values():
            if isinstance(node, Agent):
                tools = {**node.tools, **tools}
        return tools

    def declared_decisions(self) -> dict[str, tuple[DecisionType, ...]]:
        """The decisions ``interrupt_before`` allows for each node it guards, and those of
        its agent nodes' tools."""
        declared = {node: rule.allowed_decisions for node, rule in self.approval_rules.items()}
        for node in self.nodes.values():
            if isinstance(node, Agent):
                declared = {**node.declared_decisions(), **declared}
        return declared

    def tool_names(self) -> frozenset[str]:
        """Its nodes (asked about before they run) and its agent nodes' tools."""
        return frozenset(self.nodes) | frozenset(self.tools)

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited arguments that do not fit the node's input model, or the agent
        node's tool ``call`` names, as ``Agent.check_edit`` does."""
        model = self.input_models.get(call.name)
        if model is not None:
            check_model(call.name, pydantic.TypeAdapter(model), args)
        else:
            check_edit(self.tools, call, args)

    def tool_schema(self, name: str) -> dict[str, JSONValue] | None:
        """A guarded node's input model's, or an agent node's tool's (a node without an
        input model has no schema: edited as JSON)."""
        model = self.input_models.get(name)
        if model is not None:
            return model.model_json_schema()
        tool = self.tools.get(name)
        return tool.input_schema if tool is not None else None

    def invocation(self, thread_id: str) -> WorkflowRun:
        return WorkflowRun(self, thread_id)

    def first_invocation(self, thread_id: str) -> WorkflowRun:
        return WorkflowRun(self, thread_id, new_thread=True)

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        """Where the thread stands, with the tool results of the agent node it stands at:
        what a process that died inside that node may not have told yet. UnresumableError
        when it stands at a node this workflow no longer has."""
        stored = await self.session_store.load(thread_id)
        if stored is None:
            return None
        status = status_of(thread_id, stored)
        if not isinstance(stored.snapshot.get("workflow"), dict):
            return status  # an agent's run: running this workflow on it says so
        graph = WorkflowState.from_snapshot(stored.snapshot)
        graph.check_node(thread_id, self.nodes)
        node = self.nodes.get(graph.node or "")
        if not isinstance(node, Agent):
            return status
        agent_thread = graph.agent_thread(thread_id)
        agent_status = await node.thread_status(agent_thread)
        if agent_status is None:
            return status
        return replace(status, tool_results=agent_status.tool_results, tools_thread_id=agent_thread)
