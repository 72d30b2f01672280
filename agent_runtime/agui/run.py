"""Serving an agent over AG-UI: one ``RunAgentInput`` in, one run's events out."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime

from ..errors import AgentRuntimeError, ResumeError
from ..interrupts import Interrupt, InterruptResponse
from ..messages import JSONValue
from ..results import AgentResult
from ..resume import ContinueRun, RunInput
from ..run_events import RunFinished, TextMessage, ToolCallFinished, ToolCallStarted
from ..runnable import Runnable
from .events import (
    AguiEvent,
    Expiry,
    Offered,
    Remembers,
    run_error,
    run_finished,
    run_started,
    text_message,
    tool_call,
    tool_call_result,
)
from .input import ResumeAnswer, interrupt_responses, parse_run_input

log = logging.getLogger(__name__)


async def run_agui(
    agent: Runnable,
    input: Mapping[str, JSONValue],
    *,
    expiry: Expiry | None = None,
    offered: Offered | None = None,
    remembers: Remembers | None = None,
    decided_elsewhere: Sequence[InterruptResponse] = (),
    finished: Callable[[AgentResult], None] | None = None,
    cut_off: bool = False,
) -> AsyncIterator[AguiEvent]:
    """Run ``agent`` for one AG-UI request and yield its AG-UI events.

    The stream opens with RUN_STARTED and ends with RUN_FINISHED (success, interrupt or
    cancelled) or RUN_ERROR; an input that cannot be read at all yields RUN_ERROR alone.
    A refused input (a resume that leaves an interrupt unanswered, answers one past its
    ``expiry``, with a decision not ``offered`` or a ``remember`` it does not offer (see
    ``remembers``; by default every approval's, unless the agent asks again at each call
    whatever a decision remembers: ``keeps_run_trust``), or a prompt while the thread
    waits for a human) is a RUN_ERROR and changes nothing stored. The tool calls of one
    model turn share one ``parentMessageId``.
    Interrupts answered on another surface (``decided_elsewhere``: a Slack card) need no
    answer in the resume; the run takes their answers with the app's. ``finished`` is
    given the run's result before its RUN_FINISHED is yielded. A ``cut_off`` thread (its
    round's process died mid-run) is continued from its last checkpoint (``ContinueRun``);
    the input itself is not run.
    """
    try:
        request = parse_run_input(input)
    except AgentRuntimeError as error:
        yield run_error(str(error), code=type(error).__name__)
        return
    thread_id, run_id = request.thread_id, request.run_id
    if remembers is None and not agent.keeps_run_trust():
        remembers = _remembers_nothing
    yield run_started(thread_id=thread_id, run_id=run_id)
    try:
        if cut_off:
            open_interrupts = await _resumed(agent, thread_id)
            run_input: RunInput = ContinueRun()
        else:
            open_interrupts = await agent.open_interrupts(thread_id)
            elsewhere = {r.interrupt_id for r in decided_elsewhere}
            waiting = [i for i in open_interrupts if i.id not in elsewhere]
            _refuse_expired(request.resume, waiting, expiry)
            run_input = request.prompt or [
                *_answers(request.resume, waiting, remembers),
                *decided_elsewhere,
            ]
        if isinstance(run_input, list) and offered is not None:
            _refuse_not_offered(run_input, open_interrupts, offered)
        # A tool call that interrupted was announced by the run it interrupted; this
        # run only reports its result.
        announced = {i.tool_call.id for i in open_interrupts if i.tool_call is not None}
        result: AgentResult | None = None
        turn: str | None = None  # the assistant message this model turn's tool calls belong to
        async for event in agent.stream(run_input, thread_id=thread_id):
            if isinstance(event, RunFinished):
                # A hook may chain invocations (AfterInvocation.resume): AG-UI sees one
                # run, which ends with the last invocation's result.
                result = event.result
            elif isinstance(event, TextMessage):
                turn = event.message_id
                for agui_event in text_message(event):
                    yield agui_event
            elif isinstance(event, ToolCallStarted):
                turn = turn or f"msg_{event.tool_call.id}"
                if event.tool_call.id not in announced:
                    announced.add(event.tool_call.id)
                    for agui_event in tool_call(event.tool_call, parent_message_id=turn):
                        yield agui_event
            elif isinstance(event, ToolCallFinished):
                turn = None  # the next tool call belongs to the model's next turn
                yield tool_call_result(event.tool_call, event.result)
        assert result is not None, "every run ends with RunFinished"
        if finished is not None:
            finished(result)
        yield run_finished(
            result,
            thread_id=thread_id,
            run_id=run_id,
            expiry=expiry,
            offered=offered,
            remembers=remembers,
            args_schema=agent.tool_schema,
        )
    except AgentRuntimeError as error:
        log.info("AG-UI run %s on thread %s ended with an error: %s", run_id, thread_id, error)
        yield run_error(str(error), code=type(error).__name__)
    except Exception:
        log.exception("AG-UI run %s on thread %s failed", run_id, thread_id)
        yield run_error("the agent failed unexpectedly; see the server log", code="internal_error")


async def _resumed(agent: Runnable, thread_id: str) -> list[Interrupt]:
    """The interrupts the thread's cut-off round was resumed from (its last stop's)."""
    status = await agent.thread_status(thread_id)
    return list(status.last_result.interrupts) if status and status.last_result else []


def _refuse_expired(
    answers: Sequence[ResumeAnswer], open_interrupts: Sequence[Interrupt], expiry: Expiry | None
) -> None:
    """A resolved answer to an interrupt past its expiry is refused; cancelling one is fine."""
    if expiry is None:
        return
    now = datetime.now(UTC)
    by_id = {i.id: i for i in open_interrupts}
    for answer in answers:
        interrupt = by_id.get(answer.interrupt_id)
        until = expiry(interrupt) if interrupt is not None else None
        if answer.status == "resolved" and until is not None and now >= until:
            raise ResumeError(
                f"interrupt {answer.interrupt_id} expired at {until.isoformat()}; "
                "cancel it to continue the thread"
            )


def _refuse_not_offered(
    responses: Sequence[InterruptResponse], open_interrupts: Sequence[Interrupt], offered: Offered
) -> None:
    """A resolved approval must be one of the decisions offered; a cancel always is."""
    by_id = {i.id: i for i in open_interrupts}
    for response in responses:
        interrupt = by_id.get(response.interrupt_id)
        decision = response.decision
        if interrupt is None or decision is None or response.metadata.get("status") != "resolved":
            continue
        allowed = offered(interrupt)
        if decision.type not in allowed:
            raise ResumeError(
                f"interrupt {interrupt.id} offers {list(allowed)}, not {decision.type!r}"
            )


def _answers(
    resume: Sequence[ResumeAnswer], waiting: Sequence[Interrupt], remembers: Remembers | None
) -> list[InterruptResponse]:
    """The app's answers to the interrupts ``waiting`` for it; one may ``remember`` only
    where its interrupt's schema offers it."""
    responses = interrupt_responses(resume, waiting)
    by_id = {i.id: i for i in waiting}
    for response in responses:
        interrupt = by_id.get(response.interrupt_id)
        decision = response.decision
        remembered = decision is not None and decision.remember is not None
        if remembered and interrupt is not None and remembers and not remembers(interrupt):
            raise ResumeError(
                f"interrupt {interrupt.id} does not offer remember; answer it without one"
            )
    return responses


def _remembers_nothing(_: Interrupt) -> bool:
    """No answer may ``remember``: the agent would ask again at its next call anyway."""
    return False
