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

import pydantic
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Command

from agent_runtime.edit_checks import check_model
from agent_runtime.errors import ResumeError, UsageError
from agent_runtime.interrupts import Interrupt, InterruptResponse
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
    RAN,
    RESULT,
    LeasedInvocation,
    asked_at,
    cancelled,
    dated,
    last_result,
    owned,
    ran,
    run_id_of,
    tool_results,
)
from .langgraph_interrupts import (
    ACTION,
    PREFIX,
    check_edit,
    check_interrupt_on,
    langchain_tools,
    pending_interrupts,
    tool_node_tools,
    tool_schema,
)
from .langgraph_retry import check_applied, refused_answers, split_applied


def _default_output(values: Mapping[str, Any]) -> str:
    return str(values.get("result") or values.get("output") or "")


class LangGraphAgent(Runnable):
    """A compiled LangGraph graph (with a checkpointer) that Signoff can run and resume.

    ``input`` turns the prompt of ``/signoff run`` (or the runs API) into the graph's
    input; ``output`` turns its final state into the run's last message; ``close`` is
    awaited once when the bot stops. A LangChain agent whose human-in-the-loop
    ``interrupt_on`` names a tool it lacks is refused here (``check_interrupt_on``).
    ``input_models`` gives the approvals another graph raises (by the name each gives) a
    pydantic model of their arguments: their Edit form is built from it, and an edit
    that does not fit it is refused; a LangChain agent's tools have their own.
    """

    def __init__(
        self,
        graph: Any,
        *,
        input: Callable[[str], Any],
        output: Callable[[Mapping[str, Any]], str] = _default_output,
        session_store: SessionStore | None = None,
        close: Callable[[], Awaitable[object]] | None = None,
        input_models: Mapping[str, type[pydantic.BaseModel]] | None = None,
    ) -> None:
        check_interrupt_on(graph)
        self._tools = langchain_tools(graph)
        self._input_models = dict(input_models or {})
        for name, model in self._input_models.items():
            if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
                raise UsageError(f"input_models[{name!r}] must be a pydantic model class")
            if self._tools is not None and name in self._tools:
                raise UsageError(
                    f"input_models[{name!r}]: {name} is a tool of this LangChain agent, "
                    "whose edits are checked against its own schema"
                )
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

    def keeps_run_trust(self) -> bool:
        """False: the graph's nodes (LangChain's middleware too) interrupt at each call they
        gate; a decision's ``remember`` is not kept for the run's later calls."""
        return False

    def tool_names(self) -> frozenset[str] | None:
        """A LangChain agent's tools; None for another graph (its interrupts name what
        they like, known only as they are asked)."""
        return frozenset(self._tools) if self._tools is not None else None

    def some_tool_names(self) -> frozenset[str]:
        """The tools of its ``ToolNode``s and the approvals it has input models for: what a
        tool approval of the graph names, if its nodes name the calls they gate (nothing
        in the graph says they do)."""
        return tool_node_tools(self.graph) | frozenset(self._input_models)

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited arguments that do not fit the input model of the approval ``call``
        names, or the LangChain agent's tool it names."""
        model = self._input_models.get(call.name)
        if model is not None:
            check_model(call.name, pydantic.TypeAdapter(model), args)
        elif self._tools is not None:
            check_edit(self._tools, call, args)

    def tool_schema(self, name: str) -> dict[str, JSONValue] | None:
        """The input model's schema of approval ``name``, or a LangChain agent's tool's
        arguments' (another approval names what it likes: edited as JSON)."""
        model = self._input_models.get(name)
        if model is not None:
            return model.model_json_schema()
        return tool_schema(self._tools, name) if self._tools is not None else None

    def invocation(self, thread_id: str) -> _GraphInvocation:
        return _GraphInvocation(self, thread_id)

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        state = await self.graph.aget_state(_config(thread_id))
        if not state.values and not state.next:
            return None
        marker = await self.session_store.load(thread_id)
        snapshot = marker.snapshot if marker else {}
        interrupts = dated(pending_interrupts(state), snapshot)
        status: RunStatus = "interrupted" if interrupts else ("running" if state.next else "idle")
        return ThreadStatus(
            thread_id=thread_id,
            run_id=run_id_of(thread_id),
            status=status,
            version=0,
            interrupts=interrupts,
            last_result=last_result(thread_id, snapshot) if status == "idle" else None,
            tool_results=tool_results(snapshot),
        )

    async def cancel(self, thread_id: str, reason: str) -> AgentResult | None:
        """End the graph's interrupted run: its state moves to the graph's end (a LangChain
        agent's unanswered tool calls answered with ``reason``), so the interrupted nodes
        never resume and the thread takes a new prompt. None when it waits on nothing; a
        resume running meanwhile holds the lease and wins."""
        config = _config(thread_id)
        async with self.session_store.lease(thread_id):
            state = await self.graph.aget_state(config)
            if not pending_interrupts(state):
                return None
            marker = await self.session_store.load(thread_id)
            answers = _answered_calls(state.values, reason)
            if answers is not None:  # as the interrupted node's output, which ends here
                node = next(t.name for t in state.tasks if t.interrupts)
                config = await self.graph.aupdate_state(config, answers, as_node=node)
            ended = await self.graph.aupdate_state(config, None, as_node=END)
            # Its round is over: a late answer to it is refused, not taken for a retry.
            checkpoint = ended["configurable"]["checkpoint_id"]
            graph = {"run_id": run_id_of(thread_id), "checkpoint_id": checkpoint}
            await self.session_store.save(
                thread_id,
                {"langgraph": graph, ASKED_AT: {}},
                expected_version=marker.version if marker else 0,
            )
        return cancelled(thread_id, reason)


