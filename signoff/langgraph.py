"""Run a LangGraph graph as a Signoff agent: its ``interrupt(...)`` calls become Slack cards,
and a card's decision resumes the graph with ``Command(resume=...)``.

    from signoff.langgraph import LangGraphAgent
    AgentSpec(name="cleanup", policy=Policy(channel="C0123OPS", users=("U0ALICE",)),
              build=lambda sessions: LangGraphAgent(
                  graph, input=lambda text: {"request": text}, session_store=sessions))

``graph`` is compiled with the checkpointer you run (every process that resumes runs
reads the same one). Signoff's session store keeps only a marker per thread, bumped at
each invocation (its version is what makes each decision resume the graph exactly once),
and a lease held around each invocation, so two resumes of one thread never both run.

An interrupt whose value has the shape of LangChain's human-in-the-loop tool approval
(``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``, with its
``response_schema`` naming the decisions allowed) is a tool approval card, resumed with
LangChain's decision shapes: ``{"type": "approve"}``, ``{"type": "edit",
"edited_action": {"name", "args"}}``, ``{"type": "reject", "message"}``, ``{"type":
"respond", "message"}``. The batched shape of LangChain's ``HumanInTheLoopMiddleware``
(``{"action_requests": [...], "review_configs": [...]}``) is a card per action, and the
graph resumes with ``{"decisions": [...]}`` in the actions' order. Any other value is a
question: the graph gets the approver's answer. Several interrupts at once are several
cards; the graph resumes once each is answered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Command

from agent_runtime.errors import ResumeError
from agent_runtime.interrupts import (
    DECISION_TYPES,
    DecisionType,
    Interrupt,
    InterruptResponse,
)
from agent_runtime.messages import JSONValue, ToolCall
from agent_runtime.results import AgentResult
from agent_runtime.results import ToolResult as CallResult
from agent_runtime.resume import ContinueRun, RunInput, parse_input
from agent_runtime.run_events import RunEvent, RunFinished, RunStarted, ToolCallFinished
from agent_runtime.runnable import Runnable, ThreadStatus
from agent_runtime.session import InMemorySessionStore, SessionStore, StoredSession
from agent_runtime.state import RunStatus

from .adapted import (
    ASKED_AT,
    RESULT,
    LeasedInvocation,
    asked_at,
    cancelled,
    dated,
    last_result,
    owned,
    run_id_of,
)

APPROVAL_SHAPE = "tool_approval"
_PREFIX = "lg_"
_ACTION = "_action_"
"""Separates a batch's interrupt id from the position of one of its actions."""


def _default_output(values: Mapping[str, Any]) -> str:
    return str(values.get("result") or values.get("output") or "")


