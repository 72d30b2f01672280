"""Genkit's tool interrupts as Signoff approvals, and a card's answers as the parts
``generate`` resumes with: ``restart_tool`` (approve, edit) and ``respond_to_interrupt``
(deny, reply). A tool's input that is not an object (a string) is shown, and edited,
as ``input``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
from genkit import GenkitError, Part, RuntimeErrorReason, respond_to_interrupt, restart_tool

from agent_runtime.errors import ResumeError
from agent_runtime.interrupts import Interrupt, InterruptResponse
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.session import StoredSession

from .adapted import named
from .genkit_names import names_of

PREFIX = "gk_"
"""Starts the Signoff id of each of a generation's interrupts."""


def pending_of(stored: StoredSession) -> list[dict[str, Any]]:
    """The generation's interrupted calls, as the thread's snapshot keeps them."""
    state = stored.snapshot.get("genkit") or {}
    assert isinstance(state, dict)
    return list(state.get("pending") or ())


def interrupts_of(stored: StoredSession) -> list[Interrupt]:
    """The generation's interrupted calls as approvals, under their framework ids."""
    names = names_of(stored)
    return [as_interrupt(p, names) for p in pending_of(stored)]


def as_interrupt(part: dict[str, Any], names: Mapping[str, str]) -> Interrupt:
    """A Genkit tool interrupt as a Signoff approval: the tool, its input, its message. The
    tool goes by the name Genkit ran it under (``names``, by the name the model called it):
    the part keeps the model's, by which Genkit finds the call as it resumes."""
    request = part.get("toolRequest") or {}
    ref = str(request.get("ref") or request.get("name"))
    details = (part.get("metadata") or {}).get("interrupt")
    message = details.get("message") if isinstance(details, dict) else None
    called = str(request.get("name"))
    name = names.get(called, called)
    args = request.get("input")
    return Interrupt(
        id=PREFIX + ref,
        name="approval",
        reason={"tool": name, "args": args, "interrupt": details},
        tool_call=ToolCall(id=ref, name=name, args=shown(args)),
        allowed_decisions=("approve", "edit", "reject", "respond"),
        description=str(message) if message else f"{name} needs approval",
    )


def shown(input: Any) -> dict[str, JSONValue]:
    """A tool's input as the card's arguments: an object as it is, another value (a tool
    taking a string) as ``input``, so the approver sees what it runs on."""
    if isinstance(input, dict):
        return dict(input)
    return {} if input is None else {"input": input}


def _edited(input: Any, args: dict[str, JSONValue]) -> Any:
    """The tool's input the card's edited ``args`` stand for (see ``shown``)."""
    return args if isinstance(input, dict) or input is None else args.get("input")


def resume_parts(
    responses: Sequence[InterruptResponse], stored: StoredSession
) -> tuple[list[Part], list[Part]]:
    """The ``resume_restart`` and ``resume_respond`` parts the answers stand for."""
    pending = pending_of(stored)
    asked = named(interrupts_of(stored), stored.snapshot)
    by_id = {i.id: p for i, p in zip(asked, pending, strict=True)}
    restarts: list[Part] = []
    answers: list[Part] = []
    for response in responses:
        raw = by_id.get(response.interrupt_id)
        if raw is None:
            raise ResumeError(
                f"unknown interrupt id {response.interrupt_id!r}; the open ones are {sorted(by_id)}"
            )
        part, decision = Part.model_validate(raw), response.decision
        if decision is None or decision.type in ("reject", "respond"):
            text = response.response if decision is None else decision.message
            if decision is not None and decision.type == "reject":
                text = _denial(response, decision.message)
            answers.append(respond_to_interrupt(text, interrupt=part))
        elif decision.type == "edit":
            given = (raw.get("toolRequest") or {}).get("input")
            edited = _edited(given, decision.args or {})
            restarts.append(
                restart_tool(
                    interrupt=part, replace_input=edited, resumed_metadata={"approved": True}
                )
            )
        else:
            restarts.append(restart_tool(interrupt=part, resumed_metadata={"approved": True}))
    if len(responses) != len(pending) or {r.interrupt_id for r in responses} != set(by_id):
        raise ResumeError("answer every open interrupt of the generation together, once each")
    return restarts, answers


def _denial(response: InterruptResponse, message: str | None) -> str:
    """What the tool's output reads for a denial, told apart from a reply: a person's reason
    after "Not approved: "; an expiry's or a withdrawal's (its record's ``state``), which
    says "not approved" itself, as it is."""
    if response.metadata.get("state") in ("expired", "cancelled") and message:
        return message
    return f"Not approved: {message or 'a person declined'}"


def refused_input(error: GenkitError, tool: str) -> str | None:
    """What does not fit in a restarted ``tool``'s input (an edit), when ``error`` is Genkit
    refusing it before the tool ran; None for another error."""
    details = error.details if isinstance(error.details, dict) else {}
    if details.get("reason") != RuntimeErrorReason.INVALID_INPUT:
        return None
    cause = error.cause
    if isinstance(cause, pydantic.ValidationError):
        said = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in cause.errors())
    else:
        said = error.original_message
    return (
        f"{tool} refused the input it was restarted with, which must fit what it takes "
        f"({said}); it did not run, and the generation still waits: start the run again"
    )