@dataclass
class _GraphInvocation(LeasedInvocation):
    agent: LangGraphAgent
    thread_id: str

    async def _asked(self, marker: StoredSession | None) -> Any | None:
        """The graph's state at the checkpoint the marker's round was asked on (None when
        the checkpointer no longer has it)."""
        graph = marker.snapshot.get("langgraph") if marker else None
        checkpoint = graph.get("checkpoint_id") if isinstance(graph, dict) else None
        if not isinstance(checkpoint, str):
            return None
        config = _config(self.thread_id)
        config["configurable"]["checkpoint_id"] = checkpoint
        state = await self.agent.graph.aget_state(config)
        return state if state.values else None

    async def _run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        config = _config(self.thread_id)
        run_id = run_id_of(self.thread_id)
        marker = owned(
            await self.agent.session_store.load(self.thread_id), "langgraph", self.thread_id
        )
        parsed = parse_input(input)
        start = await self.agent.graph.aget_state(config)
        # What ran since the round was asked is told: an earlier try that ran it failed.
        since = start if isinstance(parsed, str) else await self._asked(marker) or start
        if isinstance(parsed, str):
            if pending_interrupts(start):
                raise ResumeError(f"thread {self.thread_id} waits for its open interrupts")
            graph_input: Any = self.agent.make_input(parsed)
        elif isinstance(parsed, ContinueRun):
            graph_input = None  # continue from the last checkpoint
        else:
            pending = pending_interrupts(start)
            fresh, applied = split_applied(parsed, pending, marker)
            check_applied(applied, pending_interrupts(since), since.values, start.values)
            # Only answers an earlier try applied: the graph goes on from where it failed.
            resume = fresh or not applied
            graph_input = Command(resume=_resume_values(fresh, pending)) if resume else None
        yield RunStarted(thread_id=self.thread_id, run_id=run_id)
        try:
            await self.agent.graph.ainvoke(graph_input, config)
        except Exception as exc:
            refused = refused_answers(exc, pending_interrupts(start))
            if refused is not None:
                raise refused from exc
            raise
        state = await self.agent.graph.aget_state(config)
        checkpoint = (state.config or {}).get("configurable", {}).get("checkpoint_id")
        # Asked now unless the marker knew them: a node's second interrupt() writes no
        # checkpoint of its own, so the checkpoint's time is when the first was asked.
        now = datetime.now(UTC)
        asked = [dataclasses.replace(i, created_at=now) for i in pending_interrupts(state)]
        snapshot: dict[str, JSONValue] = {
            "langgraph": {"run_id": run_id, "checkpoint_id": checkpoint},
            ASKED_AT: asked_at(asked, marker),
        }
        if not asked:
            snapshot[RESULT] = self.agent.make_output(state.values or {})
        finished = _tools_ran(since.values, state.values, self.thread_id)
        snapshot[RAN] = ran(finished)
        await self.agent.session_store.save(
            self.thread_id, snapshot, expected_version=marker.version if marker else 0
        )
        for told in finished:
            yield told  # told once the marker is saved: a retry tells it otherwise
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
        graph_id, _, position = response.interrupt_id.removeprefix(PREFIX).partition(ACTION)
        if position:
            batches.setdefault(graph_id, {})[int(position)] = _value(response, interrupt)
        else:
            values[graph_id] = _value(response, interrupt)
    for graph_id, decisions in batches.items():
        size = sum(1 for i in pending if i.id.startswith(f"{PREFIX}{graph_id}{ACTION}"))
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