class LangGraphAgent(Runnable):
    """A compiled LangGraph graph (with a checkpointer) that Signoff can run and resume.

    ``input`` turns the prompt of ``/signoff run`` (or the runs API) into the graph's
    input; ``output`` turns its final state into the run's last message; ``close`` is
    awaited once when the bot stops.
    """

    def __init__(
        self,
        graph: Any,
        *,
        input: Callable[[str], Any],
        output: Callable[[Mapping[str, Any]], str] = _default_output,
        session_store: SessionStore | None = None,
        close: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.graph = graph
        self.make_input = input
        self.make_output = output
        self.session_store = session_store or InMemorySessionStore()
        self._close = close

    async def aclose(self) -> None:
        """Run ``close`` (e.g. close the checkpointer's connection: aiosqlite's thread
        keeps a process from exiting until its connection is closed)."""
        if self._close is not None:
            await self._close()

    def invocation(self, thread_id: str) -> _GraphInvocation:
        return _GraphInvocation(self, thread_id)

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        state = await self.graph.aget_state(_config(thread_id))
        if not state.values and not state.next:
            return None
        marker = await self.session_store.load(thread_id)
        snapshot = marker.snapshot if marker else {}
        interrupts = dated(_interrupts(state), snapshot)
        status: RunStatus = "interrupted" if interrupts else ("running" if state.next else "idle")
        return ThreadStatus(
            thread_id=thread_id,
            run_id=run_id_of(thread_id),
            status=status,
            version=0,
            interrupts=interrupts,
            last_result=last_result(thread_id, snapshot) if status == "idle" else None,
        )

    async def cancel(self, thread_id: str, reason: str) -> AgentResult | None:
        """End the graph's interrupted run: its state moves to the graph's end (a LangChain
        agent's unanswered tool calls answered with ``reason``), so the interrupted nodes
        never resume and the thread takes a new prompt. None when it waits on nothing; a
        resume running meanwhile holds the lease and wins."""
        config = _config(thread_id)
        async with self.session_store.lease(thread_id):
            state = await self.graph.aget_state(config)
            if not _interrupts(state):
                return None
            answers = _answered_calls(state.values, reason)
            if answers is not None:  # as the interrupted node's output, which ends here
                node = next(t.name for t in state.tasks if t.interrupts)
                config = await self.graph.aupdate_state(config, answers, as_node=node)
            await self.graph.aupdate_state(config, None, as_node=END)
        return cancelled(thread_id, reason)


@dataclass
class _GraphInvocation(LeasedInvocation):
    agent: LangGraphAgent
    thread_id: str

    async def _run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        config = _config(self.thread_id)
        run_id = run_id_of(self.thread_id)
        marker = owned(
            await self.agent.session_store.load(self.thread_id), "langgraph", self.thread_id
        )
        parsed = parse_input(input)
        start = await self.agent.graph.aget_state(config)
        if isinstance(parsed, str):
            if _interrupts(start):
                raise ResumeError(f"thread {self.thread_id} waits for its open interrupts")
            graph_input: Any = self.agent.make_input(parsed)
        elif isinstance(parsed, ContinueRun):
            graph_input = None  # continue from the last checkpoint
        else:
            pending = _interrupts(start)
            graph_input = Command(
                resume=_resume_values(_unapplied(parsed, pending, marker), pending)
            )
        yield RunStarted(thread_id=self.thread_id, run_id=run_id)
        await self.agent.graph.ainvoke(graph_input, config)
        state = await self.agent.graph.aget_state(config)
        checkpoint = (state.config or {}).get("configurable", {}).get("checkpoint_id")
        # Asked now unless the marker knew them: a node's second interrupt() writes no
        # checkpoint of its own, so the checkpoint's time is when the first was asked.
        now = datetime.now(UTC)
        asked = [dataclasses.replace(i, created_at=now) for i in _interrupts(state)]
        snapshot: dict[str, JSONValue] = {
            "langgraph": {"run_id": run_id, "checkpoint_id": checkpoint},
            ASKED_AT: asked_at(asked, marker),
        }
        if not asked:
            snapshot[RESULT] = self.agent.make_output(state.values or {})
        await self.agent.session_store.save(
            self.thread_id, snapshot, expected_version=marker.version if marker else 0
        )
        for finished in _tools_ran(start.values, state.values, self.thread_id):
            yield finished
        interrupts = dated(asked, snapshot)
        if interrupts:
            result = AgentResult(
                stop_reason="interrupt",
                message="waiting for a human decision",
                thread_id=self.thread_id,
                run_id=run_id,
                interrupts=interrupts,
            )
        else:
            result = AgentResult(
                stop_reason="end_turn",
                message=str(snapshot[RESULT]),
                thread_id=self.thread_id,
                run_id=run_id,
            )
        yield RunFinished(result=result)


def _answered_calls(values: Any, reason: str) -> dict[str, Any] | None:
    """A LangChain agent's state update answering each tool call of its messages that has
    no response yet with ``reason`` (model APIs refuse a history with an unanswered
    call), or None for a graph of another shape or with nothing to answer."""
    messages = values.get("messages") if isinstance(values, Mapping) else None
    if not isinstance(messages, list):
        return None
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    answers = [
        ToolMessage(content=reason, tool_call_id=call["id"], name=call["name"], status="error")
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]
    return {"messages": answers} if answers else None


def _tools_ran(before: Any, after: Any, thread_id: str) -> list[ToolCallFinished]:
    """What each tool a LangChain agent ran in this invocation did: its tool messages
    added since ``before``, but those standing for a person's denial or reply (the
    middleware's answers: the tool did not run). A message is known by its own id: a
    model numbering its calls per turn gives a later call an earlier one's call id."""
    if not isinstance(after, Mapping) or not isinstance(after.get("messages"), list):
        return []
    earlier = before.get("messages") if isinstance(before, Mapping) else None
    known = {_message_key(m) for m in earlier or () if isinstance(m, ToolMessage)}
    messages = after["messages"]
    calls: dict[Any, Mapping[str, Any]] = {
        c["id"]: c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls
    }
    return [
        ToolCallFinished(
            tool_call=ToolCall(
                id=m.tool_call_id,
                name=str(m.name or calls.get(m.tool_call_id, {}).get("name") or "tool"),
                args=dict(calls.get(m.tool_call_id, {}).get("args") or {}),
            ),
            result=CallResult(content=m.content, is_error=m.status == "error"),
            thread_id=thread_id,
        )
        for m in messages
        if isinstance(m, ToolMessage)
        and _message_key(m) not in known
        and m.additional_kwargs.get("lc_source") != "hitl_interrupt_decision"
    ]


def _message_key(message: ToolMessage) -> str:
    """A tool message's own id (the graph's message reducer gives each one), else its
    call's id."""
    return message.id or message.tool_call_id


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _interrupts(state: Any) -> list[Interrupt]:
    """The graph's pending interrupts, as Signoff interrupts (a batch: one per action),
    dated by the checkpoint they are pending on unless a marker dates them more closely."""
    found: list[Interrupt] = []
    for task in state.tasks or ():
        for pending in task.interrupts or ():
            value = pending.value
            if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):
                found += _batch(pending.id, value, _last_calls(state.values))
            else:
                schema = getattr(pending, "response_schema", None)
                found.append(_interrupt(pending.id, value, schema))
    if state.created_at is None:
        return found
    checkpoint_at = datetime.fromisoformat(state.created_at)
    return [dataclasses.replace(i, created_at=checkpoint_at) for i in found]


