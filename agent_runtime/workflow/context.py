"""What a workflow node receives, and how a node's call looks to the people approving it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..agent import Agent
from ..asking import InterruptPoint
from ..messages import JSONValue, ToolCall
from ..state import RunInfo


@dataclass(frozen=True, kw_only=True)
class NodeContext:
    """What a running node knows about its call, and how it asks a human.

    ``input`` is the previous node's output (the prompt, for the first node). A node that
    interrupts runs again from the top on resume: code before ``interrupt()`` runs twice,
    so it must be safe to repeat. ``idempotency_key`` and ``attempt`` work as a tool's do
    (``ToolContext``): the key is the same for every attempt of this node in this run.
    """

    node: str
    input: JSONValue
    run: RunInfo
    point: InterruptPoint = field(repr=False)
    idempotency_key: str = ""
    attempt: int = 1
    is_resumed: bool = False
    resumed_metadata: dict[str, JSONValue] = field(default_factory=dict)
    original_input: JSONValue = None

    @property
    def state(self) -> dict[str, JSONValue]:
        """JSON data shared by every node of the run and saved with it."""
        return self.run.state

    def interrupt(self, name: str, reason: JSONValue = None) -> JSONValue:
        """Stop the run until a human answers; on resume, return their answer."""
        return self.point.ask(name, reason)


NodeFunction = Callable[[NodeContext], Awaitable[JSONValue]]
"""An async function taking the node's context and returning its JSON-safe output."""
Node = NodeFunction | Agent


def node_args(value: JSONValue) -> dict[str, JSONValue]:
    """A node's input as call arguments: a dict as is, anything else as ``{"input": value}``."""
    return value if isinstance(value, dict) else {"input": value}


def input_from_args(args: dict[str, JSONValue], *, like: JSONValue) -> JSONValue:
    """The inverse of ``node_args`` for an input shaped ``like`` the original."""
    return dict(args) if isinstance(like, dict) else args.get("input")


def node_call(node_id: str, node: str, value: JSONValue) -> ToolCall:
    """A node's pending run as a ``ToolCall``, so approvers see its name and input."""
    return ToolCall(id=node_id, name=node, args=node_args(value))


def as_text(value: JSONValue) -> str:
    """A node's output as text: strings as they are, other JSON serialised."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
