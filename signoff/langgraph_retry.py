"""A LangGraph resume tried again after its earlier try applied answers and failed (a
tool raised, the model call after the tools failed): the graph kept what that try did,
so the retry goes on from there, and is refused when its answers say otherwise. A resume
whose answers the graph refuses is not tried again: every try would be refused alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import langgraph.errors
import pydantic
from langchain_core.messages import ToolMessage

from agent_runtime.errors import ResumeError, UnresumableError
from agent_runtime.interrupts import Interrupt, InterruptResponse
from agent_runtime.session import StoredSession

from .adapted import ASKED_AT

ANSWERED = "hitl_interrupt_decision"
"""The ``lc_source`` of a tool message LangChain's middleware wrote for a person's denial
or reply: its tool did not run."""


def split_applied(
    responses: Sequence[InterruptResponse],
    pending: Sequence[Interrupt],
    marker: StoredSession | None,
) -> tuple[list[InterruptResponse], list[InterruptResponse]]:
    """``responses`` to apply now, and those an earlier try of this resume applied: asked
    in the round the marker has and no longer open (the graph keeps each task that
    finished when another fails, and the whole tools step when the model fails after)."""
    open_ids = {i.id for i in pending}
    asked = marker.snapshot.get(ASKED_AT) if marker else None
    round_ids = set(asked) if isinstance(asked, dict) else set()
    applied = [
        r for r in responses if r.interrupt_id not in open_ids and r.interrupt_id in round_ids
    ]
    return [r for r in responses if r not in applied], applied


def check_applied(
    applied: Sequence[InterruptResponse],
    asked: Sequence[Interrupt],
    before: Any,
    now: Any,
) -> None:
    """Refuse ``applied`` answers that say otherwise than what the earlier try did with
    them (a denial of a call that ran, an approval of one answered): what ran cannot be
    undone. ``asked`` are the round's interrupts, ``before`` and ``now`` the graph's
    values when it was asked and now."""
    by_id = {i.id: i for i in asked}
    done = _tool_messages(before, now)
    said, differs = [], False
    for response in applied:
        interrupt = by_id.get(response.interrupt_id)
        call = interrupt.tool_call if interrupt else None
        message = done.get(call.id) if call else None
        if call is None or message is None or response.decision is None:
            continue
        ran = message.additional_kwargs.get("lc_source") != ANSWERED
        did = (
            "ran" if ran else str((message.additional_kwargs.get("lc_data") or {}).get("decision"))
        )
        name = f"{response.interrupt_id} {call.name}"
        if ran:
            said.append(f"{name}: approved or edited, and it ran ({message.text[:200]})")
        else:
            said.append(f"{name}: answered {did}, and it did not run")
        wanted = "ran" if response.decision.type in ("approve", "edit") else response.decision.type
        differs = differs or wanted != did
    if differs:
        raise ResumeError(
            "an earlier try of this resume applied its answers, then failed; what ran cannot "
            f"be undone, so resume with the answers it applied: {'; '.join(said)}"
        )


def _tool_messages(before: Any, now: Any) -> dict[str, ToolMessage]:
    """The tool messages added since ``before``, by their call's id."""
    known = {m.id for m in _messages(before)}
    return {
        m.tool_call_id: m
        for m in _messages(now)
        if isinstance(m, ToolMessage) and m.id not in known
    }


def _messages(values: Any) -> list[Any]:
    messages = values.get("messages") if isinstance(values, Mapping) else None
    return messages if isinstance(messages, list) else []


def refused_answers(error: BaseException, asked: Sequence[Interrupt]) -> UnresumableError | None:
    """The error to raise when ``error`` is the graph refusing its answers (LangGraph checks
    each against its interrupt's ``response_schema``: per call, an edit against the
    tool's arguments), naming ``asked`` and what does not fit; None for another error."""
    refused = getattr(langgraph.errors, "is_invalid_resume", None)
    if refused is None or not refused(error):
        return None
    if isinstance(error, pydantic.ValidationError):
        said = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
    else:
        said = str(error)
    names = ", ".join(sorted({i.tool_call.name if i.tool_call else i.name for i in asked}))
    return UnresumableError(
        f"the graph refused the answer to {names}, which must fit what its interrupt "
        f"takes ({said}); the graph still waits: start the run again"
    )
