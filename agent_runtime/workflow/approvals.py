"""Approval before workflow nodes: ``interrupt_before={"delete": True}``, like ``interrupt_on``.

One ``approval`` interrupt is raised before each guarded node runs. approve runs it; edit
runs it with the human's arguments as its input (``{"input": value}`` for a node whose
input is not a dict); reject ends the workflow ``cancelled`` with the human's message.
With a ``precondition`` the approval binds to what it showed, as a tool's does
(``checked_approval``). A callable description receives the node's call: its name and
its input as arguments.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import UsageError
from ..events import BeforeNodeCall
from ..hooks import HookRegistry
from ..interrupts import DecisionType
from ..messages import JSONValue
from ..policy import (
    APPROVAL_ORDER,
    ApprovalOptions,
    ApprovalRule,
    approval,
    checked_approval,
    parse_interrupt_on,
)
from .context import input_from_args, node_call

NODE_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""A node has no result a human could write instead, so ``respond`` is not offered."""

InterruptBefore = Mapping[str, bool | ApprovalOptions | ApprovalRule]


def parse_interrupt_before(interrupt_before: InterruptBefore) -> dict[str, ApprovalRule]:
    """Normalise ``interrupt_before`` with ``interrupt_on``'s rules and node defaults."""
    options: dict[str, bool | ApprovalOptions | ApprovalRule] = {}
    for node, option in interrupt_before.items():
        if option is True:
            options[node] = ApprovalRule(allowed_decisions=NODE_DECISIONS)
        elif isinstance(option, Mapping):
            options[node] = {"allowed_decisions": NODE_DECISIONS, **option}
        else:
            options[node] = option
    rules = parse_interrupt_on(options, setting="interrupt_before")
    for node, rule in rules.items():
        if "respond" in rule.allowed_decisions:
            raise UsageError(
                f"interrupt_before[{node!r}]: a node cannot be answered with 'respond'; "
                f"allow some of {list(NODE_DECISIONS)}"
            )
    return rules


class NodeApprovalPolicy:
    """A hook provider that asks before each guarded node and applies the decision."""

    def __init__(self, rules: Mapping[str, ApprovalRule]) -> None:
        self.rules = dict(rules)

    def register_hooks(self, registry: HookRegistry) -> None:
        registry.add(self.before_node_call, BeforeNodeCall, order=APPROVAL_ORDER)

    async def before_node_call(self, event: BeforeNodeCall) -> None:
        rule = self.rules.get(event.node)
        if rule is None:
            return
        call = node_call(event.point.source_id, event.node, event.input)
        reason: dict[str, JSONValue] = {"node": event.node, "input": event.input}
        if rule.precondition is None:
            decision = approval(event, rule, call, reason=reason)
        else:
            decision = await checked_approval(event, rule, call, reason=reason)
        if decision.type == "edit" and decision.args is not None:
            event.input = input_from_args(decision.args, like=event.input)
        elif decision.type == "reject":
            event.cancel(decision.message or f"A person declined to let {event.node} run.")
