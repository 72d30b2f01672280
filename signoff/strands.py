"""Run a Strands agent as a Signoff agent: its interrupts become Slack cards, and a card's
decision resumes it with ``[{"interruptResponse": {"interruptId", "response"}}]``.

    from signoff.strands import SignoffApprovals, StrandsAgent
    def make_agent() -> Agent:
        return Agent(model=..., tools=[delete_files],
                     hooks=[SignoffApprovals(interrupt_on={"delete_files": True})])
    AgentSpec(name="cleanup", policy=Policy(channel="C0123OPS", users=("U0ALICE",)),
              build=lambda sessions: StrandsAgent(make_agent, session_store=sessions))

``SignoffApprovals`` gates the tools ``interrupt_on`` names: Approve runs the call, Edit
replaces ``tool_use["input"]``, Deny cancels it with the reason, Reply returns the
approver's text as the tool's result (a success, not an error). Strands' own
``HumanInTheLoop`` intervention is an approval card too (Approve answers yes, Deny no).
Any other interrupt the agent raises (a tool's ``tool_context.interrupt(...)``) is a
question: the agent gets the approver's answer (a denial or an expiry is ``{"type":
"reject", "message"}``, never taken for one). The agent's state is a Strands snapshot
kept in Signoff's session store, taken and restored here (not from Strands' own thread),
so any worker process resumes it; each invocation holds the thread's lease. A resume
saves each tool's result as it comes: retried after a failure (the model call after the
tool errs), it gets the result back instead of running the tool again.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from strands import Agent, Snapshot
from strands.hooks import (
    AfterToolCallEvent,
    AgentInitializedEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    HookProvider,
    HookRegistry,
)
from strands.types.tools import ToolResult

from agent_runtime.errors import ResumeError, UsageError
from agent_runtime.interrupts import DECISION_TYPES, Interrupt, InterruptResponse
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import AgentResult
from agent_runtime.results import ToolResult as CallResult
from agent_runtime.resume import ContinueRun, RunInput, parse_input
from agent_runtime.run_events import RunEvent, RunFinished, RunStarted, ToolCallFinished
from agent_runtime.runnable import Runnable, ThreadStatus
from agent_runtime.session import InMemorySessionStore, SessionStore, StoredSession

from .adapted import (
    ASKED_AT,
    IDS,
    RAN,
    RESULT,
    KeptResults,
    LeasedInvocation,
    asked_at,
    cancelled,
    check_retry,
    dated,
    kept_results,
    named,
    owned,
    ran,
    run_id_of,
    signoff_ids,
    snapshot_status,
)
from .strands_batch import batch_calls, closed_batch

APPROVAL = "signoff:approval"
"""The name of the interrupts ``SignoffApprovals`` raises."""
HUMAN_IN_THE_LOOP = "strands:human-in-the-loop"
"""Strands' own ``HumanInTheLoop`` intervention: a yes/no approval of one tool call."""
_HITL_PROMPT = re.compile(r'^Approve "(?P<name>[^"]+)".*?\n\s*Input: (?P<input>.*)$', re.S)
"""The intervention's prompt: ``Approve "<tool>"[ — why]?`` then ``Input: <JSON>``."""


class SignoffApprovals(HookProvider):
    """Ask before each call of the tools ``interrupt_on`` names, and apply the decision.
    A value other than True or False, or a name the agent has no tool of, is a UsageError
    when the agent is built (a misspelt name would otherwise let its tool run unasked)."""

    def __init__(self, interrupt_on: Mapping[str, bool]) -> None:
        for name, on in interrupt_on.items():
            if not isinstance(on, bool):
                raise UsageError(f"interrupt_on[{name!r}]: use True or False, got {on!r}")
        self.guarded = {name for name, on in interrupt_on.items() if on}
        self._replies: dict[str, str] = {}

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AgentInitializedEvent, self._check_tools)
        registry.add_callback(BeforeToolCallEvent, self._ask)
        registry.add_callback(AfterToolCallEvent, self._reply)

    def _check_tools(self, event: AgentInitializedEvent) -> None:
        tools = event.agent.tool_names
        unknown = self.guarded - set(tools)
        if unknown:
            raise UsageError(
                f"interrupt_on names tools this agent lacks: {sorted(unknown)}; "
                f"its tools are {sorted(tools)}"
            )

    def _ask(self, event: BeforeToolCallEvent) -> None:
        use = event.tool_use
        if use["name"] not in self.guarded:
            return
        reason = {"tool": use["name"], "args": use["input"], "tool_use_id": use["toolUseId"]}
        decision = event.interrupt(APPROVAL, reason=reason)
        kind = decision.get("type") if isinstance(decision, Mapping) else None
        message = str(decision.get("message") or "") if isinstance(decision, Mapping) else ""
        if kind == "edit":
            use["input"] = dict(decision.get("args") or {})
        elif kind == "reject":
            event.cancel_tool = message or f"A person declined to let {use['name']} run."
        elif kind == "respond":
            self._replies[use["toolUseId"]] = message
            event.cancel_tool = message or "answered by a person"

    def _reply(self, event: AfterToolCallEvent) -> None:
        """A reply is the call's result, a success: the tool did not run."""
        message = self._replies.pop(event.tool_use["toolUseId"], None)
        if message is not None:
            event.result = {
                "toolUseId": event.tool_use["toolUseId"],
                "status": "success",
                "content": [{"text": message}],
            }


