"""Strands' interrupts as Signoff interrupts, and Signoff's answers as Strands'
``interruptResponse`` values: ``SignoffApprovals``' gate and Strands' ``HumanInTheLoop``
intervention are approvals (a denial's reason added to what the intervention tells the
model), any other interrupt a question."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from strands.hooks import BeforeToolCallEvent, HookOrder, HookProvider, HookRegistry

from agent_runtime.errors import ResumeError
from agent_runtime.interrupts import DECISION_TYPES, DecisionType, Interrupt, InterruptResponse
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import json_safe
from agent_runtime.session import StoredSession

from .adapted import named

APPROVAL = "signoff:approval"
"""The name of the interrupts ``SignoffApprovals`` raises."""
_APPROVAL_ID = ("v1:before_tool_call:", f":{uuid.uuid5(uuid.NAMESPACE_OID, APPROVAL)}")
"""How Strands names the gate's interrupt: around the id of the call it asks about (a
tool's own interrupt under the same name is ``v1:tool_call:...``, a question)."""
HUMAN_IN_THE_LOOP = "strands:human-in-the-loop"
"""Strands' own ``HumanInTheLoop`` intervention: a yes/no approval of one tool call."""
_YES_OR_NO: tuple[DecisionType, ...] = ("approve", "reject")
"""The decisions the intervention takes."""
_HITL_PROMPT = re.compile(r'^Approve "(?P<name>[^"]+)".*?\n\s*Input: (?P<input>.*)$', re.S)
"""The intervention's prompt: ``Approve "<tool>"[ — why]?`` then ``Input: <JSON>``."""
_HITL_ID = ("v1:before_tool_call:", f":{uuid.uuid5(uuid.NAMESPACE_OID, HUMAN_IN_THE_LOOP)}")
"""How Strands names the intervention's interrupt: around the id of the call it asks about."""


def pending_of(stored: StoredSession) -> list[dict[str, Any]]:
    pending = stored.snapshot.get("pending") or []
    assert isinstance(pending, list)
    return [p for p in pending if isinstance(p, dict)]


def kept_as_json(strands: dict[str, Any]) -> dict[str, Any]:
    """The agent's snapshot with each interrupt's reason as JSON (what has no JSON form as
    its text): Strands takes any reason, and Signoff keeps the snapshot, and shows the
    reason, as JSON."""
    data = strands.get("data") or {}
    interrupts = (data.get("interrupt_state") or {}).get("interrupts") or {}
    for interrupt in interrupts.values():
        interrupt["reason"] = json_safe(interrupt.get("reason"))
    return strands


