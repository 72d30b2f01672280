"""Checking a human's answers against a run's open interrupts before anything changes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .errors import ResumeError
from .interrupts import Decision, Interrupt, InterruptResponse
from .messages import JSONValue, ToolCall
from .state import Answer, RunState


@dataclass(frozen=True)
class ContinueRun:
    """Input that continues a run cut off mid-step (its process died) from its last checkpoint.

    Steps after the checkpoint run again: a tool call whose result was not saved yet runs
    a second time.
    """


RunInput = (
    str | InterruptResponse | Sequence[InterruptResponse] | Mapping[str, JSONValue] | ContinueRun
)
"""A prompt starts a run; interrupt responses (or ``{interrupt_id: answer}``) resume one;
``ContinueRun()`` continues one whose process died."""

EditCheck = Callable[[ToolCall, dict[str, JSONValue]], None]


def parse_input(value: RunInput) -> str | ContinueRun | list[InterruptResponse]:
    """Normalise what ``invoke`` was given into a prompt, a continue, or a list of responses."""
    if isinstance(value, str | ContinueRun):
        return value
    if isinstance(value, InterruptResponse):
        return [value]
    if isinstance(value, Mapping):
        return [
            InterruptResponse(interrupt_id=str(iid), decision=answer)
            if isinstance(answer, Decision)
            else InterruptResponse(interrupt_id=str(iid), response=answer)
            for iid, answer in value.items()
        ]
    if isinstance(value, Sequence):
        responses: list[InterruptResponse] = []
        for item in value:
            if not isinstance(item, InterruptResponse):
                raise ResumeError(f"expected InterruptResponse items, got {item!r}")
            responses.append(item)
        return responses
    raise ResumeError(f"cannot run with input of type {type(value).__name__}")


def begin(
    state: RunState, parsed: str | ContinueRun | list[InterruptResponse], *, check_edit: EditCheck
) -> tuple[str | None, list[InterruptResponse]]:
    """Start, continue or resume the loaded run; returns the prompt and the answers applied.

    Bad input raises ``ResumeError`` before anything changes.
    """
    if isinstance(parsed, ContinueRun):
        if state.status == "interrupted":
            open_ids = [p.interrupt.id for p in state.pending]
            raise ResumeError(
                f"thread {state.thread_id} has no run in progress to continue: it waits on "
                f"interrupts {open_ids}; answer them to resume it"
            )
        if state.status != "running":
            raise ResumeError(f"thread {state.thread_id} has no run in progress to continue")
        return None, []
    if isinstance(parsed, str):
        if state.status == "interrupted":
            open_ids = [p.interrupt.id for p in state.pending]
            raise ResumeError(
                f"thread {state.thread_id} is waiting on interrupts {open_ids}; "
                "answer them ({interrupt_id: Decision} or InterruptResponse objects) before "
                "sending a new prompt"
            )
        if state.status == "running":
            raise ResumeError(
                f"a run is in progress on thread {state.thread_id}; "
                "if its process died, continue it with ContinueRun()"
            )
        state.start_run()
        state.status = "running"
        return parsed, []
    if state.status == "running":
        raise ResumeError(_in_progress(state, parsed))
    apply_answers(state, parsed, check_edit=check_edit)
    state.open_before = {p.interrupt.id: p.interrupt.created_at for p in state.pending}
    state.pending = []
    state.status = "running"
    return None, parsed


def _in_progress(state: RunState, responses: Sequence[InterruptResponse]) -> str:
    """Why answers to a run cut off mid-way are refused: what an earlier try of the resume
    applied and which of its tools ran (what ran cannot be undone), and how to go on."""
    calls = {c.id: c for m in state.messages for c in m.tool_calls}
    ran = {m.tool_call_id for m in state.messages if m.role == "tool"} | set(state.batch_results)
    said = []
    for response in responses:
        answer = state.answers.get(response.interrupt_id)
        if answer is None:
            continue
        call = calls.get(answer.source_id)
        decision = answer.response.decision
        what = decision.type if decision else "answered"
        if call is None:
            said.append(f"{response.interrupt_id}: {what}")
            continue
        if what in ("reject", "respond"):
            done = "its tool did not run"
        elif call.id in ran:
            done = "its tool ran"
        elif call.id in state.attempts:
            done = "its tool started, its result not saved"
        else:
            done = "its tool has not run"
        said.append(f"{response.interrupt_id} {call.name}: {what}, {done}")
    if not said:
        return (
            f"a run is in progress on thread {state.thread_id}, with no open interrupts; "
            "if its process died, continue it with ContinueRun()"
        )
    return (
        f"an earlier try of this resume applied {'; '.join(said)}, and was cut off mid-run "
        f"on thread {state.thread_id}; what ran cannot be undone: continue it with "
        "ContinueRun()"
    )


def apply_answers(
    state: RunState, responses: Sequence[InterruptResponse], *, check_edit: EditCheck
) -> None:
    """Record ``responses`` as answers to the run's open interrupts.

    Every response is checked first (known id, answered once, a decision the interrupt
    allows, edited arguments that fit the tool), so a bad resume changes nothing.
    """
    if state.status != "interrupted":
        raise ResumeError(
            f"thread {state.thread_id} has no open interrupts; start a new run with a prompt"
        )
    pending = {p.interrupt.id: p for p in state.pending}
    seen: set[str] = set()
    answers: dict[str, Answer] = {}
    for response in responses:
        iid = response.interrupt_id
        if iid in seen:
            raise ResumeError(f"interrupt {iid} was answered twice in one resume")
        seen.add(iid)
        open_interrupt = pending.get(iid)
        if open_interrupt is None:
            raise ResumeError(
                f"unknown interrupt id {iid!r}; the open interrupts are {sorted(pending)}"
            )
        interrupt = open_interrupt.interrupt
        new_input = None
        if interrupt.is_approval:
            response = _as_decision(response)
            decision = response.decision
            assert decision is not None
            if decision.type not in interrupt.allowed_decisions:
                raise ResumeError(
                    f"interrupt {iid} allows {list(interrupt.allowed_decisions)}, "
                    f"not {decision.type!r}"
                )
            if decision.type == "edit" and interrupt.tool_call and decision.args is not None:
                check_edit(interrupt.tool_call, decision.args)
        elif response.decision is not None and response.decision.type == "edit":
            new_input = _restart_input(interrupt, response.decision, check_edit)
        answers[iid] = Answer(
            source_id=open_interrupt.source_id,
            response=response,
            new_input=new_input,
            asked=interrupt.reason,
        )
    if not answers:
        raise ResumeError("a resume needs at least one interrupt response")
    state.answers.update(answers)


def _restart_input(
    interrupt: Interrupt, decision: Decision, check_edit: EditCheck
) -> dict[str, JSONValue]:
    """The arguments a tool's own interrupt is edited to: the tool restarts with them."""
    call = interrupt.tool_call
    if call is None or interrupt.question or decision.args is None:
        raise ResumeError(
            f"interrupt {interrupt.id} has no tool arguments to edit; answer it another way"
        )
    check_edit(call, decision.args)
    return dict(decision.args)


def _as_decision(response: InterruptResponse) -> InterruptResponse:
    """Accept a decision sent as plain JSON (``{"type": "approve"}``) from a transport."""
    if response.decision is not None:
        return response
    if not isinstance(response.response, Mapping):
        raise ResumeError(
            f"interrupt {response.interrupt_id} is an approval: answer it with a Decision, "
            f"got {response.response!r}"
        )
    decision = Decision.from_dict(response.response)
    return InterruptResponse(
        interrupt_id=response.interrupt_id, decision=decision, metadata=response.metadata
    )
