"""Reading an AG-UI ``RunAgentInput``: a new prompt, or answers to open interrupts.

Both resume shapes are accepted: 1.0's ``resume: [{interruptId, status, payload}]`` and
the earlier draft's ``resume: {interruptId, payload}`` (read as ``resolved``). The
runtime keeps each thread's history itself, so of ``messages`` only the last user
message is used, and only when there is nothing to resume.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pydantic
from pydantic.alias_generators import to_camel

from ..errors import ResumeError, UsageError
from ..interrupts import Decision, Interrupt, InterruptResponse
from ..messages import JSONValue

ResumeStatus = Literal["resolved", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class ResumeAnswer:
    """One resume entry: the answer (``payload``) to one open interrupt."""

    interrupt_id: str
    status: ResumeStatus = "resolved"
    payload: JSONValue = None
    metadata: dict[str, JSONValue] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class AguiInput:
    """What a ``RunAgentInput`` asks for: ``prompt`` starts a run, ``resume`` continues one."""

    thread_id: str
    run_id: str
    prompt: str | None = None
    resume: tuple[ResumeAnswer, ...] = ()


class _Wire(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(alias_generator=to_camel, extra="ignore")


class _ResumeEntry(_Wire):
    interrupt_id: str = pydantic.Field(min_length=1)
    status: ResumeStatus = "resolved"
    payload: JSONValue = None
    metadata: dict[str, JSONValue] | None = None


_FAIL_FAST = pydantic.Field(fail_fast=True)
"""On a list: its first bad entry is the error, not one error each (a body of a million
empty entries named each in a RUN_ERROR of megabytes)."""


class _Message(_Wire):
    role: str
    content: str | Annotated[list[dict[str, JSONValue]], _FAIL_FAST] | None = None


class _RunAgentInput(_Wire):
    thread_id: str = pydantic.Field(min_length=1)
    run_id: str = pydantic.Field(min_length=1)
    messages: Annotated[list[_Message], _FAIL_FAST] = []
    resume: Annotated[list[_ResumeEntry], _FAIL_FAST] | _ResumeEntry | None = None


def parse_run_input(data: Mapping[str, JSONValue]) -> AguiInput:
    """Validate a ``RunAgentInput`` body; a malformed one raises ``UsageError``."""
    try:
        wire = _RunAgentInput.model_validate(data)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in error.errors()
        )
        raise UsageError(f"invalid RunAgentInput: {problems}") from error
    entries = [wire.resume] if isinstance(wire.resume, _ResumeEntry) else wire.resume or []
    if entries:
        answers = tuple(
            ResumeAnswer(
                interrupt_id=e.interrupt_id,
                status=e.status,
                payload=e.payload,
                metadata=e.metadata or {},
            )
            for e in entries
        )
        return AguiInput(thread_id=wire.thread_id, run_id=wire.run_id, resume=answers)
    prompt = next((_text(m) for m in reversed(wire.messages) if m.role == "user"), None)
    if not prompt:
        raise UsageError("RunAgentInput has neither a user message with text nor a resume")
    return AguiInput(thread_id=wire.thread_id, run_id=wire.run_id, prompt=prompt)


def interrupt_responses(
    answers: Sequence[ResumeAnswer], open_interrupts: Sequence[Interrupt]
) -> list[InterruptResponse]:
    """Turn resume entries into the runtime's responses; every open interrupt must be
    answered, once.

    An approval's payload is a decision (``{"type": "approve"}``); a ``cancelled`` entry
    rejects it, with the payload (a string, or its ``message``) as the reason, and leaves
    any other interrupt unanswered (a question too: only a ``message`` is kept). Other
    interrupts get the payload as their answer. The entry's status is added to the
    response metadata, so a tool can tell a cancelled answer apart.
    """
    answered = {a.interrupt_id for a in answers}
    if len(answered) != len(answers):
        # The cards check one answer per interrupt: a second would reach the run unchecked.
        raise ResumeError("the resume answers an interrupt twice; answer each one once")
    missing = [i.id for i in open_interrupts if i.id not in answered]
    if missing:
        raise ResumeError(
            f"the resume leaves open interrupts unanswered: {missing}; "
            "an AG-UI resume must answer every open interrupt of the thread"
        )
    by_id = {i.id: i for i in open_interrupts}
    return [_response(answer, by_id.get(answer.interrupt_id)) for answer in answers]


def _response(answer: ResumeAnswer, interrupt: Interrupt | None) -> InterruptResponse:
    metadata = {**answer.metadata, "status": answer.status}
    iid = answer.interrupt_id
    if interrupt is None:  # refused by the runtime, naming the open interrupts
        return InterruptResponse(interrupt_id=iid, response=answer.payload, metadata=metadata)
    if answer.status == "cancelled" and not interrupt.is_approval:
        # Not answered: a string payload would read as the answer, only a message is kept.
        reason = _cancel_reason(answer.payload) if isinstance(answer.payload, Mapping) else ""
        decision = Decision.reject(reason)
    elif answer.status == "cancelled":
        decision = Decision.reject(_cancel_reason(answer.payload))
    elif not interrupt.is_approval:
        return InterruptResponse(interrupt_id=iid, response=answer.payload, metadata=metadata)
    else:
        try:
            decision = Decision.from_dict(answer.payload)
        except ResumeError as error:
            raise ResumeError(f"interrupt {iid} is an approval: {error}") from error
    return InterruptResponse(interrupt_id=iid, decision=decision, metadata=metadata)


def _cancel_reason(payload: JSONValue) -> str:
    if isinstance(payload, str):
        return payload
    if isinstance(payload, Mapping) and isinstance(payload.get("message"), str):
        return str(payload["message"])
    return ""


def _text(message: _Message) -> str:
    """A message's text: the string content, or its text parts joined."""
    if isinstance(message.content, str):
        return message.content
    parts = message.content or []
    return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