class _KeptResults(KeptResults, HookProvider):
    """Saves the result of each call of the interrupted tool batch as the resume runs it
    (a hook's retry of the call: its last attempt), and answers a call whose result an
    earlier try of the same resume saved with that result, once, without running the
    tool: an approved call runs once even when the model fails after it. Calls after the
    next model call are not kept (a retry asks the model for them again, and some
    providers number calls per turn, so their ids repeat)."""

    _REPLAYED = "answered with the result saved when it ran"

    def __init__(
        self,
        store: SessionStore,
        thread_id: str,
        stored: StoredSession,
        responses: Sequence[InterruptResponse],
    ) -> None:
        super().__init__(store, thread_id, stored, responses)
        self._batch = {use["toolUseId"] for use in batch_calls(stored.snapshot.get("strands"))}
        self._replayable = set(self.kept)  # saved by an earlier try, answered once each
        self._running: set[str] = set()
        self.finished: dict[str, ToolCallFinished] = {}
        """What each call of the batch that ran (now or in an earlier try) did, by id."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self._replay)
        registry.add_callback(AfterToolCallEvent, self._keep)
        registry.add_callback(BeforeModelCallEvent, self._batch_done)

    def _batch_done(self, event: BeforeModelCallEvent) -> None:
        self._batch.clear()

    def _replay(self, event: BeforeToolCallEvent) -> None:
        use_id = event.tool_use["toolUseId"]
        if use_id not in self._batch:
            return
        if use_id in self._replayable and not event.cancel_tool:
            self._replayable.discard(use_id)  # a hook's retry of it runs the tool
            event.cancel_tool = self._REPLAYED
        else:
            self._running.add(use_id)

    async def _keep(self, event: AfterToolCallEvent) -> None:
        use_id = event.tool_use["toolUseId"]
        if event.cancel_message == self._REPLAYED:
            event.result = cast(ToolResult, self.kept[use_id])
            self._ran(event)
            return
        if use_id not in self._running:
            return
        self._running.discard(use_id)
        if event.cancel_message is None:  # not run: a retry cancels it the same way
            await self.keep(use_id, cast(JSONValue, event.result))
            self._ran(event)

    def _ran(self, event: AfterToolCallEvent) -> None:
        use, result = event.tool_use, event.result
        texts = [c["text"] for c in result["content"] if "text" in c]
        self.finished[use["toolUseId"]] = ToolCallFinished(
            tool_call=ToolCall(id=use["toolUseId"], name=use["name"], args=dict(use["input"])),
            result=CallResult(
                content="\n".join(texts) if texts else cast(JSONValue, result["content"]),
                is_error=result["status"] == "error",
            ),
            thread_id=self.thread_id,
        )


class StrandsAgent(Runnable):
    """A Strands agent built afresh for each invocation (``make_agent``), its state restored
    from the thread's snapshot; built once when this is made, so a build that fails (a
    bad ``interrupt_on``) fails the build of the Signoff agent."""

    def __init__(
        self, make_agent: Callable[[], Agent], *, session_store: SessionStore | None = None
    ) -> None:
        make_agent()  # built once now: a bad SignoffApprovals fails here, not at first use
        self.make_agent = make_agent
        self.session_store = session_store or InMemorySessionStore()

    def invocation(self, thread_id: str) -> _StrandsInvocation:
        return _StrandsInvocation(self, thread_id)

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        return await snapshot_status(
            self.session_store, thread_id, "strands", lambda s: [_interrupt(p) for p in _pending(s)]
        )

    async def cancel(self, thread_id: str, reason: str) -> AgentResult | None:
        """End the interrupted invocation: its tool calls get error results (so the history
        stays well formed for the model), the agent's interrupt state is cleared and the
        thread takes a new prompt. None when it waits on nothing."""
        async with self.session_store.lease(thread_id):
            stored = await self.session_store.load(thread_id)
            if stored is None or not _pending(stored):
                return None
            closed = closed_batch(stored.snapshot["strands"], reason, kept_results(stored))
            snapshot: dict[str, JSONValue] = {"strands": closed, "pending": []}
            await self.session_store.save(thread_id, snapshot, expected_version=stored.version)
        return cancelled(thread_id, reason)


@dataclass
class _StrandsInvocation(LeasedInvocation):
    agent: StrandsAgent
    thread_id: str

    async def _run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        run_id = run_id_of(self.thread_id)
        stored = owned(
            await self.agent.session_store.load(self.thread_id), "strands", self.thread_id
        )
        strands = self.agent.make_agent()
        if stored is not None:
            strands.load_snapshot(Snapshot.from_dict(stored.snapshot["strands"]))
        parsed = parse_input(input)
        if isinstance(parsed, ContinueRun):
            raise ResumeError("a Strands run is not continued from a checkpoint")
        kept: _KeptResults | None = None
        answered: set[str] = set()
        if isinstance(parsed, str):
            if stored is not None and _pending(stored):
                raise ResumeError(f"thread {self.thread_id} waits for its open interrupts")
            prompt: Any = parsed
        else:
            if stored is None:
                raise ResumeError(
                    f"thread {self.thread_id} has no open interrupts; start a new run with a prompt"
                )
            waiting = [_interrupt(p) for p in _pending(stored)]
            check_retry(stored, parsed, named(waiting, stored.snapshot))
            prompt = _interrupt_responses(parsed, stored)
            answered = {r["interruptResponse"]["interruptId"] for r in prompt}
            kept = _KeptResults(self.agent.session_store, self.thread_id, stored, parsed)
            strands.hooks.add_hook(kept)
        yield RunStarted(thread_id=self.thread_id, run_id=run_id)
        result = await strands.invoke_async(prompt)
        pending = [
            {"id": i.id, "name": i.name, "reason": i.reason}
            for i in (result.interrupts or ())
            if result.stop_reason == "interrupt"
        ]
        state = strands.take_snapshot(preset="session").to_dict()
        refusal = _twins_refusal(pending)
        if refusal is not None:  # ended here: each of the batch's calls answered with why
            state, pending = closed_batch(state, refusal, {}), []
        raised = [_interrupt(p) for p in pending]
        snapshot: dict[str, JSONValue] = {
            "strands": state,
            "pending": pending,
            IDS: signoff_ids(raised, stored, answered),
        }
        asked = named(raised, snapshot)
        snapshot[ASKED_AT] = asked_at(asked, stored)
        message = refusal or str(result).strip()
        if not asked and refusal is None:
            snapshot[RESULT] = message
        finished = list(kept.finished.values()) if kept else []
        snapshot[RAN] = ran(finished)
        await self.agent.session_store.save(
            self.thread_id,
            snapshot,
            expected_version=kept.version if kept else stored.version if stored else 0,
        )
        for told in finished:
            yield told  # told once the run's state is saved: a retry tells it otherwise
        interrupts = dated(asked, snapshot)
        yield RunFinished(
            result=AgentResult(
                stop_reason="error" if refusal else "interrupt" if interrupts else "end_turn",
                message="waiting for a human decision" if interrupts else message,
                thread_id=self.thread_id,
                run_id=run_id,
                interrupts=interrupts,
            )
        )


def _pending(stored: StoredSession) -> list[dict[str, Any]]:
    pending = stored.snapshot.get("pending") or []
    assert isinstance(pending, list)
    return [p for p in pending if isinstance(p, dict)]


def _twins_refusal(pending: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the turn cannot be asked about, when two of its interrupts have one id (a model
    giving two calls one id: Strands names a call's interrupt by it, so one decision would
    answer both, and only the first call's arguments would be shown)."""
    ids = [p["id"] for p in pending]
    asked = [_interrupt(p) for p in pending if ids.count(p["id"]) > 1]
    twins = sorted({i.tool_call.name if i.tool_call else i.name for i in asked})
    if not twins:
        return None
    return (
        f"Refused: the model's turn asked for {', '.join(twins)} in calls with one id. "
        "Strands asks about a call under its id, so one decision would answer them all. "
        "The calls waiting for approval did not run."
    )


