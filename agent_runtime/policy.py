"""Approval policy: which tool calls stop for a human, and how each decision is applied.

``interrupt_on={"delete_files": True, "send_email": {"allowed_decisions": [...],
"description": fn}}`` raises one ``approval`` interrupt per guarded call. approve runs the
tool; edit runs it with the human's arguments; reject and respond skip it and give the
model the human's message as the tool's result. With a ``precondition``, approve and edit
run only what the card showed the call would act on (see ``checked_approval``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypedDict

from .errors import UsageError
from .events import BeforeToolCall, InterruptibleEvent
from .hooks import HookRegistry
from .interrupts import DECISION_TYPES, Decision, DecisionType, interrupt_id
from .messages import JSONValue, ToolCall
from .preconditions import Precondition, changes, evaluate

APPROVAL = "approval"
Description = str | Callable[[ToolCall], str]

APPROVAL_ORDER = 1_000
"""The approval policies' hook order: after the app's own hooks (order 0 unless given),
so a hook's change to the call or node input is what the approver sees and approves."""


class ApprovalOptions(TypedDict, total=False):
    allowed_decisions: Sequence[DecisionType]
    description: Description
    precondition: Precondition


OPTIONS = tuple(ApprovalOptions.__annotations__)
"""The keys an ``interrupt_on`` entry's dict of options may have."""


@dataclass(frozen=True, kw_only=True)
class ApprovalRule:
    """How one tool is guarded: the decisions offered, what the human is told, and what
    the call will act on (``precondition``), checked again before it runs. Checked when
    made, so a malformed rule stops the agent's construction, not its first guarded call."""

    allowed_decisions: tuple[DecisionType, ...] = DECISION_TYPES
    description: Description | None = None
    precondition: Precondition | None = None

    def __post_init__(self) -> None:
        allowed = self.allowed_decisions
        if not isinstance(allowed, tuple) or not allowed or set(allowed) - set(DECISION_TYPES):
            raise UsageError(
                "allowed_decisions must be a non-empty list (in an ApprovalRule, a tuple) "
                f"drawn from {list(DECISION_TYPES)}, got {allowed!r}"
            )
        described = self.description
        if not (described is None or isinstance(described, str) or callable(described)):
            raise UsageError(
                "description must be a str or a function of the call returning one, "
                f"got {self.description!r}"
            )
        if self.precondition is not None and not callable(self.precondition):
            raise UsageError(
                f"precondition must be a function of the call, got {self.precondition!r}"
            )

    def describe(self, call: ToolCall) -> str:
        if self.description is None:
            return f"{call.name} needs approval"
        if isinstance(self.description, str):
            return self.description
        return self.description(call)


def parse_interrupt_on(
    interrupt_on: Mapping[str, bool | ApprovalOptions | ApprovalRule],
    *,
    setting: str = "interrupt_on",
) -> dict[str, ApprovalRule]:
    """Normalise the ``interrupt_on`` mapping (``setting`` names it in errors); a malformed
    entry is a UsageError naming it and what it may be."""
    if not isinstance(interrupt_on, Mapping):
        raise UsageError(f"{setting} must be a dict of names, got {interrupt_on!r}")
    rules: dict[str, ApprovalRule] = {}
    for name, option in interrupt_on.items():
        if not isinstance(name, str):
            raise UsageError(f"{setting}: {name!r} is not a name (a str)")
        if option is False:
            continue
        try:
            rules[name] = _rule(option)
        except UsageError as exc:
            raise UsageError(f"{setting}[{name!r}]: {exc}") from None
    return rules


def _rule(option: object) -> ApprovalRule:
    """One entry's rule: True (every decision), an ApprovalRule, or a dict of OPTIONS."""
    if option is True:
        return ApprovalRule()
    if isinstance(option, ApprovalRule):
        return option
    if not isinstance(option, Mapping):
        raise UsageError(f"use True, False or a dict of options, got {option!r}")
    unknown = sorted(str(key) for key in set(option) - set(OPTIONS))
    if unknown:
        raise UsageError(f"unknown options {unknown}; the options are {list(OPTIONS)}")
    allowed = option.get("allowed_decisions", DECISION_TYPES)
    return ApprovalRule(
        allowed_decisions=tuple(allowed) if isinstance(allowed, list | tuple) else allowed,
        description=option.get("description"),
        precondition=option.get("precondition"),
    )


