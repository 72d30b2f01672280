"""Run Genkit generation with tools as a Signoff agent: a tool that raises Genkit's
``Interrupt`` becomes a Slack card, and the card's decision resumes the generation.

    from signoff.genkit import GenkitAgent
    AgentSpec(name="cleanup", policy=Policy(channel="C0123OPS", users=("U0ALICE",)),
              build=lambda sessions: GenkitAgent(
                  ai, model="googleai/gemini-flash-latest", tools=["delete_files"],
                  session_store=sessions))

A name in ``tools`` that no tool registered on ``ai`` has fails the agent's construction
(``check_tools``), so a misspelt one stops the start-up build, not the first run. A card
names the tool Genkit ran (a plugin's ``ops/lookup``), whichever of its names the model used.

Approve restarts the tool (``restart_tool``; ``ctx.is_resumed()`` is then true and
``ctx.resumed_metadata`` is ``{"approved": True}``); Edit restarts it with the edited
input (``replace_input``); Deny and Reply answer in its place (``respond_to_interrupt``)
with the reason, or the approver's text, as its output: the tool does not run. The
conversation is kept in Signoff's session store, so any worker process resumes it, and
each invocation holds the thread's lease. A resume saves each restarted tool's result as
it comes: retried after a failure (the model call after the tool errs), it gets the result
back instead of running the tool again. A restarted tool that raises ends the generation
(Genkit's way), and its start is saved before it runs: the retry does not run it again,
and answers it with why. An edit whose input Genkit refuses for the tool is refused on
every try, so the resume is not retried (``UnresumableError`` says what does not fit). A
failed model call is an error, not an answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from genkit import (
    FinishReason,
    Genkit,
    GenkitError,
    Message,
    Part,
    ToolRequest,
    ToolResponse,
)
from genkit.middleware import (
    BaseMiddleware,
    GenerateMiddlewareContext,
    MultipartToolResponse,
    ToolHookParams,
)

from agent_runtime.errors import ModelError, ResumeError, UnresumableError
from agent_runtime.interrupts import InterruptResponse
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
    named,
    not_run_again,
    owned,
    ran,
    run_id_of,
    signoff_ids,
    snapshot_status,
)
from .genkit_interrupts import (
    as_interrupt,
    interrupts_of,
    pending_of,
    refused_input,
    resume_parts,
    shown,
)
from .genkit_names import NameCalls, names_of, naming
from .genkit_tools import (
    called_names,
    check_input,
    check_tools,
    input_schema,
    listed_as_it_runs,
)


class _KeptResults(KeptResults):
    """The outputs of the tools one resume restarts, by request ref (or tool name). Only
    those: a retry asks the model for later turns' calls again, and some providers number
    calls per turn, so their refs repeat."""

    def __init__(
        self,
        store: SessionStore,
        thread_id: str,
        stored: StoredSession,
        responses: Sequence[InterruptResponse],
        restarts: list[Part],
    ) -> None:
        super().__init__(store, thread_id, stored, responses)
        self.restarted = {_key(p.tool_request) for p in restarts if p.tool_request}
        self.refused: str | None = None
        """Why Genkit refused a restarted tool's input (an edit that does not fit it)."""
        self.finished: dict[str, ToolCallFinished] = {}
        """What each restarted call did (now or in an earlier try), by its key."""

    def ran(
        self,
        request: ToolRequest,
        tool: str,
        response: MultipartToolResponse,
        *,
        failed: bool = False,
    ) -> None:
        """Note what the restarted ``request`` of ``tool`` did (``failed``: an error), for
        the run to tell."""
        output = response.output
        self.finished[_key(request)] = ToolCallFinished(
            tool_call=ToolCall(
                id=_key(request),
                name=tool,
                args=shown(request.input),
            ),
            result=CallResult(
                content=output if isinstance(output, str) else _json(output), is_error=failed
            ),
            thread_id=self.thread_id,
        )


_keeping: ContextVar[_KeptResults | None] = ContextVar("signoff_genkit_kept", default=None)
"""The resume whose tool results ``_KeepToolResults`` keeps: Genkit copies a middleware
for each generation, so what it shares with the adapter travels in the context."""