def _last_calls(values: Any) -> list[Mapping[str, Any]]:
    """The tool calls of a LangChain agent's last model turn (what a batch asks about)."""
    messages = values.get("messages") if isinstance(values, Mapping) else None
    turns = [m for m in messages or () if isinstance(m, AIMessage)]
    return list(turns[-1].tool_calls) if turns else []


def _action_call_ids(
    actions: Sequence[Any], calls: Sequence[Mapping[str, Any]]
) -> list[str | None]:
    """The model's call id of each action of a batch: the middleware lists the turn's gated
    calls in order, so each action is the next call of its name and arguments. None where
    no call matches or two actions would share an id (a model giving no ids)."""
    remaining = iter(calls)
    found = [
        next(
            (
                str(c.get("id") or "")
                for c in remaining
                if c.get("name") == action.get("name") and c.get("args") == action.get("args")
            ),
            "",
        )
        for action in actions
    ]
    return [i if i and found.count(i) == 1 else None for i in found]


def _batch(
    graph_id: str, value: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]
) -> list[Interrupt]:
    """A ``HumanInTheLoopMiddleware`` request: one approval per action, in order, each
    under its model call's id (what its tool's result is told under)."""
    configs = value.get("review_configs") or []
    call_ids = _action_call_ids(value["action_requests"], calls)
    found = []
    for n, action in enumerate(value["action_requests"]):
        config = configs[n] if n < len(configs) and isinstance(configs[n], Mapping) else {}
        allowed = tuple(d for d in DECISION_TYPES if d in (config.get("allowed_decisions") or ()))
        call = ToolCall(
            id=call_ids[n] or f"{graph_id}_{n}",
            name=str(action.get("name")),
            args=dict(action.get("args") or {}),
        )
        found.append(
            Interrupt(
                id=f"{_PREFIX}{graph_id}{_ACTION}{n}",
                name="approval",
                reason=dict(action),
                tool_call=call,
                allowed_decisions=allowed or DECISION_TYPES,
                description=str(action.get("description") or f"{call.name} needs approval"),
            )
        )
    return found