class ApprovalPolicy:
    """A hook provider that asks before each guarded tool call and applies the decision."""

    def __init__(self, rules: Mapping[str, ApprovalRule]) -> None:
        self.rules = dict(rules)

    def register_hooks(self, registry: HookRegistry) -> None:
        registry.add(self.before_tool_call, BeforeToolCall, order=APPROVAL_ORDER)

    async def before_tool_call(self, event: BeforeToolCall) -> None:
        rule = self.rules.get(event.tool_call.name)
        if rule is None:
            return
        call = event.tool_call
        reason: dict[str, JSONValue] = {"tool": call.name, "args": call.args}
        if rule.precondition is None:
            apply_decision(event, approval(event, rule, call, reason=reason))
        else:
            apply_decision(event, await checked_approval(event, rule, call, reason=reason))


async def checked_approval(
    event: InterruptibleEvent, rule: ApprovalRule, call: ToolCall, *, reason: dict[str, JSONValue]
) -> Decision:
    """An approval bound to what the precondition showed for the call it would run (an
    edit's call, when edited): when it answers differently now, the approval is not used;
    the approvers are asked again (``approval.2``, ...) about that call, shown what changed.
    Denials and replies stand whatever changed: nothing runs."""
    assert rule.precondition is not None
    proposed = call
    now = await evaluate(rule.precondition, proposed)
    name, previous = APPROVAL, None
    for round_ in itertools.count(2):
        shown = event.point.shown(name)
        if not isinstance(shown, dict):  # not answered yet: ask, showing what is true now
            asked: dict[str, JSONValue] = {**reason, "args": proposed.args, "snapshot": now}
            if previous is not None:
                earlier, earlier_name = previous
                asked["changed"] = changes(earlier.get("snapshot"), now)
                asked["supersedes"] = interrupt_id(event.point.source_id, earlier_name)
                asked["edited"] = proposed is not call  # the change is the approver's edit
            return approval(event, rule, proposed, reason=asked, name=name, acts_on=now)
        decision = approval(event, rule, proposed, reason=shown, name=name, remember=False)
        if decision.type not in ("approve", "edit"):
            event.run.trusts.remember(proposed, decision, run_id=event.run.run_id)
            return decision
        if decision.type == "edit" and decision.args is not None:
            proposed = replace(proposed, args=decision.args)
            now = await evaluate(rule.precondition, proposed)
        if shown.get("snapshot") == now:  # approving an edit asked again runs that edit
            # Trusted only once it holds: a voided approval must not approve its successor.
            event.run.trusts.remember(proposed, decision, run_id=event.run.run_id, acts_on=now)
            return decision if proposed is call else Decision.edit(proposed.args)
        previous, name = (shown, name), f"{APPROVAL}.{round_}"
    raise AssertionError("unreachable")


def approval(
    event: InterruptibleEvent,
    rule: ApprovalRule,
    call: ToolCall,
    *,
    reason: dict[str, JSONValue],
    name: str = APPROVAL,
    remember: bool = True,
    acts_on: JSONValue = None,
) -> Decision:
    """The human's answer to this very interrupt, else the remembered decision covering
    ``call``, else the one a human gives when asked (remembered for its scope unless
    ``remember`` is False: the caller decides when). An answer given outranks a trust: a
    call denied in the resume that trusted another of the same tool stays denied.
    ``acts_on``: what the call acts on now (its precondition's answer), which a trust of
    the same arguments must have been given for."""
    if not event.point.answered(name):
        decision = event.run.trusts.find(call, run_id=event.run.run_id, acts_on=acts_on)
        if decision is not None:
            return decision
    description = rule.describe(call)
    answer = event.interrupt(
        name,
        reason={**reason, "description": description},
        allowed_decisions=rule.allowed_decisions,
        description=description,
        tool_call=call,
    )
    if not isinstance(answer, Decision):
        raise UsageError(f"the approval of {call.name} ({call.id}) was answered without a Decision")
    if remember:
        event.run.trusts.remember(call, answer, run_id=event.run.run_id, acts_on=acts_on)
    return answer


def apply_decision(event: BeforeToolCall, decision: Decision) -> None:
    """Carry out ``decision`` on the pending tool call."""
    name = event.tool_call.name
    if decision.type == "edit" and decision.args is not None:
        event.tool_call.args.clear()
        event.tool_call.args.update(decision.args)
    elif decision.type == "reject":
        event.cancel(decision.message or f"A person declined to let {name} run.")
    elif decision.type == "respond":
        event.cancel(decision.message or "")
