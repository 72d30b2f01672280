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
``HumanInTheLoop`` intervention is an approval card too (Approve answers yes, Deny no, its
reason added to what the model is told).
Any other interrupt the agent raises (a tool's ``tool_context.interrupt(...)``) is a
question: the agent gets the approver's answer (a denial or an expiry is ``{"type":
"reject", "message"}``, never taken for one). The agent's state is a Strands snapshot
kept in Signoff's session store, taken and restored here (not from Strands' own thread),
so any worker process resumes it; each invocation holds the thread's lease. A resume
saves each tool's result as it comes: retried after a failure (the model call after the
tool errs), it gets the result back instead of running the tool again. It saves each
tool's start before it runs: a tool whose process died inside it is not run again by the
retry, and the model is told why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from strands import Agent, Snapshot
from strands.hooks import (
    AfterToolCallEvent,
    AgentInitializedEvent,
    BeforeToolCallEvent,
    HookProvider,
    HookRegistry,
)

from agent_runtime.errors import ResumeError, UsageError
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import AgentResult, json_safe
from agent_runtime.resume import ContinueRun, RunInput, parse_input
from agent_runtime.run_events import RunEvent, RunFinished, RunStarted
from agent_runtime.runnable import Runnable, ThreadStatus
from agent_runtime.session import InMemorySessionStore, SessionStore

from .adapted import (
    ASKED_AT,
    IDS,
    RAN,
    RESULT,
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
from .edits import check_schema
from .strands_batch import closed_batch
from .strands_interrupts import (
    APPROVAL,
    HUMAN_IN_THE_LOOP,
    DenialReasons,
    as_interrupt,
    interrupt_responses,
    kept_as_json,
    pending_of,
    twins_refusal,
)
from .strands_retry import KeptToolResults

__all__ = ["APPROVAL", "HUMAN_IN_THE_LOOP", "SignoffApprovals", "StrandsAgent"]


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


def _told(name: str, prop: Any) -> Any:
    """A parameter's schema without the description Strands gives one left undocumented."""
    if isinstance(prop, dict) and prop.get("description") == f"Parameter {name}":
        return {k: v for k, v in prop.items() if k != "description"}
    return prop


class StrandsAgent(Runnable):
    """A Strands agent built afresh for each invocation (``make_agent``), its state restored
    from the thread's snapshot; built once when this is made, so a build that fails (a
    bad ``interrupt_on``) fails the build of the Signoff agent."""

    def __init__(
        self, make_agent: Callable[[], Agent], *, session_store: SessionStore | None = None
    ) -> None:
        built = make_agent()  # built once now: a bad SignoffApprovals fails here, not later
        self._schemas = {
            spec["name"]: spec.get("inputSchema", {}).get("json", {})
            for spec in built.tool_registry.get_all_tool_specs()
        }
        self.make_agent = make_agent
        self.session_store = session_store or InMemorySessionStore()

    def keeps_run_trust(self) -> bool:
        """False: ``SignoffApprovals`` asks at each call of a gated tool; a decision's
        ``remember`` is not kept for the run's later calls."""
        return False

    def tool_names(self) -> frozenset[str]:
        return frozenset(self._schemas)

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited arguments that do not fit the tool's input schema."""
        schema = self._schemas.get(call.name)
        if schema is not None:
            check_schema(call.name, schema, args)

    def tool_schema(self, name: str) -> dict[str, JSONValue] | None:
        """The tool's ``inputSchema``, as ``check_edit`` checks edits against it, less the
        descriptions Strands makes up for parameters its docstring leaves out ("Parameter
        replicas"), which would only repeat the form's labels."""
        schema = self._schemas.get(name)
        properties = schema.get("properties") if schema is not None else None
        if schema is None or not isinstance(properties, dict):
            return schema
        return {**schema, "properties": {k: _told(k, v) for k, v in properties.items()}}

    def invocation(self, thread_id: str) -> _StrandsInvocation:
        return _StrandsInvocation(self, thread_id)

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        return await snapshot_status(
            self.session_store,
            thread_id,
            "strands",
            lambda s: [as_interrupt(p) for p in pending_of(s)],
        )

    async def cancel(self, thread_id: str, reason: str) -> AgentResult | None:
        """End the interrupted invocation: its tool calls get error results (so the history
        stays well formed for the model), the agent's interrupt state is cleared and the
        thread takes a new prompt. None when it waits on nothing."""
        async with self.session_store.lease(thread_id):
            stored = await self.session_store.load(thread_id)
            if stored is None or not pending_of(stored):
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
        kept: KeptToolResults | None = None
        answered: set[str] = set()
        if isinstance(parsed, str):
            if stored is not None and pending_of(stored):
                raise ResumeError(f"thread {self.thread_id} waits for its open interrupts")
            prompt: Any = parsed
        else:
            if stored is None:
                raise ResumeError(
                    f"thread {self.thread_id} has no open interrupts; start a new run with a prompt"
                )
            waiting = [as_interrupt(p) for p in pending_of(stored)]
            check_retry(stored, parsed, named(waiting, stored.snapshot))
            prompt = interrupt_responses(parsed, stored)
            answered = {r["interruptResponse"]["interruptId"] for r in prompt}
            strands.hooks.add_hook(DenialReasons(parsed, stored))
            kept = KeptToolResults(self.agent.session_store, self.thread_id, stored, parsed)
            strands.hooks.add_hook(kept)
        yield RunStarted(thread_id=self.thread_id, run_id=run_id)
        result = await strands.invoke_async(prompt)
        pending = [
            {"id": i.id, "name": i.name, "reason": json_safe(i.reason)}
            for i in (result.interrupts or ())
            if result.stop_reason == "interrupt"
        ]
        state = kept_as_json(strands.take_snapshot(preset="session").to_dict())
        refusal = twins_refusal(pending)
        if refusal is not None:  # ended here: each of the batch's calls answered with why
            state, pending = closed_batch(state, refusal, {}), []
        raised = [as_interrupt(p) for p in pending]
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