class _KeepToolResults(BaseMiddleware[Any]):
    """Saves each tool's result before the model is asked again, and answers a call whose
    result an earlier try of the same resume saved with that result, without running it."""

    async def wrap_tool(
        self,
        params: ToolHookParams,
        ctx: GenerateMiddlewareContext,
        next_fn: Callable[
            [ToolHookParams, GenerateMiddlewareContext], Awaitable[MultipartToolResponse]
        ],
    ) -> MultipartToolResponse:
        kept = _keeping.get()
        request = params.tool_request_part.tool_request
        key = _key(request) if request is not None else ""
        if kept is None or key not in kept.restarted:
            return await next_fn(params, ctx)
        kept.restarted.discard(key)  # each restart once: a later call may reuse its ref
        assert request is not None  # a restarted call is a tool request
        tool = params.tool.name  # its own name, whichever the model called it by
        if key in kept.kept:
            response = MultipartToolResponse.model_validate(kept.kept[key])
        elif key in kept.started:  # it raised, or its process died: it may have done part
            response = MultipartToolResponse(output=not_run_again(tool))
            kept.ran(request, tool, response, failed=True)
            return response
        else:
            await kept.start(key)
            try:
                response = await next_fn(params, ctx)
            except GenkitError as exc:
                kept.refused = kept.refused or refused_input(exc, tool)
                raise
            dumped = response.model_dump(mode="json", by_alias=True, exclude_none=True)
            await kept.keep(key, dumped)
        kept.ran(request, tool, response)
        return response


class GenkitAgent(Runnable):
    """Genkit ``generate`` with ``tools`` on ``model``, stopped by tool interrupts."""

    def __init__(
        self,
        ai: Genkit,
        *,
        model: str,
        tools: Sequence[str],
        session_store: SessionStore | None = None,
    ) -> None:
        check_tools(ai, tools)  # a misspelt name fails the agent's build, not its first run
        self.ai = ai
        self.model = model
        self.tools = list(tools)
        self.session_store = session_store or InMemorySessionStore()

    def keeps_run_trust(self) -> bool:
        """False: a gated tool raises its ``Interrupt`` at each call; a decision's
        ``remember`` is not kept for the generation's later calls."""
        return False

    def tool_names(self) -> frozenset[str] | None:
        """The names its cards may carry (``called_names``); None when a provider's
        selector with a ``*`` (``mcp:tool/*``) leaves its tools to each generation."""
        return called_names(self.tools)

    def some_tool_names(self) -> frozenset[str]:
        """The names its cards may carry under its tools other than wildcard selectors."""
        return called_names([n for n in self.tools if not n.endswith("*")]) or frozenset()

    def may_name(self, name: str) -> bool:
        """Whether a card may carry ``name``: one of ``some_tool_names``, or one a wildcard
        selector may list (``srv/...`` for ``mcp:tool/srv/*``)."""
        listed = listed_as_it_runs(self.tools)
        return name in self.some_tool_names() or any(name.startswith(p) for p in listed)

    def check_edit(self, call: ToolCall, args: dict[str, JSONValue]) -> None:
        """Refuse edited input that Genkit would refuse for the tool as it restarts it."""
        check_input(self.ai, call.name, args)

    def tool_schema(self, name: str) -> dict[str, JSONValue] | None:
        return input_schema(self.ai, name)

    def invocation(self, thread_id: str) -> _GenkitInvocation:
        return _GenkitInvocation(self, thread_id)

    async def thread_status(self, thread_id: str) -> ThreadStatus | None:
        return await snapshot_status(
            self.session_store,
            thread_id,
            "genkit",
            interrupts_of,
        )

    async def cancel(self, thread_id: str, reason: str) -> AgentResult | None:
        """End the interrupted turn: each of its calls is answered (the interrupted ones
        with ``reason``, so the history stays well formed for the model) and the thread
        takes a new prompt. None when it waits on nothing; a resume running meanwhile
        holds the lease and wins."""
        async with self.session_store.lease(thread_id):
            stored = await self.session_store.load(thread_id)
            if stored is None or not pending_of(stored):
                return None
            state = dict(stored.snapshot.get("genkit") or {})
            answers = _answered_turn(_messages(stored)[-1], reason)
            state["messages"] = [*(state.get("messages") or []), _dump(answers)]
            state["pending"] = []
            snapshot: dict[str, JSONValue] = {"genkit": state}
            await self.session_store.save(thread_id, snapshot, expected_version=stored.version)
        return cancelled(thread_id, reason)