def _interrupt(graph_id: str, value: Any, schema: Any) -> Interrupt:
    iid = _PREFIX + graph_id
    if isinstance(value, Mapping) and value.get("type") == APPROVAL_SHAPE:
        call = ToolCall(
            id=str(value.get("tool_call_id") or graph_id),
            name=str(value.get("name") or "tool"),
            args=dict(value.get("args") or {}),
        )
        return Interrupt(
            id=iid,
            name="approval",
            reason=dict(value),
            tool_call=call,
            allowed_decisions=_allowed(schema or value.get("response_schema")),
            description=str(value.get("description") or f"{call.name} needs approval"),
        )
    return Interrupt(id=iid, name="question", reason=value, question=True)


def _allowed(schema: Any) -> tuple[DecisionType, ...]:
    """The decisions a ``response_schema`` allows: a ``type`` enum or const, or, as
    pydantic writes a tagged union, its discriminator's mapping or each variant's tag."""
    names = _decision_tags(schema)
    allowed = tuple(d for d in DECISION_TYPES if d in names)
    return allowed or DECISION_TYPES


def _decision_tags(schema: Any) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    mapping = (schema.get("discriminator") or {}).get("mapping")
    if isinstance(mapping, Mapping):
        return {str(k) for k in mapping}
    tag = (schema.get("properties") or {}).get("type") or {}
    if isinstance(tag.get("enum"), list):
        return {str(v) for v in tag["enum"]}
    if "const" in tag:
        return {str(tag["const"])}
    variants = schema.get("oneOf") or schema.get("anyOf") or []
    defs = schema.get("$defs") or {}
    found: set[str] = set()
    for variant in variants if isinstance(variants, list) else []:
        ref = str(variant.get("$ref", "")) if isinstance(variant, Mapping) else ""
        found |= _decision_tags(defs.get(ref.rsplit("/", 1)[-1]) if ref else variant)
    return found


def _unapplied(
    responses: Sequence[InterruptResponse],
    pending: Sequence[Interrupt],
    marker: StoredSession | None,
) -> Sequence[InterruptResponse]:
    """``responses`` less those an earlier try of this resume applied: asked in the round
    it answers (the marker has them) and no longer open. The graph keeps each task that
    finished (a per-call approval's call, say) when another fails, and the retry goes on
    with the rest. Left as they are when none is open: the refusal says so."""
    open_ids = {i.id for i in pending}
    asked = marker.snapshot.get(ASKED_AT) if marker else None
    round_ids = set(asked) if isinstance(asked, dict) else set()
    left = [r for r in responses if r.interrupt_id in open_ids or r.interrupt_id not in round_ids]
    return left or responses


def _resume_values(
    responses: Sequence[InterruptResponse], pending: Sequence[Interrupt]
) -> dict[str, JSONValue]:
    """``Command(resume=...)``'s map: each answered interrupt's value in LangChain's shape."""
    by_id = {i.id: i for i in pending}
    values: dict[str, JSONValue] = {}
    batches: dict[str, dict[int, JSONValue]] = {}
    for response in responses:
        interrupt = by_id.get(response.interrupt_id)
        if interrupt is None:
            raise ResumeError(
                f"unknown interrupt id {response.interrupt_id!r}; the open ones are {sorted(by_id)}"
            )
        graph_id, _, position = response.interrupt_id.removeprefix(_PREFIX).partition(_ACTION)
        if position:
            batches.setdefault(graph_id, {})[int(position)] = _value(response, interrupt)
        else:
            values[graph_id] = _value(response, interrupt)
    for graph_id, decisions in batches.items():
        size = sum(1 for i in pending if i.id.startswith(f"{_PREFIX}{graph_id}{_ACTION}"))
        if len(decisions) != size:
            raise ResumeError(f"answer every action of interrupt {graph_id} together")
        values[graph_id] = {"decisions": [decisions[n] for n in range(size)]}
    return values


def _value(response: InterruptResponse, interrupt: Interrupt) -> JSONValue:
    decision = response.decision
    if decision is None:
        return response.response
    if not interrupt.is_approval:  # a question declined or left to expire
        return {"type": "reject", "message": decision.message or ""}
    if decision.type == "edit":
        call = interrupt.tool_call
        name = call.name if call else interrupt.name
        return {"type": "edit", "edited_action": {"name": name, "args": decision.args or {}}}
    if decision.type in ("reject", "respond"):
        return {"type": decision.type, "message": decision.message or ""}
    return {"type": "approve"}