def twins_refusal(pending: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the turn cannot be asked about, when two of its interrupts have one id (a model
    giving two calls one id: Strands names a call's interrupt by it, so one decision would
    answer both, and only the first call's arguments would be shown)."""
    ids = [p["id"] for p in pending]
    asked = [as_interrupt(p) for p in pending if ids.count(p["id"]) > 1]
    twins = sorted({i.tool_call.name if i.tool_call else i.name for i in asked})
    if not twins:
        return None
    return (
        f"Refused: the model's turn asked for {', '.join(twins)} in calls with one id. "
        "Strands asks about a call under its id, so one decision would answer them all. "
        "The calls waiting for approval did not run."
    )


def as_interrupt(pending: Mapping[str, Any]) -> Interrupt:
    """A Strands interrupt as a Signoff one: an approval of the gate, else a question."""
    reason = pending.get("reason")
    if _is_gates(pending):
        assert isinstance(reason, Mapping)
        name = str(reason.get("tool"))
        args = reason.get("args")
        return Interrupt(
            id=str(pending["id"]),
            name="approval",
            reason=dict(reason),
            tool_call=ToolCall(
                id=str(reason.get("tool_use_id") or pending["id"]),
                name=name,
                args=dict(args) if isinstance(args, Mapping) else {},
            ),
            allowed_decisions=DECISION_TYPES,
            description=f"{name} needs approval",
        )
    hitl = _HITL_PROMPT.match(reason) if isinstance(reason, str) else None
    call_id = _hitl_call_id(pending)
    if call_id is not None and hitl is not None:
        try:
            args = json.loads(hitl["input"])
        except ValueError:
            args = {"input": hitl["input"]}
        return Interrupt(
            id=str(pending["id"]),
            name="approval",
            reason=reason,
            tool_call=ToolCall(
                id=call_id,
                name=hitl["name"],
                args=args if isinstance(args, dict) else {"input": args},
            ),
            allowed_decisions=_YES_OR_NO,
            description=str(reason).split("\n", 1)[0],
        )
    return Interrupt(
        id=str(pending["id"]), name=str(pending.get("name")), reason=reason, question=True
    )


def _is_gates(pending: Mapping[str, Any]) -> bool:
    """Whether ``SignoffApprovals`` raised the interrupt: by its name, reason and id, as a
    tool's own interrupt may take the gate's name and reason but not its id."""
    reason = pending.get("reason")
    if pending.get("name") != APPROVAL or not isinstance(reason, Mapping):
        return False
    start, end = _APPROVAL_ID
    return pending.get("id") == f"{start}{reason.get('tool_use_id')}{end}"


def _hitl_call_id(pending: Mapping[str, Any]) -> str | None:
    """The id of the call Strands' ``HumanInTheLoop`` asks about (what its result is told
    and audited under), read from the id Strands gives the intervention's interrupt; None
    when the intervention did not raise it (a tool's own interrupt may take its name and
    prompt, but its id is ``v1:tool_call:...``)."""
    interrupt_id, (start, end) = pending.get("id"), _HITL_ID
    if pending.get("name") != HUMAN_IN_THE_LOOP or not isinstance(interrupt_id, str):
        return None
    if not (interrupt_id.startswith(start) and interrupt_id.endswith(end)):
        return None
    return interrupt_id[len(start) : -len(end)]


def interrupt_responses(
    responses: Sequence[InterruptResponse], stored: StoredSession
) -> list[dict[str, Any]]:
    """The agent's resume input: an ``interruptResponse`` per answered interrupt (by the
    agent's id for it)."""
    raised = [as_interrupt(p) for p in pending_of(stored)]
    by_id = {i.id: (own, i) for own, i in zip(raised, named(raised, stored.snapshot), strict=True)}
    answers = []
    for response in responses:
        found = by_id.get(response.interrupt_id)
        if found is None:
            raise ResumeError(
                f"unknown interrupt id {response.interrupt_id!r}; the open ones are {sorted(by_id)}"
            )
        own, interrupt = found
        answers.append(
            {
                "interruptResponse": {
                    "interruptId": own.id,
                    "response": _value(response, interrupt),
                }
            }
        )
    return answers


def _value(response: InterruptResponse, interrupt: Interrupt) -> JSONValue:
    decision = response.decision
    if decision is None:
        return response.response
    if not interrupt.is_approval:  # a question declined, or left to expire: not an answer
        return {"type": "reject", "message": decision.message or ""}
    if interrupt.allowed_decisions == _YES_OR_NO:  # HumanInTheLoop's
        return "yes" if decision.type == "approve" else "no"
    return {"type": decision.type, "args": decision.args, "message": decision.message}


class DenialReasons(HookProvider):
    """Adds why a call Strands' ``HumanInTheLoop`` asked about was denied (a person's
    reason, or that the request expired) to what the model is told of it: the intervention
    takes a yes or a no only."""

    def __init__(self, responses: Sequence[InterruptResponse], stored: StoredSession) -> None:
        raised = named([as_interrupt(p) for p in pending_of(stored)], stored.snapshot)
        calls = {i.id: i.tool_call for i in raised if i.allowed_decisions == _YES_OR_NO}
        self._reasons = {
            call.id: r.decision.message
            for r in responses
            if (call := calls.get(r.interrupt_id))
            and r.decision
            and r.decision.type == "reject"
            and r.decision.message
        }

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        # After the intervention, which Strands runs after the agent's own hooks.
        registry.add_callback(BeforeToolCallEvent, self._tell, order=HookOrder.SDK_LAST)

    def _tell(self, event: BeforeToolCallEvent) -> None:
        reason = self._reasons.pop(event.tool_use["toolUseId"], None)
        if reason is not None and isinstance(event.cancel_tool, str):
            event.cancel_tool = f"{event.cancel_tool}\nReason: {reason}"