@dataclass
class _GenkitInvocation(LeasedInvocation):
    agent: GenkitAgent
    thread_id: str

    async def _run(self, input: RunInput) -> AsyncIterator[RunEvent]:
        agent, run_id = self.agent, run_id_of(self.thread_id)
        stored = owned(await agent.session_store.load(self.thread_id), "genkit", self.thread_id)
        history = _messages(stored)
        parsed = parse_input(input)
        options: dict[str, Any] = {"model": agent.model, "tools": agent.tools}
        options["use"] = [NameCalls()]
        kept: _KeptResults | None = None
        answered: set[str] = set()
        if isinstance(parsed, str):
            if stored is not None and pending_of(stored):
                raise ResumeError(f"thread {self.thread_id} waits for its open interrupts")
            options |= {"prompt": parsed, "messages": history or None}
        elif isinstance(parsed, ContinueRun):
            raise ResumeError("a Genkit generation is not continued from a checkpoint")
        else:
            if stored is None:
                raise ResumeError(
                    f"thread {self.thread_id} has no open interrupts; start a new run with a prompt"
                )
            check_retry(stored, parsed, named(interrupts_of(stored), stored.snapshot))
            restarts, responses = resume_parts(parsed, stored)
            answered = {i.id for i in interrupts_of(stored)}
            options |= {"messages": history, "resume_restart": restarts or None}
            options |= {"resume_respond": responses or None}
            options["use"].append(_KeepToolResults())
            kept = _KeptResults(agent.session_store, self.thread_id, stored, parsed, restarts)
        yield RunStarted(thread_id=self.thread_id, run_id=run_id)
        keeping = _keeping.set(kept)
        names = names_of(stored)  # a call interrupted again on its restart keeps its name
        try:
            with naming(names):
                answer = await agent.ai.generate(**options)
        except Exception as exc:
            if kept is not None and kept.refused is not None:  # refused on every try alike
                raise UnresumableError(kept.refused) from exc
            raise
        finally:
            _keeping.reset(keeping)
        if kept is not None and kept.refused is not None:
            raise UnresumableError(kept.refused)
        if answer.finish_reason == FinishReason.FAILED:
            raise ModelError(f"the Genkit generation failed: {answer.finish_message}")
        messages = [_dump(m) for m in answer.messages]
        refusal = _twins_refusal(answer.interrupts)
        if refusal is not None:  # ended here: each of the turn's calls answered with why
            messages.append(_dump(_answered_turn(answer.messages[-1], refusal)))
        pending = [_dump(p) for p in answer.interrupts] if refusal is None else []
        raised = [as_interrupt(p, names) for p in pending]
        called = {str((p.get("toolRequest") or {}).get("name")) for p in pending}
        kept_names: dict[str, JSONValue] = {n: names[n] for n in sorted(called & set(names))}
        snapshot: dict[str, JSONValue] = {
            "genkit": {"messages": messages, "pending": pending, "names": kept_names},
            IDS: signoff_ids(raised, stored, answered),
        }
        asked = named(raised, snapshot)
        snapshot[ASKED_AT] = asked_at(asked, stored)
        if not asked and refusal is None:
            snapshot[RESULT] = answer.text
        finished = list(kept.finished.values()) if kept else []
        snapshot[RAN] = ran(finished)
        await agent.session_store.save(
            self.thread_id,
            snapshot,
            expected_version=kept.version if kept else stored.version if stored else 0,
        )
        for told in finished:
            yield told  # told once the run's state is saved: a retry tells it otherwise
        interrupts = dated(asked, snapshot)
        result = AgentResult(
            stop_reason="error" if refusal else "interrupt" if interrupts else "end_turn",
            message=refusal or ("waiting for a human decision" if interrupts else answer.text),
            thread_id=self.thread_id,
            run_id=run_id,
            interrupts=interrupts,
        )
        yield RunFinished(result=result)


def _twins_refusal(interrupts: Sequence[Part]) -> str | None:
    """Why the turn cannot be asked about, when two of its interrupted calls have one ref
    (or none, and one tool): each is carded under its ref (else its tool's name), and
    Genkit resumes a call by its tool's name and ref, so one decision would answer both
    (restarting one runs both, with its input)."""
    keys = [_key(p.tool_request) for p in interrupts if p.tool_request]
    twins = sorted(
        {
            p.tool_request.name
            for p in interrupts
            if p.tool_request and keys.count(_key(p.tool_request)) > 1
        }
    )
    if not twins:
        return None
    return (
        f"Refused: the model's turn asked for {', '.join(twins)} in calls that cannot be "
        "told apart (one tool called twice without a ref, or two calls with one ref). "
        "Each would be asked about under its ref, so one decision would answer them all. "
        "The calls waiting for approval did not run."
    )


def _answered_turn(turn: Message, reason: str) -> Message:
    """The tool message answering each call of ``turn``: the output a call that ran left
    pending, else ``reason`` (model APIs refuse a history with an unanswered call)."""
    answers = [
        Part(
            tool_response=ToolResponse(
                ref=part.tool_request.ref,
                name=part.tool_request.name,
                output=(part.metadata or {}).get("pendingOutput", reason),
            )
        )
        for part in turn.content
        if part.tool_request is not None
    ]
    return Message(role="tool", content=answers)


def _key(request: ToolRequest) -> str:
    """What a tool request's kept result is filed under: its ref, else its tool's name."""
    return request.ref or request.name


def _json(value: Any) -> JSONValue:
    """A tool's output as JSON (what is not JSON as its text)."""
    dumped: JSONValue = json.loads(json.dumps(value, default=str))
    return dumped


def _dump(model: Any) -> dict[str, JSONValue]:
    dumped: dict[str, JSONValue] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _messages(stored: StoredSession | None) -> list[Message]:
    state = (stored.snapshot.get("genkit") or {}) if stored else {}
    assert isinstance(state, dict)
    return [Message.model_validate(m) for m in state.get("messages") or ()]