def _interrupt(pending: Mapping[str, Any]) -> Interrupt:
    """A Strands interrupt as a Signoff one: an approval of the gate, else a question."""
    reason = pending.get("reason")
    if pending.get("name") == APPROVAL and isinstance(reason, Mapping):
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
    if pending.get("name") == HUMAN_IN_THE_LOOP and hitl is not None:
        try:
            args = json.loads(hitl["input"])
        except ValueError:
            args = {"input": hitl["input"]}
        return Interrupt(
            id=str(pending["id"]),
            name="approval",
            reason=reason,
            tool_call=ToolCall(
                id=str(pending["id"]),
                name=hitl["name"],
                args=args if isinstance(args, dict) else {"input": args},
            ),
            allowed_decisions=("approve", "reject"),  # the intervention's yes or no
            description=str(reason).split("\n", 1)[0],
        )
    return Interrupt(
        id=str(pending["id"]), name=str(pending.get("name")), reason=reason, question=True
    )


def _interrupt_responses(
    responses: Sequence[InterruptResponse], stored: StoredSession
) -> list[dict[str, Any]]:
    """The agent's resume input: an ``interruptResponse`` per answered interrupt (by the
    agent's id for it)."""
    raised = [_interrupt(p) for p in _pending(stored)]
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
    if interrupt.allowed_decisions == ("approve", "reject"):  # HumanInTheLoop's yes or no
        return "yes" if decision.type == "approve" else "no"
    return {"type": decision.type, "args": decision.args, "message": decision.message}
